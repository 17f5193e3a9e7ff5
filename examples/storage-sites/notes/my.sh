#!/bin/sh
# Runs the notes site on a MariaDB server of the instance's own (notes-mysql.yaml).
#
# The server's data is part of the instance's data: $DATA_DIR/mysql. A start without it (a new
# instance, a reset) copies it from a template made once per seed-mysql.sql, under a lock, in
# /tmp/webserv-mysql; a start with it (a restore, a fork: the backend copied a snapshot of the data
# directory, taken with every process of the site stopped) goes on from it. The server listens on no
# TCP port, only on the Unix socket /tmp/webserv-mysql/$PORT.sock (PORT is the instance's HTTP port,
# unique on the machine), which the app and the server's state reader reach. It reads no option
# file (--no-defaults): nothing of a system-wide MariaDB is used or changed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ -x /usr/sbin/mariadbd ] && command -v mysql >/dev/null 2>&1 ||
  { echo "my.sh: no MariaDB server or client (scripts/setup.sh installs Debian's mariadb-server-core and mariadb-client-core)" >&2; exit 1; }
root=/tmp/webserv-mysql
mkdir -p "$root"
sock="$root/$PORT.sock"
user=""
if [ "$(id -u)" = 0 ]; then user="--user=root"; fi
# Small files and buffers: every start, reset and snapshot copies the data directory.
opts="--innodb-log-file-size=4M --innodb-data-file-path=ibdata1:4M:autoextend --innodb-buffer-pool-size=16M --innodb-flush-log-at-trx-commit=2 --performance-schema=OFF --skip-name-resolve"

serve() { # datadir socket
  # shellcheck disable=SC2086
  # 9>&-: a server started while the template is built must not inherit its lock.
  /usr/sbin/mariadbd --no-defaults $user --datadir="$1" --socket="$2" --pid-file="$1/mariadbd.pid" --skip-networking $opts 9>&- &
  srv=$!
  i=0
  until mysql --no-defaults -S "$2" -u root -e "SELECT 1" >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 600 ] || { echo "my.sh: MariaDB did not start" >&2; exit 1; }
    kill -0 "$srv" 2>/dev/null || { echo "my.sh: MariaDB exited" >&2; exit 1; }
    sleep 0.05
  done
}

# The template: the system tables, the database and its seed.
tpl="$root/template-$(cat "$here/seed-mysql.sql" | cksum | cut -d' ' -f1)"
(
  flock 9
  if [ ! -d "$tpl" ]; then
    tmp=$(mktemp -d "$root/tmp-XXXXXX")
    # A build that fails stops its server and leaves nothing behind.
    srv=""
    trap '[ -z "$srv" ] || { kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null; }; rm -rf "$tmp"' EXIT
    # shellcheck disable=SC2086
    mariadb-install-db --no-defaults $user --datadir="$tmp/db" --auth-root-authentication-method=normal --skip-test-db $opts >"$tmp/install.log" 2>&1 ||
      { cat "$tmp/install.log" >&2; exit 1; }
    serve "$tmp/db" "$tmp/s.sock"
    mysql --no-defaults -S "$tmp/s.sock" -u root -e "CREATE DATABASE notes CHARACTER SET utf8mb4"
    mysql --no-defaults -S "$tmp/s.sock" -u root notes <"$here/seed-mysql.sql"
    kill "$srv"
    wait "$srv" || true
    mv "$tmp" "$tpl"
    trap - EXIT
  fi
) 9>"$root/template.lock"

db="${DATA_DIR:-$PWD}/mysql"
if [ ! -d "$db/mysql" ]; then
  rm -rf "$db"
  cp -a "$tpl/db" "$db.tmp"
  mv "$db.tmp" "$db"
fi
rm -f "$sock" "$db/mariadbd.pid"
srv=""
app=""
stop() {
  [ -z "$app" ] || kill "$app" 2>/dev/null || true
  [ -z "$srv" ] || { kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true; }
  rm -f "$sock"
}
trap 'stop; exit 0' TERM INT
trap stop EXIT
serve "$db" "$sock"
MYSQL_SOCKET=$sock MYSQL_DATABASE=notes python3 "$here/app.py" --store mysql &
app=$!
wait "$app"
