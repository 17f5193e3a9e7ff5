#!/usr/bin/env bash
# The test suites of `make test`: Go (every package, real Chromium and
# incusd) and Python (pytest against a real `webserv serve`), in two phases
# (docs/testing.md):
#
#   1. shared: every test not named in scripts/exclusive-tests, the Go and
#      Python suites side by side, each given a share of the host sized from
#      its cores (below); the Python modules the list names (Ray's
#      clusters) run once the other Python tests are done, alone on the
#      Python side, while Go's shared tests finish;
#   2. exclusive: the Go tests the list names (those that make load of
#      their own or measure behaviour under a controlled load), one at a
#      time with nothing else running.
#
# Each part's output is printed whole when it ends, a table of the most
# expensive tests (scripts/testcost.py) at the end; the script fails when
# any part does.
#
#   scripts/test.sh GO BIN PYTEST
set -uo pipefail
go=${1:?go command}
bin=${2:?webserv binary}
pytest=${3:?pytest}
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Each test's wall and CPU seconds (scripts/testcost.py), for the table printed at the end; kept
# in bin/test-costs/ (go.jsonl, py-*.jsonl) for whoever wants more than the table.
export WEBSERV_TEST_COSTS=$PWD/bin/test-costs
rm -rf "$WEBSERV_TEST_COSTS"
mkdir -p "$WEBSERV_TEST_COSTS"
export WEBSERV_BIN=$bin

# The host's share of each suite in phase 1. A Go package's test binary
# holds one Chromium (and its fixture servers) and runs -parallel tests in
# it; a pytest worker holds one `webserv serve` with its Chromium and runs
# one test at a time. On C cores: Go runs ceil(C/2) packages at once with C
# tests each, pytest C+1 workers (a Python test's process tree is busy
# about half of its wall time: 714 CPU-s in 1,559 test-seconds,
# 2026-11-28). At C=2, one Go package with two tests and three workers:
# five tests drive browsers at once. Eight (two packages of two, four
# workers, and Ray beside them, 2026-11-27) put the load average past 50 on
# 2 cores: the tests' own limits ran out (a tab within 30 s, an observation
# within 20 s) and Ray's cluster could not start.
cores=$(nproc)
gop=$(((cores + 1) / 2))
workers=$((cores + 1))

# -- the exclusive list: Go's -run/-skip patterns and the Python modules --------------------------
declare -A gopkgs=()
gonames=()
pymods=()
while read -r kind where what; do
  case "$kind" in
    "" | "#"*) continue ;;
    go)
      if [ -z "$what" ] || ! ls "$where"/*_test.go >/dev/null 2>&1; then
        echo "scripts/exclusive-tests: 'go $where $what': no test package $where" >&2; exit 2
      fi
      # The name must be a test of that package and of no other: phase 1
      # skips it by name in every package.
      mine=$(grep -hoE "^func ($what)\(t \*testing\.T\)" "$where"/*_test.go | wc -l)
      others=$(git ls-files '*_test.go' | grep -v "^$where/[^/]*_test.go$" | xargs grep -lE "^func ($what)\(t \*testing\.T\)" 2>/dev/null)
      if [ "$mine" -eq 0 ] || [ -n "$others" ]; then
        echo "scripts/exclusive-tests: 'go $where $what' must name tests of $where alone (found $mine there; elsewhere: ${others:-none})" >&2; exit 2
      fi
      gopkgs[./$where]=1
      gonames+=("$what")
      ;;
    py)
      [ -f "python/tests/$where" ] || { echo "scripts/exclusive-tests: 'py $where': no such module in python/tests" >&2; exit 2; }
      pymods+=("$where")
      ;;
    *) echo "scripts/exclusive-tests: unknown kind '$kind' (go or py)" >&2; exit 2 ;;
  esac
done <"$here/exclusive-tests"
gore="^($(IFS='|'; echo "${gonames[*]}"))\$"
# conftest.py marks these modules' tests `exclusive`.
export WEBSERV_EXCLUSIVE_MODULES="${pymods[*]}"

start=$SECONDS
failed=()
# report NAME PID FILE: waits for a part, prints its output (FILE), remembers a failure.
report() {
  local name=$1 pid=$2 file=$3
  wait "$pid"
  local rc=$?
  echo "=== $name: exit $rc after $((SECONDS - start)) s"
  cat "$file"
  [ "$rc" -eq 0 ] || failed+=("$name")
}

gotest() {
  # -vet=off: `make lint` has just run the whole of `go vet ./...`, a
  # superset of the checks go test would repeat (about 28 CPU-s).
  "$go" test -json -vet=off -count=1 -timeout 30m "$@" 2>&1 |
    python3 "$here/testcost.py" go "$WEBSERV_TEST_COSTS/go.jsonl"
}

echo "=== phase 1: Go ($gop packages at once, $cores tests each) and Python ($workers workers) side by side; then Python's listed modules"
# Packages are named longest first: go test starts them in the order given,
# and `server` takes the longest, so the suite does not wait on it alone at
# the end.
WEBSERV_TEST_PHASE=shared gotest -p "$gop" -parallel "$cores" -skip "$gore" ./server ./envcore ./bench/suites ./incusmgr ./... >"$out/go1" &
gopid=$!
# The Python side, in a subshell: the shared tests on the workers, then the
# modules the list names (one pytest, -m exclusive: nothing else of
# Python's beside a Ray cluster), while Go's shared tests finish beside
# them (a tail of the Go packages' last tests that leaves a core idle:
# about 90 s, 2026-11-28). Each part's exit status goes to a file for
# report. pytest-xdist: a work unit is a test module, or a single test of
# the heavy modules conftest.py's SPLIT names; units go out heaviest first
# (conftest.py's COST), --no-loadscope-reorder keeping that order.
(
  "$pytest" -q -p no:cacheprovider -n "$workers" --dist loadscope --no-loadscope-reorder \
    -m "not exclusive" python/tests >"$out/py1" 2>&1
  echo $? >"$out/py1.rc"
  echo "(ended after $((SECONDS - start)) s)" >>"$out/py1"
  "$pytest" -q -p no:cacheprovider -m exclusive python/tests >"$out/py2" 2>&1
  echo $? >"$out/py2.rc"
  echo "(ended after $((SECONDS - start)) s)" >>"$out/py2"
) &
pypid=$!
# Whichever side ends first is printed first.
while kill -0 "$gopid" 2>/dev/null && kill -0 "$pypid" 2>/dev/null; do sleep 1; done
pyside() {
  wait "$pypid"
  local name part
  for part in 1 2; do
    name="Python tests ($([ $part = 1 ] && echo "phase 1" || echo "phase 1, then alone: the Ray clusters"))"
    echo "=== $name: exit $(cat "$out/py$part.rc" 2>/dev/null || echo "none (did not run)")"
    cat "$out/py$part" 2>/dev/null
    [ "$(cat "$out/py$part.rc" 2>/dev/null)" = 0 ] || failed+=("$name")
  done
}
if ! kill -0 "$gopid" 2>/dev/null; then
  report "Go tests (phase 1)" "$gopid" "$out/go1"; pyside
else
  pyside; report "Go tests (phase 1)" "$gopid" "$out/go1"
fi

echo "=== phase 2: the Go tests scripts/exclusive-tests names, one at a time"
WEBSERV_TEST_PHASE=exclusive gotest -p 1 -parallel 1 -run "$gore" "${!gopkgs[@]}" >"$out/go2" &
report "Go tests (phase 2)" $! "$out/go2"

python3 "$here/testcost.py" table "$WEBSERV_TEST_COSTS" 15
if [ "${#failed[@]}" -gt 0 ]; then
  echo "=== failed: ${failed[*]} (the output above says which test and why)"
  exit 1
fi
echo "=== all tests passed in $((SECONDS - start)) s"
