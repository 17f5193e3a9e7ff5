"""``webserv eval compare DIR_A DIR_B``: the paired difference of two runs over the tasks both ran."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .run import RUN, SCORED, latest, read_rows
from .stats import paired


def _load(d: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if not (d / "results.jsonl").exists():
        raise ValueError(f"{d}: no results.jsonl (not a webserv eval output directory)")
    cfg = json.loads((d / RUN).read_text()) if (d / RUN).exists() else {}
    return [r for r in latest(read_rows(d)) if r.get("status") == SCORED], cfg


def compare(a: str | Path, b: str | Path) -> dict[str, Any]:
    """B's success against A's, paired by task: per site and overall, the mean of each task's
    difference in success rate (B - A, over the repeats both scored) with its 95% t interval, and how
    many tasks each did better on. Episodes are paired on (task, repeat) with the same seed; tasks
    only one run scored are left out (and counted)."""
    ra, ca = _load(Path(a))
    rb, cb = _load(Path(b))
    ia = {(r["task"], r["repeat"]): r for r in ra}
    ib = {(r["task"], r["repeat"]): r for r in rb}
    both = sorted(k for k in ia.keys() & ib.keys() if ia[k]["seed"] == ib[k]["seed"])
    per_task: dict[str, list[tuple[bool, bool]]] = {}
    site: dict[str, str] = {}
    for k in both:
        per_task.setdefault(k[0], []).append((bool(ia[k]["success"]), bool(ib[k]["success"])))
        site[k[0]] = ia[k]["site"]
    groups = []
    for name in [*sorted(set(site.values())), "all"]:
        tasks = [t for t in per_task if name == "all" or site[t] == name]
        diffs, ra_, rb_ = [], [], []
        for t in tasks:
            pairs = per_task[t]
            sa = sum(x for x, _ in pairs) / len(pairs)
            sb = sum(y for _, y in pairs) / len(pairs)
            ra_.append(sa)
            rb_.append(sb)
            diffs.append(sb - sa)
        d = paired(diffs)
        groups.append(
            {
                "site": name,
                "tasks": len(tasks),
                "a_rate": sum(ra_) / len(ra_) if ra_ else None,
                "b_rate": sum(rb_) / len(rb_) if rb_ else None,
                "diff": d["mean"],
                "ci95": [d["low"], d["high"]] if d["low"] is not None else None,
                "b_better": sum(1 for x in diffs if x > 0),
                "a_better": sum(1 for x in diffs if x < 0),
                "ties": sum(1 for x in diffs if x == 0),
            }
        )
    notes = []
    if ca.get("seed") != cb.get("seed"):
        notes.append(
            f"the runs have different seeds ({ca.get('seed')} and {cb.get('seed')}): no episode pairs"
        )
    if ca.get("max_steps") != cb.get("max_steps"):
        notes.append(f"the runs have different max_steps ({ca.get('max_steps')} and {cb.get('max_steps')})")
    only = len({k[0] for k in ia.keys() ^ ib.keys()} - set(per_task))
    if only:
        notes.append(f"{only} task(s) scored in only one run are left out")
    return {
        "a": {"dir": str(a), "model_name": ca.get("model_name")},
        "b": {"dir": str(b), "model_name": cb.get("model_name")},
        "groups": groups,
        "notes": notes,
    }


def console(c: dict[str, Any]) -> str:
    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.1f}%"

    def pp(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:+.1f}"

    head = ["site", "tasks", "A", "B", "B-A (points)", "95% CI", "B better", "A better", "ties"]
    rows = [head]
    for g in c["groups"]:
        ci = "-" if g["ci95"] is None else f"[{pp(g['ci95'][0])}, {pp(g['ci95'][1])}]"
        rows.append(
            [g["site"], str(g["tasks"]), pct(g["a_rate"]), pct(g["b_rate"]), pp(g["diff"]), ci,
             str(g["b_better"]), str(g["a_better"]), str(g["ties"])]
        )  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [f"A: {c['a']['dir']} ({c['a']['model_name']})", f"B: {c['b']['dir']} ({c['b']['model_name']})"]
    lines += ["  ".join(x.ljust(w) for x, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines += [f"note: {n}" for n in c["notes"]]
    return "\n".join(lines)
