"""MiniWoB suite: MiniWoB++ through WebServ and through BrowserGym's browsergym-miniwob, side by side.

    WEBSERV_BIN=bin/webserv python bench/miniwob_bench.py [--smoke] [--seeds 3] [--episodes 6] [--n 1 8]
    WEBSERV_BIN=bin/webserv python bench/miniwob_bench.py --saturate [--max-n 64] [--episodes 6]

Both run the pages of the one installed `miniwob` package (1.1.0) in Debian's Chromium
(BrowserGym through Playwright with no browser download, as bench/peer_bench.py does; its
task pages from file://, as MINIWOB_URL allows). Two parts:

1. Agreement: for each task and seed of a fixed list, each system resets with the seed, and
   one scripted solution (python/tests/miniwob_solvers.py) plays from each one's own
   observation (WebServ's HTML with semantic ids; BrowserGym's pruned HTML with its bids, the
   same actions on them). Reported: whether the goal texts are equal and the rewards equal;
   rewards are compared where both played without an action error (BrowserGym's click gives
   up after its own 500 ms, which a loaded host can run out: such a pair is reported, not
   compared).
2. Throughput, at each N (default 1 and 8): N worker processes each play the same episodes
   (reset, then the solution's steps), all at once; steps per second over the wall time, and
   CPU per step: the workers' CPU with their reaped children (BrowserGym's Playwright driver
   and browsers) plus, for WebServ, the server's process tree (its Chromium included).

3. Saturation (--saturate, in place of part 2): each system at N = 1, 2, 4, ... workers, each
   worker one environment playing its own task (tasks dealt round the workers) on consecutive
   seeds, as an RL rollout worker resets one environment again and again. N doubles until
   episodes per second stop rising (under 5% above the best so far), the host's free memory
   would not hold the next N (at the memory per environment measured so far), or --max-n.
   Reported at each N and at the saturation point (the N of the most episodes per second):
   episodes per CPU-second, episodes per second for the host, and memory per environment:
   the environment side's proportional set size (PSS) at its peak in the run, over N
   (WebServ's: the server's process tree, its Chromium included; BrowserGym's: each worker's
   tree, its Playwright driver and browser included), with the workers' Python clients apart.

BrowserGym runs with its MiniWoB defaults (slow_mo 100 ms, 5 s timeouts, a browser per
reset; in the agreement part, 60 s timeouts: a timeout is no grading). Results:
bench/results/miniwob.{json,md,png}. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "python" / "tests"))

import benchlib  # noqa: E402
from miniwob_solvers import SOLVERS, play  # noqa: E402

from webserv import miniwob  # noqa: E402
from webserv.launcher import LocalServer, find_binary  # noqa: E402

# Tasks whose scripted solution reads only what both observations hold alike.
TASKS = [
    "click-test",
    "click-button",
    "click-link",
    "click-checkboxes",
    "click-option",
    "enter-text",
    "enter-password",
    "login-user",
    "choose-list",
    "read-table",
]


def bg_obs(obs: dict[str, Any]) -> dict[str, Any]:
    """BrowserGym's observation in the shape the solvers read: its pruned HTML, its bids as ids."""
    from browsergym.utils.obs import flatten_dom_to_str, prune_html

    html = prune_html(flatten_dom_to_str(obs["dom_object"])).replace(' bid="', ' data-semantic-id="')
    return {"goal": obs["goal"], "html": html, "extra_element_properties": obs["extra_element_properties"]}


class System:
    """One side: make an environment for a task, reset it with a seed, step it. timeout_ms, for
    BrowserGym: its Playwright timeout instead of the task's 5 s (None: the task's)."""

    def __init__(self, name: str, timeout_ms: int | None = None) -> None:
        self.name = name
        self.timeout_ms = timeout_ms
        self.envs: dict[str, Any] = {}

    def env(self, task: str) -> Any:
        import gymnasium as gym

        if task not in self.envs:
            if self.name == "webserv":
                self.envs[task] = gym.make(f"webserv/miniwob.{task}")
            else:
                import browsergym.miniwob  # noqa: F401 (registers browsergym/miniwob.*)

                more = {"timeout": self.timeout_ms} if self.timeout_ms else {}
                self.envs[task] = gym.make(
                    f"browsergym/miniwob.{task}",
                    headless=True,
                    pw_chromium_kwargs={"executable_path": benchlib.chromium_executable()},
                    **more,
                )
        return self.envs[task]

    def episode(self, task: str, seed: int) -> dict[str, Any]:
        env = self.env(task)
        t0 = time.perf_counter()
        obs, _ = env.reset(seed=seed)
        reset_s = time.perf_counter() - t0
        adapt = (lambda o: o) if self.name == "webserv" else bg_obs

        errors: list[str] = []

        def step(action: str) -> tuple[Any, float, bool, bool, dict]:
            o, r, te, tr, info = env.step(action)
            if o.get("last_action_error"):
                errors.append(str(o["last_action_error"])[:300])
            return adapt(o), float(r), te, tr, info

        goal = obs["goal"]
        t1 = time.perf_counter()
        reward, term, trunc, info, actions = play(SOLVERS[task], adapt(obs), step)
        steps_s = time.perf_counter() - t1
        raw = info.get("miniwob", {}).get("raw_reward") if self.name == "webserv" else None
        if raw is None:
            raw = info.get("task_info", {}).get("RAW_REWARD_GLOBAL")
        return {
            "task": task,
            "seed": seed,
            "goal": goal,
            "reward": reward,
            "raw_reward": raw,
            "done": term,
            "actions": actions,
            "errors": errors,
            "reset_s": reset_s,
            "steps_s": steps_s,
        }

    def close(self) -> None:
        for env in self.envs.values():
            env.close()
        self.envs.clear()


def _cpu_of_tree(root: int) -> float:
    """CPU seconds of a live process tree, with what its members' reaped children used."""
    tick = os.sysconf("SC_CLK_TCK")
    kids: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            raw = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        stats[int(d)] = fields
        kids.setdefault(int(fields[1]), []).append(int(d))
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            f = stats[pid]
            total += sum(int(x) for x in f[11:15]) / tick  # utime stime cutime cstime
        todo += kids.get(pid, [])
    return total


def _cpu_self() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _tree(root: int) -> list[int]:
    """The pids of a live process tree."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            raw = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        kids.setdefault(int(raw[raw.rindex(")") + 2 :].split()[1]), []).append(int(d))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += kids.get(pid, [])
    return out


def _pss(pids: list[int]) -> int:
    """Proportional set size, in bytes, of processes (shared pages split among their users)."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    break
        except OSError:
            continue
    return total


def _mem_available() -> int:
    """The host's available memory in bytes (MemAvailable)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


class _MemPeak:
    """Samples, every 0.5 s in a thread, the PSS of the environment side (roots' trees; a
    worker's own Python process apart) and of the workers' clients; keeps the peaks."""

    def __init__(self, env_roots: list[int], clients: list[int], trees: bool) -> None:
        import threading

        self.env_roots, self.clients, self.trees = env_roots, clients, trees
        self.env_peak = self.client_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            env = [p for r in self.env_roots for p in (_tree(r) if self.trees else [r])]
            self.env_peak = max(self.env_peak, _pss([p for p in env if p not in self.clients]))
            self.client_peak = max(self.client_peak, _pss(self.clients))
            if self._stop.wait(0.5):
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _worker(
    name: str, plan: list[tuple[str, int]], url: str, html: str, ready: Any, go: Any, out: Any
) -> None:
    os.environ["WEBSERV_URL"] = url
    os.environ["MINIWOB_URL"] = f"file://{html}/miniwob/"
    if name == "browsergym":
        benchlib.use_debian_chromium()
    s = System(name)
    for task, _ in plan:
        s.env(task)  # made before the clock starts (WebServ's make; BrowserGym launches at reset)
    ready.put(True)
    go.wait()
    cpu0 = _cpu_self()
    rows = [s.episode(task, seed) for task, seed in plan]
    cpu = _cpu_self() - cpu0
    out.put((rows, cpu))
    s.close()


def throughput(
    name: str,
    n: int,
    plan: list[tuple[str, int]] | list[list[tuple[str, int]]],
    url: str,
    html: str,
    server_pid: int,
) -> dict[str, Any]:
    """n workers, each playing plan (or plan[i], given one per worker), all at once, timed from
    when all are ready."""
    plans = plan if plan and isinstance(plan[0], list) else [plan] * n
    ctx = mp.get_context("spawn")
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_worker, args=(name, p, url, html, ready, go, out)) for p in plans]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get()
    clients = [p.pid for p in procs if p.pid]
    # WebServ's environments live in the server's tree; BrowserGym's in each worker's.
    mem = _MemPeak([server_pid] if server_pid else clients, clients, trees=True)
    server_cpu0 = _cpu_of_tree(server_pid) if server_pid else 0.0
    t0 = time.perf_counter()
    go.set()
    results = [out.get() for _ in procs]
    wall = time.perf_counter() - t0
    server_cpu = (_cpu_of_tree(server_pid) - server_cpu0) if server_pid else 0.0
    mem.stop()
    for p in procs:
        p.join()
    cpu = sum(c for _, c in results) + server_cpu
    rows = [r for rs, _ in results for r in rs]
    steps = sum(len(r["actions"]) for r in rows)
    return {
        "n": n,
        "episodes": len(rows),
        "steps": steps,
        "wall_s": wall,
        "steps_per_s": steps / wall,
        "episodes_per_s": len(rows) / wall,
        "cpu_s": cpu,
        "cpu_ms_per_step": cpu / steps * 1000,
        "steps_per_cpu_s": steps / cpu,
        "reset_ms_p50": statistics.median(r["reset_s"] for r in rows) * 1000,
        "step_ms_p50": statistics.median(r["steps_s"] / len(r["actions"]) for r in rows) * 1000,
        "solved": sum(1 for r in rows if r["reward"] == 1.0) / len(rows),
        "episodes_per_cpu_s": len(rows) / cpu,
        "env_mem_mb": mem.env_peak / 2**20,
        "client_mem_mb": mem.client_peak / 2**20,
        "mem_per_env_mb": mem.env_peak / 2**20 / len(plans),
    }


def saturate(
    name: str, tasks: list[str], episodes: int, max_n: int, url: str, html: str, server_pid: int
) -> dict[str, Any]:
    """Runs name at N = 1, 2, 4, ... (one environment per worker, worker i playing tasks[i %
    len(tasks)] on seeds i*episodes ... ) until its episodes per second stop rising, the host's
    free memory would not hold the next N, or N passes max_n; returns every run and the
    saturation point (the run with the most episodes per second) and why it stopped."""
    runs: list[dict[str, Any]] = []
    n, why = 1, f"reached --max-n {max_n}"
    while n <= max_n:
        plans = [[(tasks[i % len(tasks)], i * episodes + k) for k in range(episodes)] for i in range(n)]
        run = throughput(name, n, plans, url, html, server_pid)
        runs.append(run)
        best = max(runs[:-1], key=lambda r: r["episodes_per_s"], default=None)
        if best is not None and run["episodes_per_s"] < best["episodes_per_s"] * 1.05:
            why = f"episodes per second stopped rising at N={n}"
            break
        # The next N's environments and clients, at what this N's took, with a 20% margin.
        need = 2 * n * (run["mem_per_env_mb"] + run["client_mem_mb"] / n) * 2**20 * 1.2
        if need > _mem_available():
            why = f"the host's free memory would not hold N={2 * n}"
            break
        n *= 2
    top = max(runs, key=lambda r: r["episodes_per_s"])
    return {"runs": runs, "saturation": top, "stopped": why}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="two tasks, one seed, one episode per worker, N=1")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per task in the agreement part")
    ap.add_argument("--episodes", type=int, default=6, help="episodes per worker in the throughput part")
    ap.add_argument("--n", type=int, nargs="+", default=[1, 8], help="workers at once")
    ap.add_argument("--saturate", action="store_true", help="part 3, not 2: raise N to saturation")
    ap.add_argument("--max-n", type=int, default=64, help="the largest N --saturate tries")
    ap.add_argument("--out", default="bench/results")
    args = ap.parse_args()
    tasks, seeds, episodes, ns, max_n = TASKS, range(args.seeds), args.episodes, args.n, args.max_n
    if args.smoke:
        tasks, seeds, episodes, ns, max_n = TASKS[:2], range(1), 1, [1], 2
    binary = find_binary()
    html = miniwob.html_dir()
    if binary is None or html is None:
        sys.exit("needs the webserv binary (make build, or WEBSERV_BIN) and pip install 'webserv[miniwob]'")
    command = ("python bench/miniwob_bench.py " + " ".join(sys.argv[1:])).strip()
    rep = benchlib.header("miniwob", command, args.smoke)
    # Each worker makes its environments (one per task it plays) before the clock starts.
    max_envs = (max_n if args.saturate else max(ns) * len(tasks)) + 8
    server = LocalServer(binary, ["--no-bundled", "--max-envs", str(max_envs)])
    try:
        os.environ["WEBSERV_URL"] = server.url
        os.environ["MINIWOB_URL"] = f"file://{html}/miniwob/"
        benchlib.use_debian_chromium()
        # 1. Agreement, one episode at a time. BrowserGym's Playwright waits up to 60 s for an
        # action here, not its tasks' 5 s: on a loaded host a click took 3 to 5 s, and one that
        # ran out would be an error of the peer's, not a different grading.
        ws, bg = System("webserv"), System("browsergym", timeout_ms=60_000)
        pairs = []
        for task in tasks:
            for seed in seeds:
                a, b = ws.episode(task, seed), bg.episode(task, seed)
                pairs.append(
                    {
                        "task": task,
                        "seed": seed,
                        "same_goal": a["goal"] == b["goal"],
                        "same_reward": a["reward"] == b["reward"],
                        # Rewards are compared where both played without an action error:
                        # BrowserGym's actions carry timeouts of their own (500 ms for a click,
                        # whatever the Playwright timeout), which a loaded host can run out.
                        "compared": not a["errors"] and not b["errors"],
                        "webserv": a,
                        "browsergym": b,
                    }
                )
        ws.close()
        bg.close()
        # 2. Throughput: every worker plays the same episodes; or 3., each system to saturation.
        plan = [(tasks[i % len(tasks)], i) for i in range(episodes)]
        pid = {"webserv": server.proc.pid, "browsergym": 0}
        sat: dict[str, dict[str, Any]] = {}
        if args.saturate:
            for name in ("webserv", "browsergym"):
                sat[name] = saturate(name, tasks, episodes, max_n, server.url, html, pid[name])
            runs = {name: s["runs"] for name, s in sat.items()}
        else:
            runs = {n_: [throughput(n_, n, plan, server.url, html, pid[n_]) for n in ns] for n_ in pid}
    finally:
        server.stop()
    same_goal = sum(p["same_goal"] for p in pairs)
    compared = [p for p in pairs if p["compared"]]
    same_reward = sum(p["same_reward"] for p in compared)
    top = {name: runs[name][-1] for name in runs}
    ratio = top["webserv"]["steps_per_cpu_s"] / top["browsergym"]["steps_per_cpu_s"]
    rep.update(tasks=tasks, seeds=list(seeds), episodes_per_worker=episodes, agreement=pairs, throughput=runs)
    if sat:
        rep["saturation"] = {name: {"stopped": s["stopped"], **s["saturation"]} for name, s in sat.items()}
    rep["headline"] = (
        f"Same goal on {same_goal}/{len(pairs)} (task, seed) pairs, "
        f"the same reward on {same_reward}/{len(compared)} played without action errors "
        f"({len(pairs) - len(compared)} not compared); "
        f"at N={ns[-1]}: WebServ {top['webserv']['steps_per_s']:.1f} steps/s, "
        f"{top['webserv']['cpu_ms_per_step']:.0f} ms CPU per step; BrowserGym "
        f"{top['browsergym']['steps_per_s']:.1f} steps/s, "
        f"{top['browsergym']['cpu_ms_per_step']:.0f} ms CPU per step "
        f"({ratio:.1f}x the steps per CPU-second)."
    )
    md: list[str] = []
    if sat:
        w, b = (sat[k]["saturation"] for k in ("webserv", "browsergym"))
        rep["headline"] += (
            f" At saturation (WebServ N={w['n']}, BrowserGym N={b['n']}): "
            f"{w['episodes_per_cpu_s'] / b['episodes_per_cpu_s']:.1f}x the episodes per CPU-second, "
            f"{w['episodes_per_s'] / b['episodes_per_s']:.1f}x the episodes per second per host."
        )
        md += [
            "| system | saturation N | episodes/s (host) | episodes per CPU-s | memory per env MB "
            "| clients MB | stopped |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, s in sat.items():
            t = s["saturation"]
            md.append(
                f"| {name} | {t['n']} | {t['episodes_per_s']:.2f} | {t['episodes_per_cpu_s']:.2f} "
                f"| {t['mem_per_env_mb']:.0f} | {t['client_mem_mb']:.0f} | {s['stopped']} |"
            )
        md.append("")
    md += [
        "| system | N | steps/s | episodes/s | CPU ms/step | steps per CPU-s | episodes per CPU-s "
        "| memory per env MB | reset p50 ms | step p50 ms | solved |"
    ]
    md.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, rs in runs.items():
        for r in rs:
            md.append(
                f"| {name} | {r['n']} | {r['steps_per_s']:.2f} | {r['episodes_per_s']:.2f} "
                f"| {r['cpu_ms_per_step']:.0f} | {r['steps_per_cpu_s']:.2f} | {r['episodes_per_cpu_s']:.2f} "
                f"| {r['mem_per_env_mb']:.0f} | {r['reset_ms_p50']:.0f} "
                f"| {r['step_ms_p50']:.0f} | {r['solved']:.0%} |"
            )
    md += [
        "",
        "| task | seed | same goal | same reward | goal (WebServ) | reward WebServ / BrowserGym |",
        "|---|---|---|---|---|---|",
    ]
    for p in pairs:
        md.append(
            f"| {p['task']} | {p['seed']} | {p['same_goal']} | {p['same_reward']} | {p['webserv']['goal']} "
            f"| {p['webserv']['reward']} / {p['browsergym']['reward']} |"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plot(runs, out / "miniwob.png")
    benchlib.write(out, rep, "\n".join(md))
    print(rep["headline"])


def plot(runs: dict[str, list[dict[str, Any]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for name, rs in runs.items():
        ns = [r["n"] for r in rs]
        axes[0].plot(ns, [r["steps_per_s"] for r in rs], marker="o", label=name)
        axes[1].plot(ns, [r["cpu_ms_per_step"] for r in rs], marker="o", label=name)
    axes[0].set(xlabel="environments at once (N)", ylabel="steps per second", title="throughput")
    axes[1].set(xlabel="environments at once (N)", ylabel="CPU ms per step", title="cost")
    for ax in axes:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)


if __name__ == "__main__":
    main()
