#!/bin/sh
# Runs the notes site on a PostgreSQL server of the instance's own (notes-pg.yaml).
#
# The cluster is part of the instance's data: $DATA_DIR/pg (the local backend's copy of the site's
# data directory; on Incus the image's $DATA_DIR). A start without one (a new instance, a reset)
# copies it from a template made once per seed.sql, under a lock, in ${TMPDIR:-/tmp}/webserv-pg; a
# start with one (a restore, a fork: the backend copied a snapshot of the data directory, taken
# with every process of the site stopped) goes on from it, so a snapshot's rows are what a restore
# shows. The server listens on no TCP port: only on the abstract Unix socket @notes-pg-$PORT (PORT
# is the instance's HTTP port, unique on the machine), which the app and the server's state reader
# (psql -h @notes-pg-{port}) reach. PostgreSQL refuses to run as root: as root the server runs as
# the postgres user (Debian's package makes it), given the right to pass through directories it
# may not enter (CAP_DAC_READ_SEARCH) only when the data directory lies under one (a test's
# private temporary directory).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$bin/postgres" ] || { echo "pg.sh: no PostgreSQL server (scripts/setup.sh installs Debian's postgresql)" >&2; exit 1; }
as=""
if [ "$(id -u)" = 0 ]; then as="setpriv --reuid=postgres --regid=postgres --clear-groups"; fi
root=${TMPDIR:-/tmp}/webserv-pg
mkdir -p "$root"
chmod 755 "$root"
sock="@notes-pg-$PORT"

# Clusters of an earlier pg.sh, kept outside the data directory, whose site is gone.
for d in "$root"/inst-*; do
  [ -f "$d/site.pid" ] || continue
  kill -0 "$(cat "$d/site.pid")" 2>/dev/null || rm -rf "$d"
done

# The template: initdb, the database and its seed.
tpl="$root/template-$(cat "$here/seed.sql" | cksum | cut -d' ' -f1)"
(
  flock 9
  if [ ! -d "$tpl" ]; then
    tmp=$(mktemp -d "$root/tmp-XXXXXX")
    # A build that fails stops its server and leaves nothing behind: a server left running
    # would keep the next start waiting for a template that never comes.
    trap '$as "$bin/pg_ctl" -D "$tmp/db" -m immediate -w -s stop >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
    [ -z "$as" ] || chown postgres: "$tmp"
    $as "$bin/initdb" -D "$tmp/db" -U postgres --auth=trust --no-sync -E UTF8 --locale=C >/dev/null
    # 9>&-: the server must not inherit the template lock (it would hold it while it runs).
    $as "$bin/pg_ctl" -D "$tmp/db" -o "-c listen_addresses= -c unix_socket_directories=@$(basename "$tmp") -F" -w -s start >/dev/null 9>&-
    $as "$bin/psql" -X -q -h "@$(basename "$tmp")" -U postgres -c "CREATE DATABASE notes" >/dev/null
    # The seed is read by this shell, not by psql as postgres: the checkout may lie under a
    # directory only root may enter (a private temporary directory).
    $as "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "@$(basename "$tmp")" -U postgres -d notes <"$here/seed.sql" >/dev/null
    $as "$bin/pg_ctl" -D "$tmp/db" -m fast -w -s stop
    mv "$tmp" "$tpl"
    trap - EXIT
  fi
) 9>"$root/template.lock"

data=${DATA_DIR:-$PWD}
db="$data/pg"
if [ ! -f "$db/PG_VERSION" ]; then
  rm -rf "$db"
  cp -a "$tpl/db" "$db.tmp"
  mv "$db.tmp" "$db"
fi
# The cluster is this instance's own copy: a lock file copied with it names the postmaster of the
# instance it was copied from (still running, for a fork), not one of this cluster.
rm -f "$db/postmaster.pid"
if [ -n "$as" ]; then
  chown -R postgres: "$db"
  if ! $as test -x "$data"; then
    as="$as --inh-caps=+dac_read_search --ambient-caps=+dac_read_search"
  fi
fi
pg=""
app=""
stop() {
  [ -z "$app" ] || kill "$app" 2>/dev/null || true
  [ -z "$pg" ] || { kill -QUIT "$pg" 2>/dev/null || true; wait "$pg" 2>/dev/null || true; }
}
trap 'stop; exit 0' TERM INT
trap stop EXIT
$as "$bin/postgres" -D "$db" -c listen_addresses= -c "unix_socket_directories=$sock" -F &
pg=$!
i=0
until "$bin/pg_isready" -q -h "$sock" -d notes -U postgres; do
  i=$((i + 1))
  [ $i -lt 600 ] || { echo "pg.sh: PostgreSQL did not start" >&2; exit 1; }
  kill -0 "$pg" 2>/dev/null || { echo "pg.sh: PostgreSQL exited" >&2; exit 1; }
  sleep 0.05
done
PGHOST=$sock PGUSER=postgres PGDATABASE=notes python3 "$here/app.py" --store postgres &
app=$!
wait "$app"
