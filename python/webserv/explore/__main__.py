"""``python -m webserv.explore``: runs the exploration loop and prints the run's statistics."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys

from ..options import OptionParser
from .loop import ExploreFailed, explore
from .options import ExploreOptions


def parser(prog: str = "python -m webserv.explore") -> OptionParser:
    """The command line: every ``ExploreOptions`` field is an option's destination (``politeness``
    is the live-sites group's)."""
    p = OptionParser(prog=prog, description=__doc__)
    p.add_argument(
        "--site", default="shopping", help="a site of the server: shopping, cms, a --sites name, open"
    )
    p.add_argument("--start-url", help="where episodes start (required on the open site)")
    p.add_argument("--episodes", type=int, default=4)
    p.add_argument("--max-steps", type=int, default=40)
    p.add_argument("-k", type=int, default=4, help="label and score the prefix every k steps")
    p.add_argument("--personas", help="file of personas: one a line, or a JSON list of strings")
    p.add_argument(
        "--out", default="explore-out", help="directory for demonstrations.jsonl, tasks.json, stats.json"
    )
    p.add_argument("--model", help="OpenAI-compatible API root (http://host:port/v1); without it, model-free")
    p.add_argument("--model-name", help="the model name the endpoint serves")
    p.add_argument("--labeler-model", help="API root for the labeler (default --model)")
    p.add_argument("--reward-model", help="API root for the reward model (default --model)")
    p.add_argument(
        "--prompts",
        dest="prompts_dir",
        help="directory with explorer.txt, labeler.txt, reward.txt replacing the built-in",
    )
    p.add_argument("--server", help="the server's URL (default $WEBSERV_URL, else a local webserv serve)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--concurrency", type=int, help="episodes at once (default all; half with --frontier)")
    p.add_argument("--best-of", type=int, default=0, metavar="K", help="K fresh attempts per instruction")
    p.add_argument("--frontier", action="store_true", help="later episodes start from states found earlier")
    p.add_argument("--seconds", type=float, help="stop starting episodes after this long")
    p.add_argument(
        "--site-definition",
        dest="site_definition_file",
        help="the definition file of a --sites site, to serve its tasks",
    )
    p.add_argument("--shop-data", help="the bundled shop's catalog the server uses (default as serve's)")
    p.add_argument(
        "--raw",
        action="store_true",
        help="record every explored episode as a trajectory (OUT/trajectories with the run's own server)",
    )
    p.add_argument("--screenshots", action="store_true", help="with --raw: a screenshot per step")
    p.add_argument(
        "--no-shorten",
        dest="shorten",
        action="store_false",
        help="write demonstrations as explored (default: shortened to the fewest actions doing the task)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="write only tasks with an independent solution (what `webserv tasks check --strict` asks)",
    )
    g = p.add_argument_group("live sites (--site open)")
    g.add_argument("--rate-per-host", type=float, help="requests per second per host")
    g.add_argument("--concurrency-per-host", type=int, help="requests in flight per host")
    g.add_argument("--max-requests", type=int, help="requests per episode")
    g.add_argument("--user-agent", help="the User-Agent sent to live hosts")
    g.add_argument("--robots", action="store_true", help="obey the hosts' robots.txt")
    g.add_argument(
        "--deny-submit", action="store_true", help="refuse non-GET requests to hosts outside --submit-allow"
    )
    g.add_argument("--submit-allow", action="append", metavar="HOST", help="a host submissions may go to")
    return p


def main(argv: list[str] | None = None) -> int:
    # `webserv explore` (the Go binary, which runs this module) names itself in the usage.
    p = parser(os.environ.get("WEBSERV_EXPLORE_PROG", "python -m webserv.explore"))
    a = p.parse_args(argv)
    if a.site == "open" and not a.start_url:
        p.error("--site open needs --start-url")
    if a.screenshots and not a.raw:
        p.error("--screenshots records screenshots in the raw trajectories: give --raw too")
    politeness = {
        k: v
        for k, v in {
            "rate_per_host": a.rate_per_host,
            "concurrency_per_host": a.concurrency_per_host,
            "max_requests": a.max_requests,
            "user_agent": a.user_agent,
            "robots": a.robots or None,
        }.items()
        if v is not None
    }
    # The options' fields are the parser's destinations (the politeness group aside).
    names = {f.name for f in dataclasses.fields(ExploreOptions)}
    given = {k: v for k, v in vars(a).items() if k in names}
    try:
        options = ExploreOptions.of(**given, politeness=politeness or None)
        result = asyncio.run(explore(options))
    except (ValueError, OSError) as e:
        print(f"explore: {e}", file=sys.stderr)
        return 2
    except ExploreFailed as e:
        print(f"explore: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result.stats, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
