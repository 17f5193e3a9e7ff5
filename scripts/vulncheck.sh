#!/usr/bin/env bash
# Checks the module and its Go toolchain against the Go vulnerability
# database (`make vulncheck`; `make lint` runs it too). Fails when the code
# calls a vulnerable function that a newer release fixes, and names the
# upgrade; called vulnerabilities that no release fixes are printed as
# warnings (internal/vulncheck says why). README.md ("Quick start")
# describes it.
#
# vuln.go.dev need not be reachable: the database is built here from
# golang.org/x/vulndb, a module the Go module proxy serves like any other,
# at the PINNED version below, so every run sees the same database. To take
# newer advisories, set VULNDB_VERSION to the proxy's latest
# (`go list -m golang.org/x/vulndb@latest`) and run `make vulncheck`.
# The database built from a version is kept under
# $WEBSERV_VULNDB_CACHE/<version> (by default beside Go's build cache), so
# only the first run for a version builds it.
set -euo pipefail

GO=${GO:-go}
VULNDB_VERSION=v0.0.0-20261105234957-e22db6528018

cd "$(dirname "$0")/.."
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto}

cache=${WEBSERV_VULNDB_CACHE:-$(dirname "$($GO env GOCACHE)")/webserv-vulndb}
db=$cache/$VULNDB_VERSION
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ ! -f "$db/index/db.json" ]; then
  echo "vulncheck: building the vulnerability database from golang.org/x/vulndb@$VULNDB_VERSION into $db (once per version)"
  # Outside this module, so that go.mod and go.sum stay as they are.
  mkdir "$tmp/work"
  (cd "$tmp/work" && $GO mod download golang.org/x/vulndb@"$VULNDB_VERSION")
  osv=$($GO env GOMODCACHE)/golang.org/x/vulndb@$VULNDB_VERSION/data/osv
  # internal/vulncheck writes the index (x/vulndb's cmd/indexdb would
  # too, but building it costs about 90 CPU-s on an empty build cache).
  $GO run ./internal/vulncheck index "$osv" "$tmp/db"
  # Renamed into place whole (same file system): a run that stops halfway
  # leaves no database that looks built. Another run may have placed one
  # meanwhile; that one is as good.
  if ! mv -T "$tmp/db" "$db" 2>/dev/null && [ ! -f "$db/index/db.json" ]; then
    echo "vulncheck: cannot put the database at $db: remove that directory and run again" >&2
    exit 1
  fi
fi

# govulncheck's version is tools/go.mod's (`make tools` builds it into
# bin/tools beside staticcheck; built here when missing or stale).
$GO build -C tools -o ../bin/tools/ golang.org/x/vuln/cmd/govulncheck
if ! bin/tools/govulncheck -db "file://$db" -format json ./... >"$tmp/govulncheck.json"; then
  echo "vulncheck: govulncheck could not scan the module (its error is above)" >&2
  exit 1
fi
$GO run ./internal/vulncheck "$tmp/govulncheck.json"
