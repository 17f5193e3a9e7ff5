"""``python -m webserv --version``: the package's version, and the server's.

    $ python -m webserv --version
    webserv 0.1.0 (Python package; protocol 1)
    server binary: /path/to/bin/webserv (webserv 0.1.0 ...)

The server binary is the one the package would start (``$WEBSERV_BIN``, the
PATH, the checkout the package was built from); with ``$WEBSERV_URL`` set, the
server there is asked too.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys

from . import __version__
from .connection import PROTOCOL_VERSION
from .launcher import find_binary, missing_binary_message


def binary_version(binary: str) -> str:
    """What ``webserv version`` prints, or why there is nothing."""
    try:
        run = subprocess.run([binary, "version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"cannot run it: {e}"
    if run.returncode == 0:
        text = (run.stdout or run.stderr).strip()
        return text.splitlines()[0] if text else "it printed no version"
    return "it reports no version (this build has no `webserv version` command)"


def url_version(url: str) -> str:
    """The protocol (and version, when it says one) of the server at url, from its hello."""
    from .connection import Connection
    from .errors import WebServError

    async def hello() -> dict[str, object]:
        conn = Connection(url.split(",")[0].strip(), token=os.environ.get("WEBSERV_TOKEN"), timeout=20)
        try:
            return await conn.connect()
        finally:
            await conn.close()

    try:
        h = asyncio.run(hello())
    except WebServError as e:
        return f"not reachable: {e}"
    version = f"{h.get('server', 'webserv')} {h['version']}; " if h.get("version") else ""
    return f"{version}protocol {h.get('protocol')}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m webserv", description=__doc__.split("\n")[0])
    ap.add_argument("--version", action="store_true", help="print the package's and the server's versions")
    args = ap.parse_args(argv)
    if not args.version:
        ap.print_help()
        return 2
    print(f"webserv {__version__} (Python package; protocol {PROTOCOL_VERSION})")
    binary = find_binary()
    if binary is None:
        print(f"server binary: none found. {missing_binary_message()}")
    else:
        print(f"server binary: {binary} ({binary_version(binary)})")
    url = os.environ.get("WEBSERV_URL")
    if url:
        print(f"server at $WEBSERV_URL {url}: {url_version(url)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
