#!/usr/bin/env python3
"""What each test costs: wall and CPU seconds, for `make test`'s cost table (scripts/test.sh).

    go test -json ... | testcost.py go COSTS.jsonl     prints the run as go test would (failed
                                                       tests' output whole, a line a package) and
                                                       writes each test's cost
    testcost.py table DIR [N]                          the N (15) most expensive tests of every
                                                       *.jsonl under DIR, both suites

A Go test's CPU is sampled from /proc once a second: the CPU its test binary's process tree
(the binary, its Chromium, its spinners, the servers it started) used in each interval, shared
evenly among the binary's tests running in that interval; what runs outside any test (TestMain's
browser, shared fixtures) is the package's "(setup)" row. A Python test's CPU is measured around
it by conftest.py (its worker runs one test at a time). Neither counts what runs inside Incus
containers (children of incusd, not of a test).

Standard library only: it runs before the test venv is needed.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def proc_table() -> dict[int, tuple[int, float, str]]:
    """pid -> (ppid, CPU seconds of the process and its reaped children, executable's base name)."""
    out: dict[int, tuple[int, float, str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read().decode(errors="replace")
        except OSError:
            continue
        # comm may hold spaces and parentheses: the fields follow the last ')'.
        rest = raw[raw.rfind(")") + 2 :].split()
        ppid = int(rest[1])
        cpu = sum(int(x) for x in rest[11:15]) / TICK  # utime stime cutime cstime
        try:
            exe = os.path.basename(os.readlink(f"/proc/{name}/exe"))
        except OSError:
            exe = ""
        out[int(name)] = (ppid, cpu, exe)
    return out


def tree(table: dict[int, tuple[int, float, str]], root: int) -> dict[int, float]:
    """CPU seconds (its own and what it reaped) of root and of each of its live descendants."""
    kids: dict[int, list[int]] = defaultdict(list)
    for pid, (ppid, _, _) in table.items():
        kids[ppid].append(pid)
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            out[pid] = table[pid][1]
        todo.extend(kids.get(pid, ()))
    return out


def tree_cpu(table: dict[int, tuple[int, float, str]], root: int) -> float:
    """CPU seconds of root's process tree: live processes and what they reaped."""
    return sum(tree(table, root).values())


class GoCosts:
    """Reads go test -json from stdin, samples the test binaries' CPU, prints and records."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.lock = threading.Lock()
        # package -> test name (at any level, "A/B") -> "run" or "pause", until it ends
        self.state: dict[str, dict[str, str]] = defaultdict(dict)
        self.wall: dict[tuple[str, str], float] = defaultdict(float)
        self.cpu: dict[tuple[str, str], float] = defaultdict(float)
        self.tick = time.monotonic()
        self.last: dict[int, float] = {}  # test binary pid -> its tree's CPU at the last sample
        self.output: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.failed = False
        self.done = threading.Event()

    def sample(self) -> None:
        while not self.done.wait(1.0):
            self.sample_once()

    def active(self, pkg: str) -> set[str]:
        """The top-level tests of pkg with a test running now: a running test none of whose
        subtests is running or waiting for its turn (a parent waiting on its parallel subtests is
        not running, and a paused test waits for a slot)."""
        st = self.state.get(pkg, {})
        out = set()
        for name, s in st.items():
            if s == "run" and not any(m.startswith(name + "/") for m in st):
                out.add(name.split("/", 1)[0])
        return out

    def sample_once(self) -> None:
        table = proc_table()
        with self.lock:
            now = time.monotonic()
            span, self.tick = now - self.tick, now
            by_name: dict[str, str] = {}
            for pkg in self.state:
                by_name.setdefault(pkg.rsplit("/", 1)[-1] + ".test", pkg)
            for pkg in self.state:
                for top in self.active(pkg):
                    self.wall[(pkg, top)] += span
            for pid, (_, _, exe) in table.items():
                pkg = by_name.get(exe)
                if pkg is None:
                    continue
                # The binary itself, not a spinner it runs (same executable, parent a test binary).
                parent = table.get(table[pid][0])
                if parent is not None and parent[2] == exe:
                    continue
                now_cpu = tree_cpu(table, pid)
                # A process that leaves the tree alive takes its CPU with it: never below 0.
                delta = max(now_cpu - self.last.get(pid, 0.0), 0.0)
                self.last[pid] = now_cpu
                tests = self.active(pkg) or {"(setup)"}
                for t in tests:
                    self.cpu[(pkg, t)] += delta / len(tests)

    def event(self, ev: dict) -> None:
        action, pkg, test = ev.get("Action"), ev.get("Package", ""), ev.get("Test")
        if action in ("build-output",):
            sys.stdout.write(ev.get("Output", ""))
            return
        if action == "build-fail":
            self.failed = True
            return
        with self.lock:
            if action == "start":
                self.state[pkg]  # the package's binary is about to run: its CPU is sampled from now
            elif action == "output":
                self.output[(pkg, test or "")].append(ev.get("Output", ""))
            elif test and action in ("run", "cont"):
                self.state[pkg][test] = "run"
            elif test and action == "pause":
                self.state[pkg][test] = "pause"
            elif test and action in ("pass", "fail", "skip"):
                self.state[pkg].pop(test, None)
        if action == "fail" and test:
            self.failed = True
            sys.stdout.write("".join(self.output.pop((pkg, test), [])))
        elif action in ("pass", "skip") and test:
            self.output.pop((pkg, test), None)
        elif action in ("pass", "fail", "skip") and not test:
            if action == "fail":
                self.failed = True
            lines = self.output.pop((pkg, ""), [])
            # A package that failed prints all it said outside tests (a panic, a timeout).
            sys.stdout.write("".join(lines) if action == "fail" else "".join(lines[-1:]))
            sys.stdout.flush()

    def run(self) -> int:
        sampler = threading.Thread(target=self.sample, daemon=True)
        sampler.start()
        for line in sys.stdin:
            try:
                ev = json.loads(line)
            except ValueError:
                sys.stdout.write(line)  # go test's own messages that are not JSON
                continue
            self.event(ev)
        self.done.set()
        sampler.join()
        self.sample_once()
        with self.out.open("a") as f:
            for key in sorted(self.wall.keys() | self.cpu.keys()):
                pkg, test = key
                rec = {"suite": "go", "test": f"{pkg.removeprefix('github.com/webserv-rl/webserv/')}.{test}"}
                rec |= {"wall": round(self.wall.get(key, 0.0), 2), "cpu": round(self.cpu.get(key, 0.0), 2)}
                f.write(json.dumps(rec) + "\n")
        return 1 if self.failed else 0


def table(folder: Path, n: int) -> None:
    recs = [json.loads(line) for p in sorted(folder.glob("*.jsonl")) for line in p.read_text().splitlines()]
    if not recs:
        print("cost table: no costs recorded")
        return
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for r in recs:
        totals[r["suite"]][0] += r["wall"]
        totals[r["suite"]][1] += r["cpu"]
    top = sorted(recs, key=lambda r: -r["cpu"])[:n]
    print(f"=== the {len(top)} most expensive tests (CPU-s of the test's process tree; wall s)")
    print(f"{'CPU s':>8} {'wall s':>8}  test")
    for r in top:
        print(f"{r['cpu']:8.1f} {r['wall']:8.1f}  {r['suite']}: {r['test']}")
    for suite, (wall, cpu) in sorted(totals.items()):
        print(f"=== {suite}: {cpu:.0f} CPU-s in tests, {wall:.0f} test-seconds of wall (summed over tests)")


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "go":
        return GoCosts(Path(argv[1])).run()
    if len(argv) >= 2 and argv[0] == "table":
        table(Path(argv[1]), int(argv[2]) if len(argv) > 2 else 15)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
