#!/usr/bin/env python3
"""tracker: a tiny issue tracker, the example site of docs/tasks.md.

One SQLite file ($DATA_DIR/tracker.db, made from data/seed.sql on first
start) holds the issues, their labels and comments. Pages: the issue list
(/, ?label= filters), an issue (/issues/N) with close/reopen and a comment
form, a new-issue form (/new, signed in only), sign-in (/login) and
/healthz. Commands for task setup: app.py add-issue --title T [--label L].

    app.py serve --port 8080        (the site definition runs this)
    app.py add-issue --title "Flaky upload test" --label bug
"""

import argparse
import html
import os
import sqlite3
import sys
import urllib.parse
from http import cookies
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DATA = os.environ.get("DATA_DIR", ".")
DB = os.path.join(DATA, "tracker.db")


def connect():
    """Opens the database, creating it from seed.sql the first time."""
    fresh = not os.path.exists(DB)
    db = sqlite3.connect(DB)
    db.row_factory = sqlite3.Row
    if fresh:
        with open(os.path.join(DATA, "seed.sql")) as f:
            db.executescript(f.read())
        db.commit()
    return db


def page(title, body, user):
    who = f"Signed in as {html.escape(user)}" if user else '<a href="/login">Sign in</a>'
    return f"""<!doctype html><html><head><meta charset="utf-8">
<title>{html.escape(title)} - Tracker</title></head>
<body><nav aria-label="main"><a href="/">Issues</a> <a href="/new">New issue</a>
<span id="who">{who}</span></nav>
<main><h1>{html.escape(title)}</h1>{body}</main></body></html>"""


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def user(self):
        c = cookies.SimpleCookie(self.headers.get("Cookie", ""))
        return c["session"].value if "session" in c else ""

    def send(self, status, text, ctype="text/html; charset=utf-8", headers=()):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def redirect(self, to, headers=()):
        self.send(303, "", headers=[("Location", to), *headers])

    def form(self):
        n = int(self.headers.get("Content-Length", "0"))
        return {k: v[0] for k, v in urllib.parse.parse_qs(self.rfile.read(n).decode()).items()}

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        parts = u.path.strip("/").split("/")
        db = connect()
        try:
            if u.path == "/healthz":
                return self.send(200, "ok", "text/plain")
            if u.path == "/":
                return self.index(db, q.get("label", [""])[0])
            if u.path == "/new":
                if not self.user():
                    return self.redirect("/login")
                body = """<form aria-label="new issue" method="post" action="/issues">
<label>Title <input name="title"></label> <label>Label <input name="label"></label>
<label>Description <textarea name="body"></textarea></label><button>Create issue</button></form>"""
                return self.send(200, page("New issue", body, self.user()))
            if u.path == "/login":
                body = """<form aria-label="sign in" method="post" action="/login">
<label>Username <input name="user"></label><button>Sign in</button></form>"""
                return self.send(200, page("Sign in", body, self.user()))
            if len(parts) == 2 and parts[0] == "issues" and parts[1].isdigit():
                return self.issue(db, int(parts[1]))
            self.send(404, page("Not found", "<p>No such page.</p>", self.user()))
        finally:
            db.close()

    def index(self, db, label):
        rows = db.execute(
            "SELECT id, title, status, label FROM issues WHERE ? = '' OR label = ? ORDER BY id",
            (label, label),
        ).fetchall()
        items = "".join(
            f'<li><a href="/issues/{r["id"]}">{html.escape(r["title"])}</a> '
            f'<span class="status">{r["status"]}</span> '
            f'<a href="/?label={urllib.parse.quote(r["label"])}">{html.escape(r["label"])}</a></li>'
            for r in rows
        )
        title = f"Issues labelled {label}" if label else "Issues"
        self.send(200, page(title, f'<ul id="issues">{items}</ul>', self.user()))

    def issue(self, db, n):
        r = db.execute("SELECT * FROM issues WHERE id = ?", (n,)).fetchone()
        if r is None:
            return self.send(404, page("Not found", "<p>No such issue.</p>", self.user()))
        comments = "".join(
            f"<li>{html.escape(c['author'])}: {html.escape(c['text'])}</li>"
            for c in db.execute("SELECT author, text FROM comments WHERE issue = ? ORDER BY id", (n,))
        )
        action, verb = ("reopen", "Reopen issue") if r["status"] == "closed" else ("close", "Close issue")
        body = f"""<p id="status">Status: {r["status"]}</p><p>Label: {html.escape(r["label"])}</p>
<p id="body">{html.escape(r["body"])}</p>
<form method="post" action="/issues/{n}/{action}"><button>{verb}</button></form>
<h2>Comments</h2><ul id="comments">{comments}</ul>
<form aria-label="comment" method="post" action="/issues/{n}/comment">
<label>Comment <textarea name="text"></textarea></label><button>Add comment</button></form>"""
        self.send(200, page(r["title"], body, self.user()))

    def do_POST(self):
        u = urllib.parse.urlparse(self.path)
        parts = u.path.strip("/").split("/")
        f = self.form()
        db = connect()
        try:
            if u.path == "/login" and f.get("user"):
                return self.redirect("/", [("Set-Cookie", f"session={f['user']}; Path=/; HttpOnly")])
            if u.path == "/issues":
                if not self.user():
                    return self.redirect("/login")
                if not f.get("title", "").strip():
                    return self.send(400, page("New issue", "<p>A title is required.</p>", self.user()))
                n = add_issue(db, f["title"].strip(), f.get("label", "").strip(), f.get("body", ""))
                return self.redirect(f"/issues/{n}")
            if len(parts) == 3 and parts[0] == "issues" and parts[1].isdigit():
                n = int(parts[1])
                if parts[2] in ("close", "reopen"):
                    db.execute(
                        "UPDATE issues SET status = ? WHERE id = ?",
                        ("closed" if parts[2] == "close" else "open", n),
                    )
                elif parts[2] == "comment" and f.get("text", "").strip():
                    db.execute(
                        "INSERT INTO comments (issue, author, text) VALUES (?, ?, ?)",
                        (n, self.user() or "anonymous", f["text"].strip()),
                    )
                db.commit()
                return self.redirect(f"/issues/{n}")
            self.send(404, page("Not found", "<p>No such page.</p>", self.user()))
        finally:
            db.close()


def add_issue(db, title, label, body):
    cur = db.execute(
        "INSERT INTO issues (title, label, body, status) VALUES (?, ?, ?, 'open')", (title, label, body)
    )
    db.commit()
    return cur.lastrowid


def main():
    ap = argparse.ArgumentParser(prog="app.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8080")))
    a = sub.add_parser("add-issue")
    a.add_argument("--title", required=True)
    a.add_argument("--label", default="")
    a.add_argument("--body", default="")
    args = ap.parse_args()
    if args.cmd == "add-issue":
        db = connect()
        print(add_issue(db, args.title, args.label, args.body))
        return 0
    connect().close()
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    sys.exit(main())
