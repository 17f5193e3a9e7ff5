"""``AsyncEnv``: one environment on a server, made by its first reset."""

from __future__ import annotations

import random
import uuid
from typing import Any, Protocol

from .errors import ConnectionLost, HostLost, NotReset, ServerUnavailable, SiteDown, UnknownEnv
from .observation import to_gym

Obs = dict[str, Any]
Info = dict[str, Any]


class Requester(Protocol):
    """What an environment needs of its client (``AsyncClient`` is one): requests, and where
    an environment lives. Declared here so the layers stay one way: handle below client."""

    async def request(self, op: str, env: str | None = None, **args: Any) -> dict[str, Any]: ...

    def host_of(self, env: str) -> str | None: ...


class AsyncEnv:
    """One environment. Made lazily by the first ``reset``; ``close`` frees it.

    Observations are dicts with BrowserGym's keys (``goal``, ``url``,
    ``axtree_txt``, ``pruned_html``, ``last_action_error``, ...) and
    WebServ's own (``html``, ``clickable``, ``hoverable``, ``inputs``,
    ``selects``, ``tabs``). ``last_obs`` and ``last_info`` hold the latest
    ones (after reset, step, restore, or the fork that made this environment).

    On sites the server hosts (``shopping``, ``cms``, ``--sites``), an
    environment can be saved and branched::

        name = await env.snapshot()              # the site's state and the browser's
        children = await env.fork(4, name=name)  # 4 environments at that state
        obs = children[0].last_obs               # equal to the parent's at the snapshot
        await env.restore(name)                  # back to it, as a new episode
    """

    def __init__(self, client: Requester, site: str = "open", **make_args: Any):
        self.client = client
        self.site = site
        self.make_args = {k: v for k, v in make_args.items() if v is not None}
        self.id: str | None = None
        self.last_obs: Obs | None = None
        self.last_info: Info | None = None
        self._axtree = bool(self.make_args.get("observe", {}).get("axtree", True))
        # The task sampler: seeded by reset(seed=s), drawn once per reset after that.
        self._sampler: random.Random | None = None

    def __repr__(self) -> str:
        return f"AsyncEnv(site={self.site!r}, id={self.id!r})"

    async def __aenter__(self) -> AsyncEnv:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def host(self) -> str | None:
        """The URL of the server that holds this environment (once made)."""
        return self.client.host_of(self.id) if self.id else None

    async def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Obs, Info]:
        """Starts an episode: a fresh browser context at the start URL (or options["start_url"]).

        As gymnasium defines it: ``options`` apply to this episode only (a task given once is
        not pinned), ``seed`` seeds the environment's task sampler, and each later reset without
        a seed draws the next task of that sequence: the same seed gives the same tasks in any
        process, on any server with the same task list. The seed itself goes to the server for
        this episode (a MiniWoB++ page seeds its instance from it as BrowserGym does); the later
        resets' seeds are drawn from it, 0 to 2**32-1 (the range NumPy's seeding takes).
        """
        options = dict(options or {})
        if "task_id" in options:  # BrowserGym's spelling
            options["task"] = str(options.pop("task_id"))
        args: dict[str, Any] = {"options": options}
        if seed is not None:
            self._sampler = random.Random(seed)
            args["seed"] = seed
        elif self._sampler is not None:
            args["seed"] = self._sampler.getrandbits(32)
        if self.id is None:
            observe = {"axtree": self._axtree, **self.make_args.get("observe", {})}
            make: dict[str, Any] = {**self.make_args, "observe": observe, "site": self.site, **args}
            if self.site == "open" and "start_url" in options and "start_url" not in self.make_args:
                # The open site has no start of its own: the first page it is given is its default.
                make["start_url"] = options["start_url"]
            res = await self.client.request("make", **make)
            self.id = res["env"]
        else:
            res = await self.client.request("reset", self.id, **args)
        return self._begin(res)

    async def step(self, action: str | dict[str, Any]) -> tuple[Obs, float, bool, bool, Info]:
        """Acts, waits for the page to settle, and returns gymnasium's five values.

        A grading that failed (judge down, site unreachable) has no reward: it
        is NaN, never a silent 0, with the reason in ``info["eval_error"]``.

        Raises ``SiteDown`` when the environment's site instance died mid-episode,
        the terminating step included (the server does not grade it): the episode
        says nothing about the policy; ``reset`` brings a fresh instance.
        """
        res = await self.client.request("step", self._require(), action=action)
        info = dict(res.get("info", {}))
        if info.get("site_down"):
            raise SiteDown(str(info["site_down"]))
        info["env"] = self.id
        obs = to_gym(res["obs"], elapsed=float(info.get("elapsed_s", 0.0)))
        reward = float("nan") if res.get("reward") is None else float(res["reward"])
        self.last_obs, self.last_info = obs, info
        return obs, reward, bool(res["terminated"]), bool(res["truncated"]), info

    async def observe(self, *, screenshot: bool = False, axtree: bool = True, **options: Any) -> Obs:
        """The current observation, without acting; ``options`` are further observe options
        (``geometry``, ``marks``, ``layout``, ``format``, ``quality``, ``max_side``, ``browsergym``:
        BrowserGym's ``axtree_object`` and ``dom_object``; the screenshot stays bytes here)."""
        res = await self.client.request(
            "observe", self._require(), observe={"screenshot": screenshot, "axtree": axtree, **options}
        )
        return to_gym(res["obs"], elapsed=0.0)

    async def snapshot(self, name: str | None = None) -> str:
        """Saves the site's state and the browser's (cookies, history, storage, fields, scroll)
        under ``name`` (default: a fresh one) and returns the name.

        Raises ``NotSupported`` on the ``open`` site (it has no server state to capture).
        """
        name = name or f"snap-{uuid.uuid4().hex[:12]}"
        res = await self.client.request("snapshot", self._require(), name=name)
        return str(res.get("name", name))

    async def restore(self, name: str) -> tuple[Obs, Info]:
        """Returns to a snapshot this environment took, as a new episode (``info["cause"] == "restore"``)."""
        res = await self.client.request("restore", self._require(), name=name)
        return self._begin(res)

    async def fork(self, n: int = 1, name: str | None = None) -> list[AsyncEnv]:
        """``n`` new environments at a snapshot of this one (taken now when ``name`` is None).

        Each is already made, on this environment's server and its own copy of
        the site, with its first observation in ``last_obs`` (equal to this
        environment's at the snapshot) and ``last_info["cause"] == "fork"``;
        ``last_info["fork"]`` says how it was made and whether that equality
        was verified (``{"how": "rebuild" | "replay", "exact": bool}``;
        ``exact`` False flags a child that is not this environment's state,
        docs/protocol.md). Their futures are independent of this one's and of each other's. They
        keep this environment's settings (limits, observation extras); close
        them when done.
        """
        args: dict[str, Any] = {"n": int(n)}
        if name:
            args["name"] = name
        res = await self.client.request("fork", self._require(), **args)
        children = []
        for entry in res.get("envs", []):
            child = AsyncEnv(self.client, self.site, **self.make_args)
            child.id = entry["env"]
            child._begin(entry)
            children.append(child)
        return children

    async def state_diff(
        self,
        queries: list[dict[str, Any]] | None = None,
        *,
        max_rows: int | None = None,
        max_bytes: int | None = None,
    ) -> dict[str, Any]:
        """What changed in the site's state database since the episode began (docs/protocol.md,
        ``state_diff``): ``{"diff": {db, changes, columns, total, truncated, schema_changed},
        "queries": [{base, now, error}]}``, each of ``queries`` (``{"sql", "args"}``) run on the start
        state and now. For trainers: the environment must be made with ``state_diff=True`` on a hosted
        site that declares its state (``state_db``, or ``state:`` files or a PostgreSQL database read
        as tables, ``db`` ``@state``; ``NotSupported`` otherwise). The policy's tools never offer it.
        """
        args: dict[str, Any] = {}
        if queries:
            args["queries"] = list(queries)
        if max_rows is not None:
            args["max_rows"] = max_rows
        if max_bytes is not None:
            args["max_bytes"] = max_bytes
        return await self.client.request("state_diff", self._require(), **args)

    async def close(self) -> None:
        """Closes the environment on the server. Safe to call twice, and after its server is gone."""
        env_id, self.id = self.id, None
        if env_id is not None:
            try:
                await self.client.request("close", env_id)
            except (UnknownEnv, HostLost, ConnectionLost, ServerUnavailable):
                pass

    def _begin(self, res: dict[str, Any]) -> tuple[Obs, Info]:
        """An episode's first observation and info (make, reset, restore, fork)."""
        info = dict(res.get("info", {}))
        info["env"] = self.id
        obs = to_gym(res["obs"], elapsed=0.0)
        self.last_obs, self.last_info = obs, info
        return obs, info

    def _require(self) -> str:
        if self.id is None:
            raise NotReset("call reset() first: the environment is made by its first reset")
        return self.id


__all__ = ["AsyncEnv", "Info", "Obs"]
