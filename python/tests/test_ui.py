"""Human approval through the server's web UI, as a Python agent sees it."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request

import webserv


def _post_review(server: str, env: str, approve: bool, comment: str) -> int:
    """What the live view's Approve and Reject buttons send, once the action waits."""
    base = server.replace("ws://", "http://").split("/v1/")[0].rstrip("/")
    while True:
        with urllib.request.urlopen(f"{base}/ui/api/envs/{env}") as r:
            if json.load(r).get("pending"):
                break
        time.sleep(0.05)
    body = json.dumps({"approve": approve, "comment": comment}).encode()
    req = urllib.request.Request(
        f"{base}/ui/api/envs/{env}/review", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req) as r:
        return r.status


def test_rejected_action_is_not_run_and_the_agent_reads_why(server: str, pages: str) -> None:
    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            env = client.env(start_url=f"{pages}/page?n=3", approve=True, approve_timeout_ms=30000)
            await env.reset()
            assert env.id is not None
            loop = asyncio.get_running_loop()
            verdict = loop.run_in_executor(None, _post_review, server, env.id, False, "wrong button")
            obs, _, _, _, info = await env.step('click("load")')
            assert await verdict == 200
            assert "rejected" in obs["last_action_error"] and "wrong button" in obs["last_action_error"]
            assert "loaded 3" not in obs["html"]
            assert info["review"]["verdict"] == "rejected"

            verdict = loop.run_in_executor(None, _post_review, server, env.id, True, "")
            obs, _, _, _, info = await env.step('click("load")')
            assert await verdict == 200
            assert "loaded 3" in obs["html"] and not obs["last_action_error"]
            assert info["review"]["verdict"] == "approved"
            await env.close()

    asyncio.run(main())
