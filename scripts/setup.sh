#!/usr/bin/env bash
# Installs what WebServ needs on Debian 12, as root, and does nothing that is
# already done.
#
#   scripts/setup.sh          what the server and the demo need (`make run`):
#     - Debian's chromium (rod never downloads a browser) and fonts, so pages
#       lay out the same on every machine;
#     - python3 with venv, for the Python package;
#     - Go: the go.mod toolchain is fetched through the Go module proxy by any
#       Go >= 1.21; when no go is on the PATH, Debian's bookworm-backports
#       golang provides one.
#   scripts/setup.sh --all    the above and what the tests also use (`make test`):
#     - PostgreSQL, the database of the notes-pg test site (a server per
#       instance, started by examples/storage-sites/notes/pg.sh), and
#       MariaDB's server and client programs, notes-mysql's (my.sh);
#     - Incus with a btrfs pool, for the container backend (incus-setup.sh).
set -euo pipefail
all=""
case "${1:-}" in
  "") ;;
  --all) all=1 ;;
  *) echo "setup: unknown argument '$1' (use no argument for the server and demo, --all for the tests too)" >&2; exit 2 ;;
esac

log() { printf 'setup: %s\n' "$*"; }
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
  missing=""
  [ -x /usr/bin/chromium ] || missing="chromium"
  python3 -c 'import venv' >/dev/null 2>&1 || missing="$missing python3-venv"
  command -v go >/dev/null 2>&1 || missing="$missing go"
  if [ -n "$missing" ]; then
    echo "setup: missing $missing; run 'make setup' as root (it uses apt-get) or install them yourself" >&2
    exit 1
  fi
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then
    apt-get update -qq
    apt_updated=1
  fi
  log "apt-get install $*"
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

pkgs=()
[ -x /usr/bin/chromium ] || pkgs+=(chromium)
# The old headless build: what the server runs by default (half the CPU and
# memory per environment); the full browser stays for --show.
[ -x /usr/bin/chromium-headless-shell ] || pkgs+=(chromium-headless-shell)
dpkg -s fonts-liberation >/dev/null 2>&1 || pkgs+=(fonts-liberation)
command -v git >/dev/null 2>&1 || pkgs+=(git)
command -v make >/dev/null 2>&1 || pkgs+=(make)
dpkg -s ca-certificates >/dev/null 2>&1 || pkgs+=(ca-certificates)
# The Python package is tested in a virtualenv (Debian's python3 refuses
# system-wide pip installs).
command -v python3 >/dev/null 2>&1 || pkgs+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || pkgs+=(python3-venv)
if [ -n "$all" ]; then
  # The notes-pg test site's database (docs/sites.md, "State that is not one
  # SQLite file"): the server and psql. Its pg.sh runs each instance's server
  # as the postgres user the package makes (PostgreSQL refuses root).
  ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || pkgs+=(postgresql)
  # The notes-mysql test site's database: MariaDB's server and client
  # programs alone (the -core packages: no service, no system database, no
  # account); its my.sh runs a server per instance on a data directory of its
  # own.
  [ -x /usr/sbin/mariadbd ] || pkgs+=(mariadb-server-core)
  command -v mariadb >/dev/null 2>&1 || pkgs+=(mariadb-client-core)
fi
if [ ${#pkgs[@]} -gt 0 ]; then
  apt_install "${pkgs[@]}"
fi

if ! command -v go >/dev/null 2>&1; then
  if ensure_backports; then apt_updated=""; fi
  if [ -z "$apt_updated" ]; then apt-get update -qq; apt_updated=1; fi
  gopkg=$(apt-cache search --names-only '^golang-1\.[0-9]+-go$' | awk '{print $1}' | sort -V | tail -n 1)
  [ -n "$gopkg" ] || { echo "setup: no golang package found in Debian's archives" >&2; exit 1; }
  apt_install -t bookworm-backports "$gopkg"
  ver=${gopkg#golang-}; ver=${ver%-go}
  ln -sf "/usr/lib/go-$ver/bin/go" /usr/local/bin/go
  ln -sf "/usr/lib/go-$ver/bin/gofmt" /usr/local/bin/gofmt
  log "installed $gopkg; go fetches the toolchain go.mod asks for through the module proxy"
fi

# Chromium's account when the server runs as root: as root its sandbox
# cannot start, as this user it can (envcore.DefaultBrowserUser,
# docs/envcore.md "The browser's sandbox"). No login, no home, no groups.
if ! getent passwd webserv-browser >/dev/null; then
  log "useradd webserv-browser (the account Chromium runs as when the server is root)"
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin webserv-browser
fi
# The sandbox needs unprivileged user namespaces.
if [ "$(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null || echo 1)" = 0 ] ||
  [ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 1)" = 0 ]; then
  log "unprivileged user namespaces are off: Chromium's sandbox cannot start; enable them (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces) or serve with --no-sandbox"
fi

# The container backend: incus, incusd running, a btrfs pool. Without it
# the local backend still works (and the Incus tests fail, they do not skip).
if [ -n "$all" ] && ! bash "$(dirname "$0")/incus-setup.sh"; then
  log "Incus is not available here: sites on the incus backend will not start; the local backend and the open site still work"
fi

log "chromium: $(/usr/bin/chromium --version 2>/dev/null | head -n 1); headless shell: $(/usr/bin/chromium-headless-shell --version 2>/dev/null | head -n 1)"
log "go: $(go version)"
