"""Observations within a token budget (observe.max_tokens, docs/envcore.md "Token budget"), in
real Chromium: on the bundled shop's pages and on generated pages far over any budget, the text
counts at most N tokens as Hugging Face's tokenizers package counts it (and exactly what the server
says), the first screen's elements keep their ids, the text is byte-stable, and an element left out
is reached by scrolling, as the closing line says, or a folded one with expand.

The tokenizers are trained here with the tokenizers package on the shop's pages (no download): a
BPE over words, a byte-level BPE like the large models' and one split as Llama 3 splits; a fourth
is a large model's own."""

from __future__ import annotations

import asyncio
import multiprocessing
import re
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import anthropic
import pytest
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers

import webserv
from webserv.integrations.trl import web_environment
from webserv.integrations.verl import WebAgentLoop, WebTool
from webserv.options import EnvOptions
from webserv.testing import PageServer

BUDGETS = (256, 1024, 4096)
LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SHOP_PAGES = ("/", "/search?q=tee", "/product/sierra-organic-pocket-tee-tsh-1000", "/cart")


def _table() -> str:
    rows = "".join(
        f"<tr><td>Item {i}</td><td>${i % 97}.{i % 100:02d}</td>"
        f'<td><a href="/item?i={i}">Open {i}</a></td></tr>'
        for i in range(5000)
    )
    return f"<!doctype html><title>Table</title><h1>Inventory</h1><table>{rows}</table>"


def _article() -> str:
    words = "the quick brown fox jumps over the lazy dog while shoppers compare prices ".split()
    paragraph = " ".join(words[(i * 7) % len(words)] for i in range(170))  # about 1 kB
    parts = ["<!doctype html><title>Article</title><h1>A long article</h1><button>Subscribe</button>"]
    for i in range(2000):
        if i % 100 == 0:
            parts.append(f"<h2>Chapter {i // 100}</h2>")
        parts.append(f"<p>{i}: {paragraph}</p>")
    return "".join(parts)


def _links() -> str:
    links = "".join(f'<li><a href="/done?i={i}">Link number {i}</a></li>' for i in range(3000))
    return f"<!doctype html><title>Links</title><h1>Directory</h1><ul>{links}</ul>"


GENERATED = {"/table": _table(), "/article": _article(), "/links": _links()}


def _generated(path: str, query: dict[str, str]) -> str:
    """The generated pages; any other path is where a link leads (``?i=N``: "Reached N")."""
    i = query.get("i", "?")
    return GENERATED.get(path, f"<!doctype html><title>Reached {i}</title><h1>Reached {i}</h1>")


@pytest.fixture(scope="module")
def generated() -> Iterator[str]:
    with PageServer(_generated) as srv:
        yield srv.url


async def _make(
    client: webserv.AsyncClient, site: str, url: str, observe: dict[str, Any]
) -> tuple[str, dict]:
    args: dict[str, Any] = {"site": site, "observe": observe}
    if site == "open":
        args["start_url"] = url
    else:
        args["task"] = "shopping.0"  # one task: the same start state (signed in or not) every time
    r = await client.request("make", **args)
    env = r["env"]
    if site != "open" and url != "/":
        r = await client.request("step", env, action=f'goto("{url}")', observe=observe)
    return env, r["obs"]


@pytest.fixture(scope="module")
def trained(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two tokenizers, trained on the shop's pages as the server shows them."""

    async def shop_texts() -> list[str]:
        async with webserv.AsyncClient(server) as client:
            env, obs = await _make(client, "shopping", "/", {"axtree": True})
            texts = [obs["axtree"], obs["html"]]
            for page in SHOP_PAGES[1:]:
                r = await client.request("step", env, action=f'goto("{page}")', observe={"axtree": True})
                texts += [r["obs"]["axtree"], r["obs"]["html"]]
            await client.request("close", env)
            return texts

    texts = asyncio.run(shop_texts())
    out = tmp_path_factory.mktemp("tokenizers")
    words = Tokenizer(models.BPE(unk_token="[UNK]"))
    words.normalizer = normalizers.NFKC()
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    words.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=800, special_tokens=["[UNK]"]))
    words.save(str(out / "words.json"))
    byte = Tokenizer(models.BPE())
    byte.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    byte.train_from_iterator(
        texts,
        trainers.BpeTrainer(vocab_size=1200, special_tokens=["<|endoftext|>"], initial_alphabet=alphabet),
    )
    byte.save(str(out / "bytes.json"))
    # Split as Llama 3 splits (its regular expression, then bytes).
    llama = Tokenizer(models.BPE(ignore_merges=True))
    llama.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    llama.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=1200, initial_alphabet=alphabet))
    llama.save(str(out / "llama.json"))
    # And a large model's: the 65,000-token byte-level BPE (NFKC) the anthropic package ships
    # (installed with the bench extra).
    claude = Path(anthropic.__file__).parent / "tokenizer.json"
    files = {name: out / f"{name}.json" for name in ("words", "bytes", "llama")}
    return {**files, "claude": claude}


_loaded: dict[Path, Tokenizer] = {}


def count(path: Path, text: str) -> int:
    """The tokens of text as the tokenizers package counts them with the file at path."""
    if path not in _loaded:
        _loaded[path] = Tokenizer.from_file(str(path))
    return len(_loaded[path].encode(text, add_special_tokens=False).ids)


_counter: ProcessPoolExecutor | None = None


async def acount(path: Path, text: str) -> int:
    """count, in another process: counting a page of megabytes holds the interpreter (the package
    does not release it) long enough on a loaded host that the client would miss the server's
    pings, and the server end the connection and its environments."""
    global _counter
    if _counter is None:
        _counter = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    return await asyncio.get_running_loop().run_in_executor(_counter, count, path, text)


def first_screen_ids(obs: dict[str, Any]) -> set[str]:
    """The interactive elements (clickable or inputs) the first screen shows."""
    interactive = set(obs["clickable"]) | {i["id"] for i in obs["inputs"]} | {s["id"] for s in obs["selects"]}
    props = obs["extra_element_properties"]
    return {i for i in interactive if props.get(i, {}).get("in_viewport", 0) > 0}


def test_budget_fits_and_counts_exactly(server: str, generated: str, trained: dict[str, Path]) -> None:
    pages = [("shopping", p) for p in SHOP_PAGES] + [("open", generated + p) for p in GENERATED]

    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            for site, url in pages:
                env, full = await _make(client, site, url, {"axtree": True, "geometry": True})
                on_screen = first_screen_ids(full)
                for name, path in trained.items():
                    whole = await acount(path, full["axtree"])
                    for n in BUDGETS:
                        observe = {"max_tokens": n, "tokenizer": str(path)}
                        obs = (await client.request("observe", env, observe=observe))["obs"]
                        text, where = obs["axtree"], (url, name, n)
                        assert await acount(path, text) == obs["obs_tokens"] <= n, where
                        assert obs.get("obs_truncated", False) == (whole > n), where
                        assert obs["html"] == "", where  # only the budgeted view is sent
                        if whole <= n:
                            assert text == full["axtree"], where
                        else:
                            assert text.splitlines()[-1].startswith(
                                "[observation cut to its token budget:"
                            ), where
                        if n == 4096 or whole <= n:
                            kept = set(re.findall(r"\[([^\]\s]+)\] ", text))
                            assert on_screen <= kept, (where, sorted(on_screen - kept)[:5])
                        # Byte-stable: the same page observed again gives the same text.
                        again = (await client.request("observe", env, observe=observe))["obs"]
                        assert again["axtree"] == text, where
                if url.endswith(("/table", "/links")):
                    assert (
                        "more items like this"
                        in (
                            await client.request(
                                "observe",
                                env,
                                observe={"max_tokens": 4096, "tokenizer": str(trained["bytes"])},
                            )
                        )["obs"]["axtree"]
                    )
                await client.request("close", env)

    asyncio.run(main())


class _Nesting(HTMLParser):
    """Checks that every element a text opens is closed, in order (void elements aside)."""

    VOID = frozenset({"input", "img", "br", "hr", "area", "wbr", "meta", "link"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.errors.append(f"</{tag}> closes {'>'.join(self.open)}")
        else:
            self.open.pop()


def nesting_errors(text: str) -> list[str]:
    parser = _Nesting()
    parser.feed(text)
    parser.close()
    return parser.errors + ([f"left open: {'>'.join(parser.open)}"] if parser.open else [])


def test_the_html_view_fits_its_budget_and_stays_html(
    server: str, generated: str, trained: dict[str, Path]
) -> None:
    """With view "html" the budget prunes the HTML view: counted exactly, within N, still HTML
    (every element closed in order), the first screen's ids kept at 4096, byte-stable, and the
    axtree left out."""
    pages = [("shopping", p) for p in SHOP_PAGES] + [("open", generated + p) for p in GENERATED]

    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            for site, url in pages:
                env, full = await _make(client, site, url, {"geometry": True})
                on_screen = first_screen_ids(full)
                for name in ("bytes", "claude"):
                    path = trained[name]
                    for n in BUDGETS:
                        observe = {"max_tokens": n, "tokenizer": str(path), "view": "html"}
                        obs = (await client.request("observe", env, observe=observe))["obs"]
                        text, where = obs["html"], (url, name, n)
                        assert await acount(path, text) == obs["obs_tokens"] <= n, where
                        assert not obs.get("axtree"), where
                        assert not nesting_errors(text), (where, nesting_errors(text)[:3])
                        assert text.splitlines()[0].startswith("<title>"), where
                        if obs.get("obs_truncated"):
                            last = text.splitlines()[-1]
                            assert last.startswith("<!-- [observation cut to its token budget:"), where
                        if n == 4096:
                            kept = set(re.findall(r' data-semantic-id="([^"]+)"', text))
                            assert on_screen <= kept, (where, sorted(on_screen - kept)[:5])
                        again = (await client.request("observe", env, observe=observe))["obs"]
                        assert again["html"] == text, where
                await client.request("close", env)

    asyncio.run(main())


def test_two_environments_on_one_state_give_the_same_bytes(
    server: str, generated: str, trained: dict[str, Path]
) -> None:
    observe = {"max_tokens": 1024, "tokenizer": str(trained["bytes"])}

    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            for site, url in (("open", generated + "/table"), ("shopping", SHOP_PAGES[2])):
                (a, one), (b, two) = await asyncio.gather(
                    _make(client, site, url, observe), _make(client, site, url, observe)
                )
                assert one["axtree"] == two["axtree"] and one["obs_tokens"] == two["obs_tokens"]
                await asyncio.gather(client.request("close", a), client.request("close", b))

    asyncio.run(main())


def test_an_element_left_out_is_reached_by_scrolling(
    server: str, generated: str, trained: dict[str, Path]
) -> None:
    """The budget keeps the top of the links page; the closing line says to scroll down, and
    scrolling brings a link that was left out into the text, where it can be clicked."""
    observe = {"max_tokens": 1024, "tokenizer": str(trained["words"])}

    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            env, obs = await _make(client, "open", generated + "/links", observe)
            text = obs["axtree"]
            assert obs["obs_truncated"] and "scroll down" in text.splitlines()[-1]
            kept = set(re.findall(r"\[([^\]\s]+)\] link", text))
            target = next(f"link-number-{i}" for i in range(3000) if f"link-number-{i}" not in kept)
            for _ in range(10):
                if f"[{target}] " in obs["axtree"]:
                    break
                obs = (await client.request("step", env, action="scroll(0, 300)", observe=observe))["obs"]
                assert obs["obs_tokens"] <= 1024
            assert f"[{target}] " in obs["axtree"], (target, obs["axtree"])
            obs = (await client.request("step", env, action=f'click("{target}")'))["obs"]
            assert obs["title"].startswith("Reached "), obs["title"]
            await client.request("close", env)

    asyncio.run(main())


def test_a_folded_row_is_reached_with_expand(server: str, generated: str, trained: dict[str, Path]) -> None:
    """Over 1024 tokens the 5,000-row table folds the rows below the screen into one line with an
    id; expand("fold-…") shows them first, page by page, without touching the page (no scroll),
    and a row that was folded is clicked by its id. A fold the observation did not show is the
    agent's error."""
    observe = {"max_tokens": 1024, "tokenizer": str(trained["bytes"])}
    row = re.compile(r'\[([^\]\s]+)\] link "Open 60"')

    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            env, obs = await _make(client, "open", generated + "/table", observe)
            assert not row.search(obs["axtree"])
            r = await client.request("step", env, action='expand("fold-00000000-2")', observe=observe)
            assert r["info"]["action_error_code"] == "missing", r["info"]
            assert "no folded part" in r["obs"]["last_action_error"]
            for _ in range(5):
                if row.search(obs["axtree"]):
                    break
                fold = re.findall(r'expand\("(fold-[0-9a-f]{8}-\d+)"\)', obs["axtree"])[-1]
                r = await client.request("step", env, action=f'expand("{fold}")', observe=observe)
                obs = r["obs"]
                assert not r["info"].get("action_error"), r["info"]
                assert await acount(trained["bytes"], obs["axtree"]) == obs["obs_tokens"] <= 1024
                assert f"showing {fold} first" in obs["axtree"].splitlines()[-1]
                assert obs["viewport"]["scroll_y"] == 0
            found = row.search(obs["axtree"])
            assert found, obs["axtree"]
            obs = (await client.request("step", env, action=f'click("{found[1]}")'))["obs"]
            assert obs["title"] == "Reached 60", obs["title"]
            await client.request("close", env)

    asyncio.run(main())


def test_bad_budgets_are_refused(server: str, trained: dict[str, Path]) -> None:
    async def main() -> None:
        async with webserv.AsyncClient(server) as client:
            for observe, says in (
                ({"max_tokens": 1024}, "needs observe.tokenizer"),
                ({"max_tokens": 10, "tokenizer": str(trained["words"])}, "max_tokens must be 128 or more"),
                ({"tokenizer": str(trained["words"])}, "set observe.max_tokens too"),
                ({"max_tokens": 1024, "tokenizer": "/nonexistent/tokenizer.json"}, "no such file"),
                ({"max_token": 1024}, "did you mean max_tokens"),
                (
                    {"max_tokens": 1024, "tokenizer": str(trained["words"]), "view": "html", "axtree": True},
                    "prunes one text view",
                ),
                ({"view": "pdf"}, 'view must be "axtree" or "html"'),
            ):
                with pytest.raises(webserv.errors.BadArgs, match=says):
                    await client.request("make", site="open", observe=observe)

    asyncio.run(main())


def test_env_options_carry_the_budget() -> None:
    opts = EnvOptions.of(max_tokens=2048, tokenizer="qwen")
    assert opts.request()["observe"] == {
        "screenshot": False,
        "axtree": True,
        "max_tokens": 2048,
        "tokenizer": "qwen",
    }
    html = EnvOptions.of(max_tokens=2048, tokenizer="qwen", observe={"view": "html"})
    assert html.request()["observe"]["axtree"] is False  # the budget prunes the HTML view
    space = opts.observation_space()
    assert "obs_tokens" in space.spaces and "obs_truncated" in space.spaces


def test_the_adapters_pass_the_budget_down(server: str, generated: str, trained: dict[str, Path]) -> None:
    """TRL's and verl's adapters take a budget and the model's tokenizer.json: the page text the
    model reads (render: the goal, then the page) holds at most that many tokens of page."""
    n, path = 1024, trained["bytes"]
    env = web_environment(site="open", server_url=server, max_obs_tokens=n, obs_tokenizer=str(path))()
    try:
        env.reset(start_url=generated + "/article")
        assert env.web_env is not None
        obs = env.web_env.last_obs
        assert obs is not None and obs["obs_truncated"] and count(path, obs["axtree_txt"]) <= n
    finally:
        if env.web_env is not None:
            env.web_env.close()
    with pytest.raises(ValueError, match="needs obs_tokenizer"):
        web_environment(site="open", max_obs_tokens=n)

    async def verl() -> None:
        tool = WebTool(server_url=server, max_obs_tokens=n, obs_tokenizer=str(path))
        await tool.create("req", start_url=generated + "/table")
        text, _, _ = await tool.execute("req", {"action": "scroll(0, 600)"})
        page = text[text.index("RootWebArea") :]
        assert await acount(path, page) <= n and "[observation cut to its token budget:" in page
        await tool.release("req")

    asyncio.run(verl())


def test_verl_agent_loop_takes_the_budget_from_its_tokenizer(tmp_path: Path) -> None:
    """verl hands its agent loop the model's tokenizer: one loaded from a directory with a
    tokenizer.json gives the budget its file, so max_obs_tokens alone is enough."""
    (tmp_path / "tokenizer.json").write_text("{}")

    class HFTokenizer:  # what verl passes: a transformers tokenizer, loaded from a directory
        name_or_path = str(tmp_path)

    loop = WebAgentLoop(tokenizer=HFTokenizer(), server_url="ws://127.0.0.1:9", max_obs_tokens=512)
    assert loop.make_args["observe"] == {"max_tokens": 512, "tokenizer": str(tmp_path / "tokenizer.json")}
    with pytest.raises(ValueError, match="needs obs_tokenizer"):
        WebAgentLoop(server_url="ws://127.0.0.1:9", max_obs_tokens=512)
