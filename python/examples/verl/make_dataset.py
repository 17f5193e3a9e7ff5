"""A verl dataset of the bundled shop's tasks, each row run by the ``webserv`` agent loop.

    python python/examples/verl/make_dataset.py --out ~/data/webserv    # writes train.parquet, test.parquet

Each row has verl's fields: ``prompt`` (the system message; the loop adds
the page), ``agent_name: webserv``, ``data_source``, ``reward_model`` (the
environment grades: ``style: env``) and ``extra_info.task_id``. Needs
pandas and pyarrow (verl installs both).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SYSTEM = (
    "You operate a web browser to reach the goal. Each turn you see the page as an accessibility tree; "
    'answer with exactly one action in a fenced block, for example\n```\nclick("add-to-cart")\n```\n'
    "Actions: click(id), fill(id, text), select_option(id, option), goto(url), go_back(), stop(answer)."
)


def rows(site: str) -> list[dict]:
    tasks = json.loads((ROOT / "sites" / "shop" / "tasks" / f"{site}.json").read_text())
    return [
        {
            "data_source": f"webserv/{site}",
            "agent_name": "webserv",
            "prompt": [{"role": "system", "content": SYSTEM}],
            "reward_model": {"style": "env", "ground_truth": ""},
            "extra_info": {"task_id": f"{site}.{t['task_id']}", "index": i},
        }
        for i, t in enumerate(tasks)
    ]


def main() -> None:
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--site", default="shopping")
    args = ap.parse_args()
    data = rows(args.site)
    args.out.mkdir(parents=True, exist_ok=True)
    cut = len(data) * 9 // 10
    pd.DataFrame(data[:cut]).to_parquet(args.out / "train.parquet")
    pd.DataFrame(data[cut:]).to_parquet(args.out / "test.parquet")
    print(f"{cut} training rows, {len(data) - cut} test rows in {args.out}")


if __name__ == "__main__":
    main()
