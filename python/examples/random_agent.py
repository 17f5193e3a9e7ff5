"""A random agent on the open environment: a few episodes on a local page.

    python python/examples/random_agent.py [URL]

Without a URL it serves a small page itself on 127.0.0.1. The server is
$WEBSERV_URL, or a local `webserv serve` started for the run.
"""

from __future__ import annotations

import random
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gymnasium as gym

PAGE = b"""<!doctype html><title>Toy shop</title>
<nav aria-label="Shop"><a href="/">Home</a> <a href="/?cart">Cart</a></nav>
<input placeholder="Search"><select name="size"><option>S</option><option>M</option></select>
<button onclick="this.textContent = 'Added'">Add to cart</button>"""


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args: object) -> None:
        pass


def random_action(obs: dict, rng: random.Random) -> str:
    """Picks an action over the ids the observation offers."""
    choices = [f'click("{i}")' for i in obs["clickable"]]
    choices += [f'fill("{i["id"]}", "mug")' for i in obs["inputs"] if i["editable"]]
    choices += [f'select_option("{s["id"]}", "{rng.choice(s["options"])["text"]}")' for s in obs["selects"]]
    return rng.choice(choices) if choices else "noop()"


def main() -> None:
    url = sys.argv[1] if len(sys.argv) > 1 else None
    if url is None:
        srv = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{srv.server_address[1]}/"
    rng = random.Random(0)
    env = gym.make("webserv/open", start_url=url, goal="Add a mug to the cart", max_steps=5)
    for episode in range(3):
        obs, info = env.reset(seed=episode)
        done = False
        while not done:
            action = random_action(obs, rng)
            obs, reward, terminated, truncated, info = env.step(action)
            err = f"  error: {obs['last_action_error']}" if obs["last_action_error"] else ""
            print(
                f"episode {episode} step {info['step']}: {action:40} {info['settle_ms']:6.0f} ms settle{err}"
            )
            done = terminated or truncated
    env.close()


if __name__ == "__main__":
    main()
