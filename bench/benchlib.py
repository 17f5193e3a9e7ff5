"""What the Python benchmark suites share: machine facts, reports, Playwright launch."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
# The flags the closed network needs (the same as the Go side's).
CHROMIUM_ARGS = [
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def machine() -> dict[str, Any]:
    """Cores, memory and versions: every figure states them."""
    mem = ""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f}"
    try:
        run = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=30)
        chromium = run.stdout.strip()
    except OSError:
        chromium = ""
    out: dict[str, Any] = {
        "cores": os.cpu_count(),
        "memory_gib": mem,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "chromium": chromium,
    }
    for pkg in ("playwright", "browsergym-core", "tokenizers"):
        try:
            from importlib.metadata import version

            out[pkg] = version(pkg)
        except Exception:  # noqa: BLE001 (not installed: not reported)
            pass
    return out


def header(suite: str, command: str, smoke: bool) -> dict[str, Any]:
    return {"suite": suite, "smoke": smoke, "command": command, "started": time.time(), "machine": machine()}


def write(out: Path, rep: dict[str, Any], md: str, *, picture: bool = True) -> None:
    """Writes <suite>.json and <suite>.md (machine and command first) into out; the .md links
    <suite>.png, which the suite draws after, unless ``picture`` is False (a suite without one)."""
    out.mkdir(parents=True, exist_ok=True)
    rep["seconds"] = time.time() - rep["started"]
    suite = rep["suite"]
    (out / f"{suite}.json").write_text(json.dumps(rep, indent=2) + "\n")
    m = rep["machine"]
    text = [f"# {suite}\n", rep.get("headline", ""), ""]
    versions = ", ".join(
        f"{k} {m[k]}" for k in ("python", "playwright", "browsergym-core", "tokenizers") if k in m
    )
    cores = f"{m['cores']} cores, {m['memory_gib']} GiB, kernel {m['kernel']}"
    text.append(f"Machine: {cores}; {m['chromium']}; {versions}.")
    day = time.strftime("%Y-%m-%d", time.gmtime(rep["started"]))
    text.append(f"Command: `{rep['command']}` ({day}, {rep['seconds']:.0f} s).\n")
    if rep.get("smoke"):
        text.append("**Smoke run: a few samples to check the output, not figures to quote.**\n")
    text.append(md)
    if picture:
        text.append(f"\n![{suite}]({suite}.png)\n")
    (out / f"{suite}.md").write_text("\n".join(text))


def chromium_executable() -> str:
    """A wrapper that runs Debian's Chromium with the closed network's flags.

    For launchers that take an executable but not extra arguments
    (BrowserGym passes its own `args` to Playwright).
    """
    global _wrapper
    if _wrapper is None:
        d = tempfile.mkdtemp(prefix="webserv-chromium-")
        path = os.path.join(d, "chromium")
        with open(path, "w") as f:
            f.write(f'#!/bin/sh\nexec {CHROMIUM} {" ".join(CHROMIUM_ARGS)} "$@"\n')
        os.chmod(path, 0o755)
        _wrapper = path
    return _wrapper


_wrapper: str | None = None


def use_debian_chromium() -> None:
    """Makes every Playwright launch in this process run Debian's Chromium.

    BrowserGym starts a second browser (its chat window) with Playwright's
    default executable, ignoring its pw_chromium_kwargs; so the default
    location itself (PLAYWRIGHT_BROWSERS_PATH/chromium-<revision>) is made to
    hold the wrapper. No browser is downloaded. Call before Playwright starts.
    """
    import playwright

    browsers = Path(playwright.__file__).parent / "driver" / "package" / "browsers.json"
    rev = next(b["revision"] for b in json.loads(browsers.read_text())["browsers"] if b["name"] == "chromium")
    root = Path(tempfile.mkdtemp(prefix="webserv-pw-browsers-"))
    exe = root / f"chromium-{rev}" / "chrome-linux" / "chrome"
    exe.parent.mkdir(parents=True)
    exe.symlink_to(chromium_executable())
    os.environ["PLAYWRIGHT_BROWSERS_PATH"] = str(root)


async def launch_playwright(pw: Any) -> Any:
    """Debian's Chromium through Playwright (no browser download)."""
    return await pw.chromium.launch(executable_path=chromium_executable(), headless=True)
