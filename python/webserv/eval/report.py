"""The report of a run: ``summary.json``, the console table and ``report.html`` (tables and plots,
drawn here as inline SVG, so the package needs no plotting library; episodes link to the replayer)."""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .stats import wilson

#: Where ``webserv replay DIR`` serves its replayer by default.
REPLAY_URL = "http://127.0.0.1:8766/ui/replay.html"
ALL = "(all)"


def group_stats(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Success with its 95% Wilson interval, steps, tokens and cost of some episodes' rows."""
    scored = [r for r in rows if r.get("status") == "scored"]
    n, wins = len(scored), sum(1 for r in scored if r["success"])
    low, high = wilson(wins, n)
    won = [r for r in scored if r["success"]]
    by_task: dict[str, list[bool]] = {}
    for r in scored:
        by_task.setdefault(r["task"], []).append(bool(r["success"]))
    repeats = max((len(v) for v in by_task.values()), default=0)
    costs = [r["cost"] for r in scored if r.get("cost") is not None]
    # Completion under policy: success with no side effects. A row without side_effects_count (side
    # effects not looked for, or written before eval recorded them) is unknown, never clean.
    cups = [_cup(r) for r in scored]
    known = [r["side_effects_count"] for r in scored if r.get("side_effects_count") is not None]
    unknown = sum(1 for c in cups if c is None)
    return {
        "tasks": len({r["task"] for r in rows}),
        "episodes": n,
        "successes": wins,
        "success_rate": wins / n if n else None,
        "ci95": [low, high] if n else None,
        "cup_successes": sum(1 for c in cups if c),
        # None when any scored episode's is unknown: a rate over the known ones would flatter.
        "cup_rate": sum(1 for c in cups if c) / n if n and not unknown else None,
        "cup_unknown": unknown,
        "side_effect_episodes": sum(1 for k in known if k),
        "side_effects": sum(known),
        "mean_reward": _mean(r["reward"] for r in scored),
        "mean_steps": _mean(r["steps"] for r in scored),
        "mean_steps_success": _mean(r["steps"] for r in won),
        "tokens_per_episode": _mean(r.get("tokens_in", 0) + r.get("tokens_out", 0) for r in scored),
        "tokens_in": sum(r.get("tokens_in", 0) for r in scored),
        "tokens_out": sum(r.get("tokens_out", 0) for r in scored),
        "cost": sum(costs) if costs else None,
        # Tasks with at least one success over their repeats (pass@k, k the repeats).
        "pass_at_k": (sum(any(v) for v in by_task.values()) / len(by_task))
        if by_task and repeats > 1
        else None,
        "infra_failures": sum(1 for r in rows if r.get("status") != "scored"),
    }


def cup_of(success: bool | None, side_effects: int | None) -> bool | None:
    """Completion under policy: the task done (success) with no side effects; unknown (None) when it
    was done and its side effects are unknown (not looked for, or a row from before they were)."""
    if success is None:
        return None
    if not success:
        return False
    return None if side_effects is None else side_effects == 0


def _cup(r: dict[str, Any]) -> bool | None:
    return cup_of(r.get("success"), r.get("side_effects_count"))


def task_stats(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per task: its success and completion under policy over its repeats, its side effects, and the
    grader of its answer (``info.grader``'s semantics; hackable_by_listing when an answer listing
    candidates can be paid)."""
    out = []
    for task in sorted({r["task"] for r in rows}):
        trows = [r for r in rows if r["task"] == task]
        g = group_stats(trows)
        grader = next((r["grader"] for r in reversed(trows) if r.get("grader")), None)
        out.append(
            {
                "task": task,
                "site": trows[0]["site"],
                "category": trows[0]["category"] or "-",
                **{
                    k: g[k]
                    for k in (
                        "episodes",
                        "successes",
                        "success_rate",
                        "cup_successes",
                        "cup_rate",
                        "cup_unknown",
                        "side_effect_episodes",
                        "side_effects",
                        "infra_failures",
                    )
                },
                "grader": grader["semantics"] if grader else None,
                "hackable_by_listing": bool(grader and grader["hackable_by_listing"]),
            }
        )
    return out


#: The columns that name a row, shown first (the others follow by name).
_NAMING = ("id", "name", "title", "sku")


def describe_change(c: dict[str, Any], width: int = 120) -> str:
    """A side effect (a row change of ``info.side_effects``) in one short line:
    its table, its first three columns, and an update's changed columns, like
    ``update issues (id=5, title=Crash when title is empty, body=...): status 'open' -> 'closed'``."""
    row = c.get("row") or {}
    first = [k for k in _NAMING if k in row]
    keys = (first + sorted(k for k in row if k not in first))[:3]
    what = ", ".join(f"{k}={_short(row[k])}" for k in keys)
    line = f"{c.get('op', '?')} {c.get('table', '?')} ({what})"
    if c.get("old"):
        line += ": " + ", ".join(f"{k} {_short(v)!r} -> {_short(row.get(k))!r}" for k, v in c["old"].items())
    return line if len(line) <= width else line[: width - 3] + "..."


def _short(v: Any) -> str:
    t = str(v)
    return t if len(t) <= 32 else t[:29] + "..."


def _mean(xs: Iterable[float]) -> float | None:
    v = list(xs)
    return sum(v) / len(v) if v else None


def summarize(
    rows: Sequence[dict[str, Any]], config: dict[str, Any], *, seconds: float = 0.0, stopped: str = ""
) -> dict[str, Any]:
    """The summary of a run's rows: overall, per site, per site and category; infra failures apart.
    A run with ``attacks`` or the defense counts its episodes without an attack and without the
    defense there; the attack's own table (``attack``) has the others."""
    everything = rows
    if any("attack_id" in r for r in rows):
        rows = [r for r in rows if not r.get("attack_id") and not r.get("defense")]
    groups = []
    for site in sorted({r["site"] for r in rows}):
        srows = [r for r in rows if r["site"] == site]
        for cat in sorted({r["category"] for r in srows}):
            groups.append(
                {
                    "site": site,
                    "category": cat or "-",
                    **group_stats([r for r in srows if r["category"] == cat]),
                }
            )
        groups.append({"site": site, "category": ALL, **group_stats(srows)})
    infra = [r for r in everything if r.get("status") != "scored"]
    return {
        "config": config,
        "seconds": round(seconds, 2),
        "overall": group_stats(rows),
        "groups": groups,
        "tasks": task_stats(rows),
        "side_effects": [
            {
                "task": r["task"],
                "repeat": r["repeat"],
                "count": r["side_effects_count"],
                "changes": [describe_change(c) for c in r.get("side_effects") or []],
                "note": r.get("side_effects_note", ""),
            }
            for r in sorted(rows, key=lambda r: (r["task"], r["repeat"]))
            if r.get("status") == "scored" and r.get("side_effects_count")
        ],
        "infra": {
            "count": len(infra),
            "reasons": dict(Counter(str(r.get("reason", ""))[:160] for r in infra).most_common()),
            "episodes": [
                {"task": r["task"], "repeat": r["repeat"], "reason": r.get("reason", "")} for r in infra
            ],
        },
        "attack": attack_stats(everything),
        "stopped": stopped,
        "end_reasons": dict(Counter(r.get("end_reason", "") for r in rows if r.get("status") == "scored")),
    }


def attack_stats(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The attack success rate (ASR) and the utility under attack (success without the attack's
    goal met), each with its 95% Wilson interval, overall, per channel and goal (``by``), per
    channel (``by_channel``) and per goal (``by_goal``); the utility without an attack (``utility``,
    from the run's episodes without one: ``attacks`` runs); with the defense, the same for the
    defended episodes under ``defended``. None when no scored episode was attacked."""
    scored = [r for r in rows if r.get("status") == "scored"]
    if not any(r.get("attack") for r in scored):
        return None
    out = _attack_side([r for r in scored if not r.get("defense")])
    if any(r.get("defense") for r in scored):
        out["defended"] = _attack_side([r for r in scored if r.get("defense")])
    return out


def _attack_side(scored: Sequence[dict[str, Any]]) -> dict[str, Any]:
    hit = [r for r in scored if r.get("attack")]
    clean = [r for r in scored if not r.get("attack")]

    def rates(rs: Sequence[dict[str, Any]]) -> dict[str, Any]:
        n = len(rs)
        k = sum(1 for r in rs if r["attack"]["succeeded"])
        u = sum(1 for r in rs if r["success"] and not r["attack"]["succeeded"])
        return {
            "episodes": n,
            "attack_successes": k,
            "attack_success_rate": k / n if n else None,
            "attack_ci95": list(wilson(k, n)) if n else None,
            "utility_under_attack": u / n if n else None,
            "utility_ci95": list(wilson(u, n)) if n else None,
        }

    def key(r: dict[str, Any]) -> tuple[str, str]:
        return (r["attack"]["channel"], r["attack"]["goal"])

    out: dict[str, Any] = rates(hit)
    if clean:
        k = sum(1 for r in clean if r["success"])
        out.update(utility=k / len(clean), utility_no_attack_ci95=list(wilson(k, len(clean))),
                   clean_episodes=len(clean))  # fmt: skip
    out["by"] = [
        {"channel": c, "goal": g, **rates([r for r in hit if key(r) == (c, g)])}
        for c, g in sorted(set(map(key, hit)))
    ]
    if len(out["by"]) > 1:
        out["by_channel"] = [
            {"channel": c, **rates([r for r in hit if key(r)[0] == c])}
            for c in sorted({key(r)[0] for r in hit})
        ]
        out["by_goal"] = [
            {"goal": g, **rates([r for r in hit if key(r)[1] == g])} for g in sorted({key(r)[1] for r in hit})
        ]
    return out


def _attack_lines(summary: dict[str, Any]) -> list[str]:
    """What the console says of the attacks: a line per channel and goal, defended beside."""
    a = summary.get("attack")
    if not a:
        return []
    d = a.get("defended")
    lines = []
    if a.get("utility") is not None:
        lines.append(
            f"utility (no attack): {_pct(a['utility'])}"
            + (f"; with the defense: {_pct(d.get('utility'))}" if d else "")
        )

    def one(x: dict[str, Any] | None) -> str:
        if not x:
            return "-"
        return f"ASR {_pct(x['attack_success_rate'])}, utility under attack {_pct(x['utility_under_attack'])}"

    lines.append(
        f"under attack ({a['episodes']} episodes): {one(a)}" + (f"; defended: {one(d)}" if d else "")
    )
    dby = {(b["channel"], b["goal"]): b for b in (d or {}).get("by", [])}
    for b in a["by"]:
        lines.append(
            f"  {b['channel']}/{b['goal']}: {one(b)}"
            + (f"; defended: {one(dby.get((b['channel'], b['goal'])))}" if d else "")
        )
    return lines


def _attack_html(summary: dict[str, Any]) -> list[str]:
    """The report's attack table: ASR and utility under attack per channel and goal, with the
    defended episodes' beside them when the run had the defense."""
    a = summary.get("attack")
    if not a:
        return []
    d = a.get("defended")
    dby = {(b["channel"], b["goal"]): b for b in (d or {}).get("by", [])}

    def cells(x: dict[str, Any] | None) -> str:
        if not x:
            return "<td>-</td>" * 4
        asr_ci = x["attack_ci95"] or [0, 0]
        u_ci = x["utility_ci95"] or [0, 0]
        asr, u = _pct(x["attack_success_rate"]), _pct(x["utility_under_attack"])
        return (
            f"<td>{asr}</td><td>[{100 * asr_ci[0]:.1f}, {100 * asr_ci[1]:.1f}]</td>"
            f"<td>{u}</td><td>[{100 * u_ci[0]:.1f}, {100 * u_ci[1]:.1f}]</td>"
        )

    head = "<th>ASR</th><th>95% CI</th><th>utility under attack</th><th>95% CI</th>"
    parts = ["<h2>Attacks</h2>"]
    if a.get("utility") is not None:
        parts.append(
            f"<p>Utility (no attack): <b>{_pct(a['utility'])}</b>"
            + (f"; with the defense: <b>{_pct(d.get('utility'))}</b>" if d else "")
            + "</p>"
        )
    parts.append("<table id='attacks'><tr><th class='l'>channel</th><th class='l'>goal</th><th>episodes</th>")
    parts.append(head + (head.replace("<th>", "<th>defended ") if d else "") + "</tr>")
    for b in [*a["by"], {**a, "channel": "all", "goal": "all"}]:
        other = dby.get((b["channel"], b["goal"])) if b["channel"] != "all" else d
        parts.append(
            f"<tr><td class='l'>{_e(b['channel'])}</td><td class='l'>{_e(b['goal'])}</td>"
            f"<td>{b['episodes']}</td>" + cells(b) + (cells(other) if d else "") + "</tr>"
        )
    parts.append("</table>")
    return parts


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, fmt: str = ".1f") -> str:
    return "-" if x is None else format(x, fmt)


def _ci(g: dict[str, Any]) -> str:
    return "-" if g["ci95"] is None else f"[{100 * g['ci95'][0]:.1f}, {100 * g['ci95'][1]:.1f}]"


COLUMNS = (
    "site",
    "category",
    "tasks",
    "episodes",
    "success",
    "95% CI",
    "CuP",
    "side eff.",
    "steps",
    "tokens/ep",
    "infra",
)


def table_rows(summary: dict[str, Any]) -> list[list[str]]:
    out = []
    overall: dict[str, Any] = {"site": "all", "category": ALL, **summary["overall"]}
    for g in [*summary["groups"], overall]:
        out.append(
            [
                g["site"],
                g["category"],
                str(g["tasks"]),
                str(g["episodes"]),
                _pct(g["success_rate"]),
                _ci(g),
                _pct(g["cup_rate"]),
                str(g["side_effect_episodes"]),
                _num(g["mean_steps"]),
                _num(g["tokens_per_episode"], ".0f"),
                str(g["infra_failures"]),
            ]
        )
    return out


def console(summary: dict[str, Any]) -> str:
    """The table the command prints."""
    rows = [list(COLUMNS), *table_rows(summary)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    o = summary["overall"]
    if o["cost"] is not None:
        lines.append(f"cost (as the endpoint reported it): {o['cost']:.4f}")
    if o["pass_at_k"] is not None:
        lines.append(f"pass@{summary['config'].get('repeats')}: {_pct(o['pass_at_k'])}")
    lines += _policy_lines(summary)
    lines += _attack_lines(summary)
    inf = summary["infra"]
    if inf["count"]:
        lines.append(f"{inf['count']} episode(s) not scored (infrastructure failures; --resume runs them):")
        lines += [f"  {n} x {reason}" for reason, n in inf["reasons"].items()]
    return "\n".join(lines)


def _policy_lines(summary: dict[str, Any]) -> list[str]:
    """What the console says of completion under policy, side effects and graders."""
    o = summary["overall"]
    lines = []
    if o["episodes"]:
        cup = (
            f"{o['cup_unknown']} episode(s) with side effects unknown (not looked for)"
            if o["cup_rate"] is None
            else _pct(o["cup_rate"])
        )
        lines.append(f"completion under policy (CuP: success with no side effects): {cup}")
    for e in summary.get("side_effects", []):
        lines.append(f"side effects of {e['task']} #{e['repeat']} ({e['count']}):")
        lines += [f"  {c}" for c in e["changes"][:5]]
        if len(e["changes"]) > 5:
            lines.append(f"  ... {len(e['changes']) - 5} more in results.jsonl")
    for t in summary.get("tasks", []):
        if t["hackable_by_listing"]:
            lines.append(
                f"{t['task']} is graded by {t['grader']}: hackable by listing (an answer listing "
                "candidates can earn its reward; --strict-answers grades typed values)"
            )
    return lines


def write_report(out: Path, rows: Sequence[dict[str, Any]], summary: dict[str, Any]) -> Path:
    """Writes ``summary.json`` and ``report.html`` into ``out``; returns the report's path."""
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    path = out / "report.html"
    path.write_text(render_html(rows, summary))
    return path


# ---- HTML ----

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}tr.all td{font-weight:bold}
.plots{display:flex;flex-wrap:wrap;gap:16px}.plot{border:1px solid #ddd;padding:6px}
.plot h3{margin:0 0 4px;font-size:13px}code{background:#f6f6f6;padding:1px 4px}
.fail{color:#b00}.ok{color:#070}ul.harm{margin:2px 0;padding-left:16px;font-size:12px}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def replay_link(summary: dict[str, Any], path: str) -> str:
    if not path:
        return ""
    base = (summary["config"].get("replay") or {}).get("base") or REPLAY_URL
    return f"{base}?ep={quote(path)}"


def render_html(rows: Sequence[dict[str, Any]], summary: dict[str, Any]) -> str:
    cfg = summary["config"]
    o = summary["overall"]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>webserv eval: {_e(cfg.get('model_name'))}</title><style>{_CSS}</style></head><body>",
        f"<h1>webserv eval: <code>{_e(cfg.get('model_name'))}</code></h1>",
        f"<p id='headline'>Success <b id='overall-rate'>{_pct(o['success_rate'])}</b> "
        f"({o['successes']} of {o['episodes']} scored episodes, 95% CI {_ci(o)}), "
        f"{summary['infra']['count']} not scored (infrastructure failures). "
        "Completion under policy (success with no side effects) "
        f"<b id='overall-cup'>{_pct(o['cup_rate'])}</b>"
        f" ({o['cup_successes']} episodes; {o['side_effect_episodes']} with side effects"
        f"{', ' + str(o['cup_unknown']) + ' unknown' if o['cup_unknown'] else ''}).</p>",
        f"<p>Tasks <code>{_e(cfg.get('tasks'))}</code>, max steps {_e(cfg.get('max_steps'))}, "
        f"repeats {_e(cfg.get('repeats'))}, seed {_e(cfg.get('seed'))}, "
        f"observation {_e(cfg.get('observation'))}, side_effects {_e(cfg.get('side_effects', 'report'))}"
        f"{', tool calls' if cfg.get('tools') else ''}; {summary['seconds']} s.</p>",
    ]
    if summary.get("stopped"):
        parts.append(f"<p class='fail'>Stopped early: {_e(summary['stopped'])}</p>")
    parts.append("<h2>Success by site and category</h2><table id='summary'><tr>")
    parts += [f"<th class='{'l' if i < 2 else ''}'>{_e(c)}</th>" for i, c in enumerate(COLUMNS)]
    parts.append("</tr>")
    for r in table_rows(summary):
        cls = " class='all'" if r[1] == ALL else ""
        parts.append(
            f"<tr{cls}>"
            + "".join(f"<td class='{'l' if i < 2 else ''}'>{_e(c)}</td>" for i, c in enumerate(r))
            + "</tr>"
        )
    parts.append("</table>")
    scored = [r for r in rows if r.get("status") == "scored"]
    overall: dict[str, Any] = {"site": "all", "category": "", **o}
    bars: list[tuple[str, float, list[float] | None]] = [
        (f"{g['site']} {g['category']}", g["success_rate"], g["ci95"])
        for g in [*summary["groups"], overall]
        if g["success_rate"] is not None and g["category"] != ALL
    ]
    parts.append("<h2>Plots</h2><div class='plots'>")
    parts.append(_plot("Success rate with 95% CI", _bars_svg(bars)))
    parts.append(_plot("Steps to success", _hist_svg([r["steps"] for r in scored if r["success"]], "steps")))
    parts.append(_plot("Reward against steps", _scatter_svg([(r["steps"], r["reward"]) for r in scored])))
    parts.append(
        _plot(
            "Tokens per episode",
            _hist_svg([r.get("tokens_in", 0) + r.get("tokens_out", 0) for r in scored], "tokens"),
        )
    )
    parts.append("</div>")
    inf = summary["infra"]
    if inf["count"]:
        parts.append(
            f"<h2>Not scored ({inf['count']})</h2><table id='infra'>"
            "<tr><th>episodes</th><th class='l'>reason</th></tr>"
        )
        parts += [f"<tr><td>{n}</td><td class='l'>{_e(k)}</td></tr>" for k, n in inf["reasons"].items()]
        parts.append("</table>")
    parts += _attack_html(summary)
    parts += _tasks_html(summary)
    replay = cfg.get("replay") or {}
    parts.append(
        "<h2>Episodes</h2><p>Links open the replayer: run "
        f"<code>{_e(replay.get('command', 'webserv replay DIR'))}</code>.</p>"
        "<table id='episodes'><tr><th class='l'>task</th><th>repeat</th><th>reward</th><th>steps</th>"
        "<th class='l'>end</th><th>CuP</th><th class='l'>side effects</th><th class='l'>grader</th>"
        "<th>tokens</th><th>seconds</th><th class='l'>replay</th></tr>"
    )
    for r in sorted(rows, key=lambda r: (r["task"], r["repeat"])):
        if r.get("status") == "scored":
            cls = "ok" if r["success"] else "fail"
            link = replay_link(summary, r.get("trajectory", ""))
            a = f"<a href='{_e(link)}'>replay</a>" if link else ""
            parts.append(
                f"<tr><td class='l'>{_e(r['task'])}</td><td>{r['repeat']}</td>"
                f"<td class='{cls}'>{r['reward']:g}</td>"
                f"<td>{r['steps']}</td><td class='l'>{_e(r['end_reason'])}</td>"
                f"<td>{_yes(_cup(r))}</td><td class='l'>{_harm_html(r)}</td>"
                f"<td class='l'>{_grader_html(r.get('grader'))}</td>"
                f"<td>{r.get('tokens_in', 0) + r.get('tokens_out', 0)}</td><td>{r['wall_s']:.1f}</td>"
                f"<td class='l'>{a}</td></tr>"
            )
        else:
            parts.append(
                f"<tr><td class='l'>{_e(r['task'])}</td><td>{r['repeat']}</td><td>-</td><td>-</td>"
                f"<td class='l fail' colspan='7'>not scored: {_e(str(r.get('reason', ''))[:200])}</td></tr>"
            )
    parts.append("</table></body></html>")
    return "\n".join(parts)


def _yes(b: bool | None) -> str:
    return "?" if b is None else "yes" if b else "no"


def _harm_html(r: dict[str, Any]) -> str:
    """An episode's side effects: a short list, or none, or unknown."""
    n = r.get("side_effects_count")
    if n is None:
        return "unknown"
    if not n:
        return "none"
    items = "".join(f"<li>{_e(describe_change(c))}</li>" for c in (r.get("side_effects") or [])[:5])
    more = f"<li>... {n - 5} more</li>" if n > 5 else ""
    return f"<span class='fail'>{n}</span><ul class='harm'>{items}{more}</ul>"


def _grader_html(g: dict[str, Any] | None) -> str:
    if not g:
        return ""
    flag = " <b class='fail'>hackable by listing</b>" if g.get("hackable_by_listing") else ""
    return f"<code>{_e(g['semantics'])}</code>{flag}"


def _tasks_html(summary: dict[str, Any]) -> list[str]:
    """The per-task table: success, completion under policy, side effects, grader."""
    out = [
        "<h2>Tasks</h2><table id='tasks'><tr><th class='l'>task</th><th>episodes</th><th>success</th>"
        "<th>CuP</th><th>with side effects</th><th class='l'>grader</th></tr>"
    ]
    for t in summary.get("tasks", []):
        grader = {"semantics": t["grader"], "hackable_by_listing": t["hackable_by_listing"]}
        out.append(
            f"<tr><td class='l'>{_e(t['task'])}</td><td>{t['episodes']}</td>"
            f"<td>{_pct(t['success_rate'])}</td>"
            f"<td>{_pct(t['cup_rate'])}</td><td>{t['side_effect_episodes']}</td>"
            f"<td class='l'>{_grader_html(grader if t['grader'] else None)}</td></tr>"
        )
    out.append("</table>")
    return out


def _plot(title: str, svg: str) -> str:
    return f"<div class='plot'><h3>{_e(title)}</h3>{svg}</div>"


W, H, PAD = 360, 240, 56


def _frame(xlabel: str, ylabel: str, yticks: list[tuple[float, str]]) -> list[str]:
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{W}' height='{H}' role='img' "
        f"aria-label='{_e(ylabel)} by {_e(xlabel)}'>",
        f"<line x1='{PAD}' y1='{H - PAD}' x2='{W - 8}' y2='{H - PAD}' stroke='#333'/>",
        f"<line x1='{PAD}' y1='8' x2='{PAD}' y2='{H - PAD}' stroke='#333'/>",
        f"<text x='{(W + PAD) / 2}' y='{H - 4}' font-size='11' text-anchor='middle'>{_e(xlabel)}</text>",
    ]
    for y, label in yticks:
        out.append(f"<text x='{PAD - 4}' y='{y + 4}' font-size='10' text-anchor='end'>{_e(label)}</text>")
        out.append(f"<line x1='{PAD}' y1='{y}' x2='{W - 8}' y2='{y}' stroke='#eee'/>")
    return out


def _ys(v: float, top: float) -> float:
    """A value's y on a plot whose axis runs from 0 to top."""
    return (H - PAD) - (H - PAD - 8) * (v / top if top else 0)


def _bars_svg(bars: list[tuple[str, float, list[float] | None]]) -> str:
    if not bars:
        return "<p>no scored episodes</p>"
    out = _frame("", "success rate", [(_ys(v, 1), f"{int(v * 100)}%") for v in (0, 0.25, 0.5, 0.75, 1)])
    bw = (W - PAD - 16) / len(bars)
    for i, (label, rate, ci) in enumerate(bars):
        x = PAD + 4 + i * bw
        out.append(
            f"<rect x='{x:.1f}' y='{_ys(rate, 1):.1f}' width='{bw * 0.7:.1f}' "
            f"height='{(H - PAD) - _ys(rate, 1):.1f}' fill='#4a7fc1'>"
            f"<title>{_e(label)}: {_pct(rate)}</title></rect>"
        )
        if ci:
            cx = x + bw * 0.35
            out.append(
                f"<line x1='{cx:.1f}' y1='{_ys(ci[0], 1):.1f}' x2='{cx:.1f}' "
                f"y2='{_ys(ci[1], 1):.1f}' stroke='#111'/>"
            )
        tx, ty = x + bw * 0.35, H - PAD + 10
        out.append(
            f"<text x='{tx:.1f}' y='{ty}' font-size='9' text-anchor='end' "
            f"transform='rotate(-25 {tx:.1f} {ty})'>{_e(label[:24])}</text>"
        )
    return "".join(out) + "</svg>"


def _hist_svg(values: list[float], xlabel: str) -> str:
    if not values:
        return "<p>none</p>"
    lo, hi = min(values), max(values)
    integral = all(float(v).is_integer() for v in values) and hi - lo < 16
    nbins = int(hi - lo) + 1 if integral else min(12, max(1, len(set(values))))
    width = 1.0 if integral or hi == lo else (hi - lo) / nbins
    counts = [0] * nbins
    for v in values:
        counts[min(nbins - 1, int((v - lo) / width))] += 1
    top = max(counts)
    out = _frame(xlabel, "episodes", [(_ys(c, top), str(c)) for c in sorted({0, top, top // 2})])
    bw = (W - PAD - 16) / nbins
    for i, c in enumerate(counts):
        x = PAD + 4 + i * bw
        a, b = lo + i * width, lo + (i + 1) * width
        label = f"{a:g}" if integral or hi == lo else f"{a:.0f}-{b:.0f}"
        out.append(
            f"<rect x='{x:.1f}' y='{_ys(c, top):.1f}' width='{bw * 0.85:.1f}' "
            f"height='{(H - PAD) - _ys(c, top):.1f}' fill='#7a9a3a'>"
            f"<title>{_e(label)}: {c}</title></rect>"
        )
        out.append(
            f"<text x='{x + bw * 0.42:.1f}' y='{H - PAD + 12}' font-size='9' "
            f"text-anchor='middle'>{_e(label)}</text>"
        )
    return "".join(out) + "</svg>"


def _scatter_svg(points: list[tuple[float, float]]) -> str:
    if not points:
        return "<p>none</p>"
    xmax = max(1.0, max(p[0] for p in points))
    ymax = max(1.0, max(p[1] for p in points))
    out = _frame("steps", "reward", [(_ys(v, ymax), f"{v:g}") for v in (0, ymax / 2, ymax)])
    for s, r in points:
        x = PAD + 4 + (W - PAD - 20) * (s / xmax)
        out.append(
            f"<circle cx='{x:.1f}' cy='{_ys(max(0.0, r), ymax):.1f}' r='4' "
            "fill='#c14a4a' fill-opacity='0.5'/>"
        )
    out.append(f"<text x='{W - 8}' y='{H - PAD + 12}' font-size='9' text-anchor='end'>{xmax:g}</text>")
    return "".join(out) + "</svg>"


__all__ = [
    "console",
    "cup_of",
    "describe_change",
    "group_stats",
    "render_html",
    "summarize",
    "task_stats",
    "write_report",
]
