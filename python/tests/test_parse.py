"""webserv.parse: the one grammar that turns a model's reply into an action (pure: no server)."""

from __future__ import annotations

import json

import pytest

from webserv.actions import by_name
from webserv.models import Reply
from webserv.parse import ActionParseError, parse_action


def _tool(name: str, arguments: object) -> dict[str, object]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": "call_0", "type": "function", "function": {"name": name, "arguments": args}}


# -- each format --------------------------------------------------------------


def test_an_action_line_gives_the_call_after_its_colon() -> None:
    assert parse_action('I will search.\nAction: fill("search", "mug")') == 'fill("search", "mug")'
    assert parse_action('action:   click("a51")  ') == 'click("a51")'
    assert parse_action('**Action:** `click("a51")`') == 'click("a51")'
    assert parse_action("`Action: go_back()`") == "go_back()"


def test_an_action_line_with_nothing_after_the_colon_takes_the_next_line_or_block() -> None:
    assert parse_action('Action:\n```python\nclick("a51")\n```') == 'click("a51")'
    assert parse_action('Action:\nstop("42")') == 'stop("42")'


def test_a_reply_ending_in_a_call_gives_it() -> None:
    assert parse_action('thinking...\nclick("buy")') == 'click("buy")'
    assert parse_action("noop()") == "noop()"
    assert parse_action("`scroll(0, 400)`") == "scroll(0, 400)"


def test_fenced_code_gives_its_last_line() -> None:
    assert parse_action('Let me search.\n```\nfill("q", "tee")\n```') == 'fill("q", "tee")'
    assert parse_action('```python\n# the search box\nfill("q", "tee")\n```') == 'fill("q", "tee")'
    # A reply that explains itself after the block still acts.
    assert parse_action('```\nclick("buy")\n```\nThis adds it to the cart.') == 'click("buy")'
    # An inline block: the call is not a language tag.
    assert parse_action('The next action is ```click("a51")``` now') == 'click("a51")'


def test_browsergym_call_strings_pass_as_written() -> None:
    assert parse_action("click('a51')") == "click('a51')"
    assert parse_action("select_option('a12', ['S', 'M'])") == "select_option('a12', ['S', 'M'])"
    assert parse_action('fill(bid="a3", value="it\'s (really) \\"fine\\"")') == (
        'fill(bid="a3", value="it\'s (really) \\"fine\\"")'
    )
    assert parse_action("mouse_click(120.5, 48)") == "mouse_click(120.5, 48)"
    assert parse_action('click("a51");') == 'click("a51")'


def test_a_tool_call_is_written_in_the_call_form() -> None:
    assert parse_action("", [_tool("fill", {"bid": "search", "value": "mug"})]) == (
        'fill(bid="search", value="mug")'
    )
    # Arguments as a mapping, and the call without OpenAI's "function" level.
    assert parse_action(None, [{"name": "click", "arguments": {"bid": "a51"}}]) == 'click(bid="a51")'
    assert parse_action(None, [_tool("go_back", "")]) == "go_back()"


def test_a_replys_tool_calls_are_read_from_the_endpoints_answer() -> None:
    raw = {"choices": [{"message": {"content": None, "tool_calls": [_tool("stop", {"answer": "42"})]}}]}
    reply = Reply(text="", raw=raw)
    assert parse_action(reply.text, reply.tool_calls) == 'stop(answer="42")'
    assert Reply(text="hi", raw={"choices": [{"message": {"content": "hi"}}]}).tool_calls == []
    assert Reply(text="hi").tool_calls == []


# -- precedence ----------------------------------------------------------------


def test_a_tool_call_wins_over_the_text() -> None:
    got = parse_action('Action: click("text")', [_tool("click", {"bid": "tool"})])
    assert got == 'click(bid="tool")'


def test_only_the_first_tool_call_acts() -> None:
    calls = [_tool("click", {"bid": "one"}), _tool("click", {"bid": "two"})]
    assert parse_action("", calls) == 'click(bid="one")'


def test_the_last_action_line_wins_over_earlier_ones_code_and_the_last_line() -> None:
    text = 'Action: click("first")\n```\nclick("code")\n```\nAction: click("last")\nclick("after")'
    assert parse_action(text) == 'click("last")'
    # Inside a code block too.
    assert parse_action('```\nAction: stop("42")\n```') == 'stop("42")'


def test_the_last_line_wins_over_an_earlier_code_block() -> None:
    assert parse_action('```html\n<a href="/">x</a>\n```\nclick("home")') == 'click("home")'
    assert parse_action('```\nclick("code")\n```\nclick("line")') == 'click("line")'


# -- absent and malformed --------------------------------------------------------


@pytest.mark.parametrize("text", ["", "  \n \n", "```\n```"])
def test_an_empty_reply_is_an_error_saying_what_to_write(text: str) -> None:
    with pytest.raises(ActionParseError, match=r"empty; end the reply with a line like Action: click") as e:
        parse_action(text)
    assert e.value.candidate == ""


def test_prose_without_an_action_is_an_error_naming_the_last_line() -> None:
    with pytest.raises(
        ActionParseError, match="its last line 'I think the answer is 42.' is not an action"
    ) as e:
        parse_action("I think the answer is 42.")
    assert e.value.candidate == "I think the answer is 42."
    # A call inside prose is not an action line: the model is asked for the form.
    with pytest.raises(ActionParseError, match="last line"):
        parse_action('I will click("cart") now.')


def test_an_unknown_action_is_an_error_listing_the_actions() -> None:
    with pytest.raises(ActionParseError, match=r"'fly' is not an action; the actions are click, hover") as e:
        parse_action('Action: fly("moon")')
    assert e.value.candidate == 'fly("moon")'
    # names widens (or narrows) what a text action may call.
    assert parse_action('Action: type("q", "tee")', names=[*by_name(), "type"]) == 'type("q", "tee")'
    with pytest.raises(ActionParseError, match="the actions are click, stop"):
        parse_action('Action: fill("q", "tee")', names=["click", "stop"])


def test_a_malformed_action_line_decides_even_when_another_line_holds_a_call() -> None:
    with pytest.raises(ActionParseError, match="the Action: line's 'click the cart' is not an action"):
        parse_action('click("cart")\nAction: click the cart')
    with pytest.raises(ActionParseError, match="names no action"):
        parse_action('click("cart")\nAction:')


def test_an_unclosed_call_is_an_error() -> None:
    with pytest.raises(ActionParseError, match="does not close its parenthesis") as e:
        parse_action('Action: fill("q", "tee)')
    assert e.value.candidate == 'fill("q", "tee)'
    with pytest.raises(ActionParseError, match="does not close"):
        parse_action("click('a51'")


def test_two_calls_or_trailing_text_are_one_action_too_many() -> None:
    with pytest.raises(
        ActionParseError, match=r"one action per reply: 'click\(\"b\"\)' follows 'click\(\"a\"\)'"
    ):
        parse_action('Action: click("a") click("b")')
    with pytest.raises(ActionParseError, match="one action per reply"):
        parse_action("click('a'); fill('b', 'c')")


def test_a_webarena_command_is_not_a_call() -> None:
    with pytest.raises(ActionParseError, match="not an action") as e:
        parse_action("Action: stop [42]")
    assert e.value.candidate == "stop [42]"  # the verl loop sends it as written: the server reads it


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (_tool("fly", {}), "there is no tool 'fly'; the tools are click, hover"),
        (_tool("click", "{bid: a51}"), "the arguments of click are not JSON"),
        (_tool("click", "[1]"), "the arguments of click must be a JSON object"),
        (_tool("click", {}), "click needs bid"),
        (_tool("click", {"id": "a51"}), "click: unknown argument id"),
        (_tool("scroll", {"delta_x": 0, "delta_y": "down"}), "scroll: delta_y must be a number"),
    ],
)
def test_a_tool_call_that_does_not_fit_is_an_error_not_a_reason_to_read_the_text(
    call: dict[str, object], message: str
) -> None:
    with pytest.raises(ActionParseError, match=message):
        parse_action('Action: click("text")', [call])


def test_a_table_limits_the_tools_and_the_text_actions() -> None:
    table = {k: v for k, v in by_name().items() if k in ("click", "stop")}
    with pytest.raises(ActionParseError, match="there is no tool 'fill'; the tools are click, stop"):
        parse_action("", [_tool("fill", {"bid": "q", "value": "x"})], table=table)
    with pytest.raises(ActionParseError, match="'fill' is not an action; the actions are click, stop"):
        parse_action('fill("q", "x")', table=table)


# -- several actions a step (multiaction=True) --------------------------------


def test_multiaction_reads_every_call_of_the_action_as_one_step() -> None:
    # As GenericAgent's multi-action prompt asks: one call a line.
    reply = "I fill the name, then load.\nAction:\nfill('name', 'Ada')\nclick('load')\nThat should do it."
    assert parse_action(reply, multiaction=True) == "fill('name', 'Ada')\nclick('load')"
    assert parse_action("fill('a', 'b'); click('c')", multiaction=True) == "fill('a', 'b')\nclick('c')"
    commented = "Steps:\nclick('a')\n# then\nclick('b')"
    assert parse_action(commented, multiaction=True) == "click('a')\nclick('b')"
    fenced = "```python\n# the form\nfill('q', 'mug')\nclick('go')\n```\nThis submits it."
    assert parse_action(fenced, multiaction=True) == "fill('q', 'mug')\nclick('go')"
    # One call stays one call; without multiaction a second call is still an error.
    assert parse_action("Action: click('a')", multiaction=True) == "click('a')"
    with pytest.raises(ActionParseError, match="one action per reply"):
        parse_action("fill('a', 'b'); click('c')")


def test_multiaction_refuses_a_line_that_starts_like_a_call_but_is_none() -> None:
    with pytest.raises(ActionParseError, match="'teleport' is not an action") as e:
        parse_action("Action:\nclick('a')\nteleport('b')", multiaction=True)
    assert e.value.candidate == "teleport('b')"
    with pytest.raises(ActionParseError, match=r"'and then' follows \"click\('a'\)\""):
        parse_action("Action: click('a') and then", multiaction=True)


def test_a_multiaction_step_runs_every_action_on_the_server(server: str, pages: str) -> None:
    import gymnasium as gym

    step = parse_action("Action:\nfill('name', 'Ada')\nclick('load')", multiaction=True)
    env = gym.make("webserv/open", start_url=f"{pages}/page?n=4")
    try:
        env.reset(seed=0)
        obs, *_ = env.step(step)
        assert obs["last_action_error"] == ""
        assert [i["value"] for i in obs["inputs"]] == ["Ada"]
        assert "loaded 4" in obs["pruned_html"]
    finally:
        env.close()
