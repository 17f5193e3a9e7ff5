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
# LINT, when given, is a command (`make lint`) run beside phase 1 at the
# lowest CPU priority (nice 19): it takes only the CPU phase 1's tests leave
# idle, so it does not slow them. When phase 1 ends it is given the normal
# priority back (on a host whose other work keeps the CPU busy, nice 19
# would starve it), and phase 2 starts once it is done.
#
# Each part's output is printed whole when it ends, a table of the most
# expensive tests (scripts/testcost.py) at the end; the script fails when
# any part does.
#
#   scripts/test.sh GO BIN PYTEST [LINT]
set -uo pipefail
go=${1:?go command}
bin=${2:?webserv binary}
pytest=${3:?pytest}
lint=${4:-}
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
# one test at a time. On C cores, three lanes side by side:
#   - Go's `server` package (half of Go's test-seconds) with C tests at once;
#   - Go's other packages, ceil(C/2) at once with ceil(C/2) tests each;
#   - pytest with C+1 workers (a Python test's process tree is busy about
#     a third of its wall time: 887 CPU-s in 2,993 test-seconds, 2026-11-28).
# At C=2: two tests of `server`, one of another package, three workers: six
# tests drive browsers at once. The two Go lanes take about as long as each
# other (server 1,276 test-seconds at two at once, the others about 690 one
# at a time, 2026-11-28); one lane for all of Go ran them one after the other
# and was the suite's longest part. Eight (two packages of two, four
# workers, and Ray beside them, 2026-11-27) put the load average past 50 on
# 2 cores: the tests' own limits ran out (a tab within 30 s, an observation
# within 20 s) and Ray's cluster could not start.
cores=$(nproc)
half=$(((cores + 1) / 2))
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

# gotest COSTS ARGS...: go test ARGS, each test's cost into COSTS (a file of WEBSERV_TEST_COSTS).
gotest() {
  local costs=$1
  shift
  # -vet=off: `make lint` runs the whole of `go vet ./...` beside, a
  # superset of the checks go test would repeat (about 28 CPU-s).
  "$go" test -json -vet=off -count=1 -timeout 30m "$@" 2>&1 |
    python3 "$here/testcost.py" go "$WEBSERV_TEST_COSTS/$costs"
}

lintpid=
if [ -n "$lint" ]; then
  # A process group of its own (setsid), so that renice reaches every
  # process it has started.
  setsid nice -n 19 bash -c "$lint" >"$out/lint" 2>&1 &
  lintpid=$!
fi

echo "=== phase 1: Go's server package ($cores tests at once), Go's other packages ($half at once, $half tests each) and Python ($workers workers) side by side; then Python's listed modules"
WEBSERV_TEST_PHASE=shared gotest go-server.jsonl -p 1 -parallel "$cores" -skip "$gore" ./server >"$out/go1a" &
goapid=$!
# The other packages, longest first: go test starts them in the order given.
others=$("$go" list ./... | grep -vx 'github.com/webserv-rl/webserv/server')
# shellcheck disable=SC2086 # one package a word
WEBSERV_TEST_PHASE=shared gotest go-others.jsonl -p "$half" -parallel "$half" -skip "$gore" \
  ./envcore ./incusmgr ./cmd/webserv ./bench/suites $others >"$out/go1b" &
gobpid=$!
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
# Each part is printed as it ends.
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
declare -A parts=([$goapid]="Go tests (phase 1, server)" [$gobpid]="Go tests (phase 1, other packages)" [$pypid]=python)
declare -A files=([$goapid]="$out/go1a" [$gobpid]="$out/go1b")
while [ "${#parts[@]}" -gt 0 ]; do
  for pid in "${!parts[@]}"; do
    kill -0 "$pid" 2>/dev/null && continue
    if [ "$pid" = "$pypid" ]; then pyside; else report "${parts[$pid]}" "$pid" "${files[$pid]}"; fi
    unset "parts[$pid]"
  done
  [ "${#parts[@]}" -eq 0 ] || sleep 1
done

if [ -n "$lintpid" ]; then
  # Raising a priority needs root (CAP_SYS_NICE), as make test runs; else it finishes at nice 19.
  renice -n 0 -g "$lintpid" >/dev/null 2>&1 || true
  report "Lint ($lint, beside phase 1)" "$lintpid" "$out/lint"
fi

echo "=== phase 2: the Go tests scripts/exclusive-tests names, one at a time"
WEBSERV_TEST_PHASE=exclusive gotest go-exclusive.jsonl -p 1 -parallel 1 -run "$gore" "${!gopkgs[@]}" >"$out/go2" &
report "Go tests (phase 2)" $! "$out/go2"

python3 "$here/testcost.py" table "$WEBSERV_TEST_COSTS" 15
if [ "${#failed[@]}" -gt 0 ]; then
  echo "=== failed: ${failed[*]} (the output above says which test and why)"
  exit 1
fi
echo "=== all tests passed in $((SECONDS - start)) s"
