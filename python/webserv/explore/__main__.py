"""``python -m webserv.explore``: runs the exploration loop and prints the run's statistics."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from .loop import explore


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m webserv.explore", description=__doc__)
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
        "--prompts", help="directory with explorer.txt, labeler.txt, reward.txt replacing the built-in"
    )
    p.add_argument("--server", help="the server's URL (default $WEBSERV_URL, else a local webserv serve)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--concurrency", type=int, help="episodes at once (default all)")
    a = p.parse_args(argv)
    if a.site == "open" and not a.start_url:
        p.error("--site open needs --start-url")
    try:
        result = asyncio.run(
            explore(
                site=a.site,
                episodes=a.episodes,
                max_steps=a.max_steps,
                k=a.k,
                start_url=a.start_url,
                personas=a.personas,
                out=a.out,
                model=a.model,
                model_name=a.model_name,
                labeler_model=a.labeler_model,
                reward_model=a.reward_model,
                prompts_dir=a.prompts,
                server=a.server,
                seed=a.seed,
                concurrency=a.concurrency,
            )
        )
    except (ValueError, OSError) as e:
        print(f"explore: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result.stats, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
