#!/usr/bin/env python3
"""notes: a tiny notes site whose state is not a SQLite file, the test site of docs/sites.md's
"State that is not one SQLite file".

Pages: the list of notes with a form to add one (/), a note (/note/SLUG) with a delete button, and
/healthz. Where notes are kept is the one difference between its definitions:

    app.py --store files      one JSON file per note in $DATA_DIR/notes (notes-files.yaml)
    app.py --store postgres   a PostgreSQL table, through psql (notes-pg.yaml, started by pg.sh)
    app.py --store mysql      a MariaDB table, through the mysql client (notes-mysql.yaml, my.sh)

The port is $PORT.
"""

import argparse
import html
import json
import os
import re
import subprocess
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DATA = os.environ.get("DATA_DIR", ".")


def slugify(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "note"


class Files:
    """One JSON file per note: $DATA_DIR/notes/SLUG.json holding {title, body}."""

    dir = os.path.join(DATA, "notes")

    def all(self) -> list[tuple[str, str]]:
        os.makedirs(self.dir, exist_ok=True)
        out = []
        for name in sorted(os.listdir(self.dir)):
            if name.endswith(".json"):
                out.append((name[:-5], self.get(name[:-5])["title"]))
        return out

    def get(self, slug: str) -> dict | None:
        try:
            with open(os.path.join(self.dir, slug + ".json")) as f:
                return json.load(f)
        except (FileNotFoundError, ValueError):
            return None

    def add(self, slug: str, title: str, body: str) -> None:
        os.makedirs(self.dir, exist_ok=True)
        with open(os.path.join(self.dir, slug + ".json"), "x") as f:
            json.dump({"title": title, "body": body}, f)

    def delete(self, slug: str) -> None:
        try:
            os.remove(os.path.join(self.dir, slug + ".json"))
        except FileNotFoundError:
            pass


class Postgres:
    """Table notes(id, slug, title, body) of the database psql reaches ($PGHOST, $PGDATABASE)."""

    def run(self, sql: str, *args: str) -> list[list[str]]:
        cmd = ["psql", "-X", "-q", "-A", "-t", "-F", "\x1f", "-v", "ON_ERROR_STOP=1"]
        for i, a in enumerate(args):
            cmd += ["-v", f"a{i}={a}"]
        out = subprocess.run(cmd, input=sql, capture_output=True, text=True, check=True).stdout
        return [line.split("\x1f") for line in out.splitlines() if line]

    def all(self) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self.run("SELECT slug, title FROM notes ORDER BY slug;")]

    def get(self, slug: str) -> dict | None:
        rows = self.run("SELECT title, body FROM notes WHERE slug = :'a0';", slug)
        return {"title": rows[0][0], "body": rows[0][1]} if rows else None

    def add(self, slug: str, title: str, body: str) -> None:
        self.run("INSERT INTO notes (slug, title, body) VALUES (:'a0', :'a1', :'a2');", slug, title, body)

    def delete(self, slug: str) -> None:
        self.run("DELETE FROM notes WHERE slug = :'a0';", slug)


class MySQL:
    """Table notes(id, slug, title, body) of the MySQL/MariaDB database the mysql client reaches
    ($MYSQL_SOCKET, $MYSQL_DATABASE). Values go in as hex literals: nothing in them is SQL."""

    def run(self, sql: str) -> list[list[str]]:
        cmd = ["mysql", "--no-defaults", "--batch", "--raw", "--skip-column-names", "-u", "root"]
        cmd += ["-S", os.environ["MYSQL_SOCKET"], os.environ["MYSQL_DATABASE"]]
        out = subprocess.run(cmd, input=sql, capture_output=True, text=True, check=True).stdout
        return [line.split("\t") for line in out.splitlines() if line]

    @staticmethod
    def text(s: str) -> str:
        return f"CONVERT(X'{s.encode().hex()}' USING utf8mb4)" if s else "''"

    def all(self) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self.run("SELECT slug, title FROM notes ORDER BY slug;")]

    def get(self, slug: str) -> dict | None:
        rows = self.run(f"SELECT title, body FROM notes WHERE slug = {self.text(slug)};")
        return {"title": rows[0][0], "body": rows[0][1] if len(rows[0]) > 1 else ""} if rows else None

    def add(self, slug: str, title: str, body: str) -> None:
        vals = ", ".join(self.text(v) for v in (slug, title, body))
        self.run(f"INSERT INTO notes (slug, title, body) VALUES ({vals});")

    def delete(self, slug: str) -> None:
        self.run(f"DELETE FROM notes WHERE slug = {self.text(slug)};")


def page(title: str, body: str) -> str:
    return f"""<!doctype html><html><head><meta charset="utf-8">
<title>{html.escape(title)} - Notes</title></head>
<body><nav aria-label="main"><a href="/">All notes</a></nav>
<main><h1>{html.escape(title)}</h1>{body}</main></body></html>"""


def handler(store):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):
            pass

        def send(self, status: int, text: str, location: str = "") -> None:
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            if location:
                self.send_header("Location", location)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            path = urllib.parse.urlparse(self.path).path
            if path == "/healthz":
                return self.send(200, "ok")
            if path == "/":
                items = "".join(f'<li><a href="/note/{s}">{html.escape(t)}</a></li>' for s, t in store.all())
                form = (
                    '<form method="post" action="/new" id="new-note">'
                    '<label>Title <input type="text" name="title" id="title" required></label> '
                    '<label>Body <textarea name="body" id="body"></textarea></label> '
                    "<button>Save note</button></form>"
                )
                return self.send(200, page("All notes", f"<ul>{items}</ul>{form}"))
            m = re.fullmatch(r"/note/([a-z0-9-]+)", path)
            note = store.get(m.group(1)) if m else None
            if note is None:
                return self.send(404, page("Not found", "<p>No such note.</p>"))
            body = (
                f"<p>{html.escape(note['body'])}</p>"
                f'<form method="post" action="/note/{m.group(1)}/delete"><button>Delete note</button></form>'
            )
            return self.send(200, page(note["title"], body))

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            form = urllib.parse.parse_qs(self.rfile.read(n).decode())
            path = urllib.parse.urlparse(self.path).path
            if path == "/new":
                title = (form.get("title") or [""])[0].strip()
                if not title:
                    return self.send(400, page("Give a title", '<p><a href="/">Back</a></p>'))
                base = slug = slugify(title)
                i = 2
                while store.get(slug) is not None:
                    slug, i = f"{base}-{i}", i + 1
                store.add(slug, title, (form.get("body") or [""])[0])
                return self.send(303, "", location=f"/note/{slug}")
            m = re.fullmatch(r"/note/([a-z0-9-]+)/delete", path)
            if m:
                store.delete(m.group(1))
                return self.send(303, "", location="/")
            return self.send(404, page("Not found", ""))

    return Handler


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", choices=["files", "postgres", "mysql"], default="files")
    a = ap.parse_args()
    store = {"files": Files, "postgres": Postgres, "mysql": MySQL}[a.store]()
    ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), handler(store)).serve_forever()


if __name__ == "__main__":
    main()
