#!/usr/bin/env python3
"""Programmatic verifiers of the tracker's tasks (the `check` evaluator).

Run by the server in the episode's instance after the agent stops: the
working directory is the instance's data directory; $WEBSERV_ANSWER and
$WEBSERV_URL hold the agent's answer and the final URL. Its verdict is
the last line it prints (here: named sub-scores with weights, as JSON),
and it exits 0. A non-zero exit (a usage error here, or any uncaught
exception: Python exits 1) is the verifier's own failure, which the
server reports as an evaluation error, never as a score of 0.

    check.py closed-with-comment TITLE TEXT
"""

import json
import os
import sqlite3
import sys


def main(argv):
    if len(argv) != 3 or argv[0] != "closed-with-comment":
        print("usage: check.py closed-with-comment TITLE TEXT", file=sys.stderr)
        return 2
    title, text = argv[1], argv[2]
    db = sqlite3.connect(
        f"file:{os.path.join(os.environ.get('DATA_DIR', '.'), 'tracker.db')}?mode=ro", uri=True
    )
    row = db.execute("SELECT id, status FROM issues WHERE title = ?", (title,)).fetchone()
    if row is None:
        print(f"no issue titled {title!r}: the task file and the site disagree", file=sys.stderr)
        return 2
    commented = db.execute(
        "SELECT COUNT(*) FROM comments WHERE issue = ? AND lower(text) LIKE ?", (row[0], f"%{text.lower()}%")
    ).fetchone()[0]
    closed = 1 if row[1] == "closed" else 0
    print(
        json.dumps(
            {
                "closed": {"score": closed, "weight": 2},
                "comment": {"score": 1 if commented else 0, "weight": 1},
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
