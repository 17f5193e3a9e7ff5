#!/usr/bin/env bash
# Sets up Incus for WebServ's container backend on Debian 12, as root, and
# does nothing that is already done:
#   - incus and btrfs-progs from Debian's bookworm-backports;
#   - incusd started by hand when no init system runs it;
#   - images.auto_update_interval=0 (no image server is reachable);
#   - a btrfs storage pool "webserv" on a loop file (copy-on-write clones).
# Prints "incus: ready" on success. Pool size: $WEBSERV_POOL_SIZE (default 30GiB,
# a sparse file that grows with use).
set -euo pipefail
log() { printf 'incus-setup: %s\n' "$*"; }
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
POOL=${WEBSERV_POOL:-webserv}
SIZE=${WEBSERV_POOL_SIZE:-30GiB}

if [ "$(id -u)" -ne 0 ]; then
  echo "incus-setup: run as root (it installs packages and starts incusd)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive

if ! command -v incus >/dev/null 2>&1 || ! command -v mkfs.btrfs >/dev/null 2>&1; then
  ensure_backports || true
  apt-get update -qq
  log "installing incus and btrfs-progs"
  apt-get install -y -qq -t bookworm-backports incus btrfs-progs >/dev/null
fi

if ! incus admin waitready --timeout 1 >/dev/null 2>&1; then
  if command -v systemctl >/dev/null 2>&1 && systemctl is-system-running >/dev/null 2>&1; then
    systemctl start incus.socket incus.service
  else
    log "starting incusd (no init system runs it here)"
    mkdir -p /var/log/incus
    nohup setsid /usr/libexec/incus/incusd --group root >>/var/log/incus/incusd.log 2>&1 </dev/null &
  fi
  if ! incus admin waitready --timeout 60; then
    echo "incus-setup: incusd did not become ready; see /var/log/incus/incusd.log" >&2
    tail -n 20 /var/log/incus/incusd.log >&2 || true
    exit 1
  fi
fi

incus config set images.auto_update_interval=0
if ! incus storage show "$POOL" >/dev/null 2>&1; then
  log "creating btrfs storage pool $POOL ($SIZE loop file)"
  incus storage create "$POOL" btrfs size="$SIZE"
fi
log "pool $POOL: $(incus storage list -f csv | grep "^$POOL," | cut -d, -f2)"
echo "incus: ready"
