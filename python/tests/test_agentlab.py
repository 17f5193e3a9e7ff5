"""AgentLab on WebServ (webserv.agentlab): AgentLab's own GenericAgent and loop over WebServ's
tasks, its chat model a stand-in the test starts on 127.0.0.1 (standin_model.py).

AgentLab is installed by `make venv` (`.[agentlab]` and `agentlab` with --no-deps:
docs/agentlab.md); these tests fail, never skip, when it is not.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from conftest import sites_server
from standin_model import NOTE, StandInModel

if importlib.util.find_spec("agentlab") is None or importlib.util.find_spec("litellm") is None:
    raise ImportError(
        "AgentLab is not installed in this venv: `make venv` installs it (.[agentlab] and "
        "agentlab==0.4.2 --no-deps; docs/agentlab.md)"
    )
# No network but 127.0.0.1: tiktoken (AgentLab counts the prompt's tokens) reads the encodings
# litellm ships, and litellm its bundled price table, before either is imported.
_litellm = importlib.util.find_spec("litellm")
assert _litellm is not None and _litellm.origin is not None
os.environ["TIKTOKEN_CACHE_DIR"] = str(Path(_litellm.origin).parent / "litellm_core_utils" / "tokenizers")
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from agentlab.agents.generic_agent import AGENT_4o_MINI, GenericAgentArgs  # noqa: E402
from agentlab.analyze import inspect_results  # noqa: E402
from agentlab.experiments.loop import ExpArgs  # noqa: E402
from agentlab.llm.chat_api import OpenAIModelArgs  # noqa: E402

from webserv.agentlab import AgentLabEnv, Study, WebServEnvArgs, benchmark, task_names  # noqa: E402

EXAMPLE_SITES = Path(__file__).resolve().parents[2] / "examples" / "sites"

# "[ID] button 'NAME'" lines of the accessibility tree text GenericAgent's prompt shows.
BUTTON = re.compile(r"\[([^\]\s]+)\] button '([^']*)'")


def click_the_button(prompt: str) -> str:
    """The stand-in's script: click the button the goal names ("... the "X" button"), or the
    only button, by the id the prompt's accessibility tree gives it."""
    goal = prompt.split("# Goal", 1)[1].split("\n#", 1)[0] if "# Goal" in prompt else ""
    wanted = re.search(r'"([^"]+)" button', goal)
    buttons = BUTTON.findall(prompt.split("# Goal", 1)[-1])
    pick = [b for b, name in buttons if wanted is None or name == wanted.group(1)]
    action = f"click('{pick[0]}')" if pick else "noop()"
    return f"<think>{NOTE}the goal names this button</think>\n<action>{action}</action>"


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInModel]:
    m = StandInModel([{"answer": click_the_button, "keep": True}])
    # AgentLab's OpenAI chat model is openai's client: it reads these.
    monkeypatch.setenv("OPENAI_BASE_URL", m.url)
    monkeypatch.setenv("OPENAI_API_KEY", "stand-in")
    yield m
    m.stop()


def agent_args() -> GenericAgentArgs:
    """AgentLab's GPT-4o-mini GenericAgent, its model the stand-in (OPENAI_BASE_URL)."""
    chat = AGENT_4o_MINI.chat_model_args
    assert isinstance(chat, OpenAIModelArgs)
    return GenericAgentArgs(chat_model_args=chat, flags=AGENT_4o_MINI.flags)


def test_generic_agents_obs_preprocessor_reads_webservs_observation(server: str, model: StandInModel) -> None:
    args = agent_args()
    args.set_benchmark(benchmark(["miniwob.click-test"]), demo_mode=False)
    agent = args.make_agent()
    env = WebServEnvArgs(task_name="miniwob.click-test", max_steps=3).make_env(
        agent.action_set.to_python_code, exp_dir=None
    )
    try:
        assert isinstance(env, AgentLabEnv)
        obs, _ = env.reset(seed=0)
        obs = agent.obs_preprocessor(obs)
        button = BUTTON.findall(obs["axtree_txt"])
        assert [name for _, name in button] == ["Click Me!"], obs["axtree_txt"]
        assert f'bid="{button[0][0]}"' in obs["pruned_html"], obs["pruned_html"]
        assert obs["screenshot_som"].shape == obs["screenshot"].shape
        assert obs["goal_object"] == [{"type": "text", "text": obs["goal"]}] and obs["goal"]
        _, reward, terminated, _, info = env.step(f"click('{button[0][0]}')")
        assert (reward, terminated) == (1.0, True)
        assert info["action_exec_start"] <= info["action_exec_stop"]
    finally:
        env.close()


@pytest.mark.parametrize("task", ["miniwob.click-test", "miniwob.click-button"])
def test_generic_agent_solves_miniwob_in_agentlabs_loop(
    server: str, model: StandInModel, tmp_path: Path, task: str
) -> None:
    args = agent_args()
    bench = benchmark([task], name="miniwob-webserv", max_steps=3)
    args.set_benchmark(bench, demo_mode=False)
    exp = ExpArgs(agent_args=args, env_args=bench.env_args_list[0])
    exp.prepare(tmp_path)
    exp.run()
    summary = json.loads((Path(exp.exp_dir) / "summary_info.json").read_text())
    assert summary["err_msg"] is None, summary["stack_trace"]
    assert summary["cum_reward"] == 1.0 and summary["terminated"], summary
    assert summary["n_steps"] == 1, summary
    assert (Path(exp.exp_dir) / "step_0.pkl.gz").exists() and (Path(exp.exp_dir) / "exp_args.pkl").exists()
    # The stand-in was asked, and answered from what the page showed.
    assert model.requests and "button" in json.dumps(model.requests[0]["messages"])


# Ten WebServ tasks: MiniWoB's (two the stand-in solves) and the bundled shop's and CMS's.
TEN = [
    "miniwob.click-test",
    "miniwob.click-button",
    "miniwob.click-link",
    "miniwob.click-dialog",
    "miniwob.focus-text",
    "miniwob.enter-text",
    "miniwob.click-checkboxes",
    "miniwob.click-tab",
    "shopping.1",
    "cms.1",
]


def test_agentlabs_study_over_ten_webserv_tasks_writes_its_result_files(
    server: str, model: StandInModel, tmp_path: Path
) -> None:
    """AgentLab's own Study (imported from AgentLab's module through webserv.agentlab, without
    BrowserGym's WebArena package) runs GenericAgent over ten tasks and writes its files."""
    from agentlab.experiments.study import Study as AgentLabsStudy

    assert Study is AgentLabsStudy
    bench = benchmark(TEN, name="webserv-ten", max_steps=2)
    study = Study([agent_args()], bench, logging_level=logging.WARNING)
    study.run(n_jobs=1, parallel_backend="sequential", n_relaunch=1, exp_root=tmp_path)

    assert study.dir is not None and study.dir.parent == tmp_path
    files = {p.name for p in study.dir.iterdir()}
    assert {"study.pkl.gz", "result_df_trial_1_of_1.csv", "summary_df_trial_1_of_1.csv"} <= files, files
    assert study.reproducibility_info["benchmark_version"] == bench.get_version()
    assert bench.get_version().startswith("webserv ")
    df = inspect_results.load_result_df(study.dir)
    assert df is not None
    df = df.reset_index()  # AgentLab indexes its table by task name
    assert sorted(df["env.task_name"]) == sorted(TEN), df
    rows = df.set_index("env.task_name")
    assert rows["err_msg"].isna().all(), rows["err_msg"].dropna().to_dict()
    # Every episode ended: solved (terminated), or cut at max_steps (truncated).
    assert (rows["terminated"] | rows["truncated"]).all(), rows[["terminated", "truncated"]]
    assert rows.loc["miniwob.click-test", "cum_reward"] == 1.0
    assert rows.loc["miniwob.click-button", "cum_reward"] == 1.0
    for e in study.exp_args_list:
        files = {p.name for p in Path(e.exp_dir).iterdir()}
        assert {"exp_args.pkl", "summary_info.json", "step_0.pkl.gz", "experiment.log"} <= files, files
        assert "screenshot_step_0.png" in files, files
    # The stand-in for BrowserGym's WebArena package refuses what needs the real one.
    from agentlab.experiments import multi_server

    with pytest.raises(RuntimeError, match="pip install browsergym-webarena"):
        multi_server.WebArenaInstance()


def test_task_names_of_the_env_args_are_webservs_ids() -> None:
    env_args = benchmark(["webserv/shopping.3", "cms.1"], seeds=(0, 1)).env_args_list
    assert [(e.task_name, e.task_seed) for e in env_args] == [
        ("shopping.3", 0),
        ("shopping.3", 1),
        ("cms.1", 0),
        ("cms.1", 1),
    ]
    assert "webserv/shopping.3" in gym.registry
    with pytest.raises(ValueError, match="viewport configure BrowserGym's Playwright"):
        WebServEnvArgs(task_name="shopping.3", viewport={"width": 800, "height": 600}).make_env()


def test_a_sites_own_tasks_make_a_benchmark(binary: str, tmp_path: Path) -> None:
    """The example tracker's tasks (`serve --sites`): listed by the server, made by their env args."""
    srv = sites_server(binary, str(EXAMPLE_SITES), str(tmp_path))
    try:
        names = task_names("tracker", url=srv.url)
        assert {f"tracker.{n}" for n in range(1, 7)} <= set(names), names
        bench = benchmark(names, url=srv.url, max_steps=2)
        env = bench.env_args_list[names.index("tracker.2")].make_env()
        try:
            obs, info = env.reset(seed=0)
            assert info["task_id"] == "tracker.2" and obs["goal"] == "How many open issues are labelled bug?"
            assert "bug" in obs["extra_element_properties"] and obs["axtree_object"]["nodes"]
        finally:
            env.close()
        with pytest.raises(ValueError, match="no tasks of site 'nosuchsite'"):
            task_names("nosuchsite", url=srv.url)
    finally:
        srv.stop()


def test_the_same_agent_side_by_side_on_browsergym_and_webserv(
    server: str, model: StandInModel, tmp_path: Path
) -> None:
    """GenericAgent on MiniWoB's click-test and click-button (seed 1) through BrowserGym (its
    Playwright driving /usr/bin/chromium: nothing downloaded) and through WebServ: the same
    goals, rewards, and accessibility tree and HTML text up to ids (webserv.sidebyside)."""
    from webserv.sidebyside import side_by_side

    pairs = side_by_side(
        agent_args(), ["click-test", "click-button"], [1], tmp_path, max_steps=3, chromium="/usr/bin/chromium"
    )
    assert [(p.task, p.seed) for p in pairs] == [("click-test", 1), ("click-button", 1)]
    for p in pairs:
        b, w = p.browsergym, p.webserv
        assert (b.err_msg, w.err_msg) == (None, None), (b.err_msg, w.err_msg)
        assert b.goal == w.goal and b.goal, (b.goal, w.goal)
        assert b.reward == w.reward == 1.0, (b.reward, w.reward)
        assert b.axtree == w.axtree and "button" in b.axtree, f"BrowserGym:\n{b.axtree}\nWebServ:\n{w.axtree}"
        assert p.same
        assert b.html == w.html and "<button" in b.html, f"BrowserGym:\n{b.html}\nWebServ:\n{w.html}"
        assert p.html_same
        assert (b.exp_dir / "summary_info.json").exists() and (w.exp_dir / "summary_info.json").exists()
    assert pairs[1].browsergym.goal == 'Click on the "cancel" button.'  # seed 1's goal, on both

    # Pages with typed-in values, checkboxes, a select, jQuery UI widgets: the HTML text is equal
    # up to ids (every element's bid, value and checked attributes, visible and clickable as
    # BrowserGym gives them), one step each.
    more = ["enter-text", "click-checkboxes", "choose-list", "click-tab", "use-spinner"]
    chromium = "/usr/bin/chromium"
    more_pairs = side_by_side(agent_args(), more, [1], tmp_path / "more", max_steps=1, chromium=chromium)
    for p in more_pairs:
        b, w = p.browsergym, p.webserv
        assert (b.err_msg, w.err_msg) == (None, None), (p.task, b.err_msg, w.err_msg)
        assert b.goal == w.goal and b.goal, (p.task, b.goal, w.goal)
        assert p.html_same and 'bid="e' in b.html, f"{p.task}\nBrowserGym:\n{b.html}\nWebServ:\n{w.html}"
    assert 'value="' in b.html  # the spinner's
    # BrowserGym ran in a process of its own (one for each side_by_side call): its Playwright
    # (sync API, an event loop in the calling thread, kept for the process's life) did not stay
    # in this one, where the tests that run after this one call asyncio.run.
    assert asyncio.run(asyncio.sleep(0, "free")) == "free"
