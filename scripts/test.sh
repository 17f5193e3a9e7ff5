#!/usr/bin/env bash
# The test suites of `make test`: Go (every package, real Chromium and
# incusd) and Python (pytest against a real `webserv serve`), run side by
# side. Both spend most of their time waiting on browsers, containers and
# idle windows, so together they take little more than the longer of the
# two. Each suite's output is printed whole when it ends; the script fails
# when either does.
#
#   scripts/test.sh GO BIN PYTEST
set -uo pipefail
go=${1:?go command}
bin=${2:?webserv binary}
pytest=${3:?pytest}

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
# Each test's wall and CPU seconds (scripts/testcost.py), for the table printed at the end.
export WEBSERV_TEST_COSTS=$out/costs
mkdir -p "$WEBSERV_TEST_COSTS"

start=$SECONDS
# -vet=off: `make lint` has just run the whole of `go vet ./...`, a superset
# of the checks `go test` would repeat. Repeated, they cost about 28 CPU-s
# and 20 s before the first test starts (measured with a cache warmed by
# lint and build, as here: 41 against 13 CPU-s to build every test binary).
#
# Packages are named longest first: go test runs two at a time (-p is the
# number of cores) in the order given, and `server` takes the longest (alone
# 214 s, and 140 s since its oracle test plays a wrong sequence per kind of
# task rather than per task, 2026-11-23). Named in path order it
# started only after 77 s of other packages, and the suite waited on it
# alone at the end. Its parallel tests run two at a time (-parallel is
# GOMAXPROCS): tried six at a time on a saturated host (load 55 to 70), the
# tests' own limits ran out (a site ready within 20 s, an action within
# 10 s) and two tracker tests failed (2026-11-27).
{
  set -o pipefail
  "$go" test -json -vet=off -count=1 -timeout 30m ./server ./envcore ./bench/suites ./incusmgr ./... 2>&1 |
    python3 "$here/testcost.py" go "$WEBSERV_TEST_COSTS/go.jsonl"
} >"$out/go" 2>&1 &
gopid=$!
# pytest-xdist: four workers. A work unit is a test module (its module
# fixtures, like test_ray.py's Ray cluster, are set up once), or a single test
# of the heavy modules conftest.py's SPLIT names (test_explore, test_docs,
# test_miniwob...), so that no worker ends the suite alone on a long module;
# units go out heaviest first (conftest.py's COST), --no-loadscope-reorder
# keeping that order. The Python tests mostly wait on Chromium and
# subprocesses, so four share the two cores well.
# --durations: the slowest tests, for whoever makes the suite faster next.
WEBSERV_BIN=$bin "$pytest" -q -n 4 --dist loadscope --no-loadscope-reorder --durations=10 python/tests >"$out/py" 2>&1 &
pypid=$!

# report prints a finished suite's output and remembers a failure.
failed=()
report() {
  local name=$1 pid=$2 file=$3
  wait "$pid"
  local rc=$?
  echo "=== $name tests: exit $rc after $((SECONDS - start)) s"
  cat "$file"
  [ "$rc" -eq 0 ] || failed+=("$name")
}
# Whichever ends first is printed first.
while kill -0 "$gopid" 2>/dev/null && kill -0 "$pypid" 2>/dev/null; do sleep 1; done
if ! kill -0 "$gopid" 2>/dev/null; then
  report Go "$gopid" "$out/go"; report Python "$pypid" "$out/py"
else
  report Python "$pypid" "$out/py"; report Go "$gopid" "$out/go"
fi
python3 "$here/testcost.py" table "$WEBSERV_TEST_COSTS" 15
if [ "${#failed[@]}" -gt 0 ]; then
  echo "=== failed: ${failed[*]} (the output above says which test and why)"
  exit 1
fi
echo "=== all tests passed in $((SECONDS - start)) s"
