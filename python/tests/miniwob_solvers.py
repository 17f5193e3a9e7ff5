"""Scripted solutions of MiniWoB++ tasks, played through WebServ's actions as an agent would.

Each solver reads only what an agent gets (the goal and the observation's HTML with its
semantic ids) and acts with the action vocabulary; none reads the page's internals. They
prove that the tasks' maximum reward is reachable through WebServ, and bench/miniwob_bench.py
plays the same actions on BrowserGym.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

Obs = dict[str, Any]
# A solver gets the first observation and yields actions; each yield receives the next observation.
Solver = Callable[[Obs], Iterator[str]]

_VOID = {"input", "br", "img", "hr", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr"}


@dataclass
class El:
    tag: str
    attrs: dict[str, str]
    text: str = ""
    children: list[El] = field(default_factory=list)

    @property
    def sid(self) -> str:
        return self.attrs.get("data-semantic-id", "")


class _Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.all: list[El] = []
        self.stack: list[El] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = El(tag, {k: v or "" for k, v in attrs})
        if self.stack:
            self.stack[-1].children.append(el)
        self.all.append(el)
        if tag not in _VOID:
            self.stack.append(el)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                break

    def handle_data(self, data: str) -> None:
        for el in self.stack:
            el.text += data


def elements(obs: Obs) -> list[El]:
    t = _Tree()
    t.feed(obs["html"])
    for el in t.all:
        el.text = " ".join(el.text.split())
    return t.all


def with_text(obs: Obs, text: str, tags: tuple[str, ...] = ()) -> El:
    """The element with an id whose own text is ``text`` (the innermost such)."""
    found = [e for e in elements(obs) if e.sid and e.text == text and (not tags or e.tag in tags)]
    if not found:
        raise AssertionError(f"no element with text {text!r} in {obs['html'][:400]}")
    return found[-1]


def quoted(goal: str) -> list[str]:
    return re.findall(r'"([^"]*)"', goal)


def q(s: str) -> str:
    """A string argument of an action."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def submit(obs: Obs, text: str = "Submit") -> str:
    return f"click({q(with_text(obs, text, ('button',)).sid)})"


def first_input(obs: Obs, kind: str = "text") -> El:
    return next(
        e for e in elements(obs) if e.tag == "input" and e.attrs.get("type", "text") == kind and e.sid
    )


# --- click -----------------------------------------------------------------------------------


def click_test(obs: Obs) -> Iterator[str]:
    yield f"click({q(with_text(obs, 'Click Me!').sid)})"


def click_button(obs: Obs) -> Iterator[str]:
    yield f"click({q(with_text(obs, quoted(obs['goal'])[0], ('button',)).sid)})"


def click_link(obs: Obs) -> Iterator[str]:
    word = quoted(obs["goal"])[0]
    links = [
        e for e in elements(obs) if e.tag == "span" and e.sid and e.text.rstrip(".,") == word.rstrip(".,")
    ]
    yield f"click({q(links[0].sid)})"


def click_dialog(obs: Obs) -> Iterator[str]:
    yield f"click({q(with_text(obs, 'Close', ('button',)).sid)})"


def click_dialog_2(obs: Obs) -> Iterator[str]:
    label = quoted(obs["goal"])[0]
    yield f"click({q(with_text(obs, 'Close' if label == 'x' else label, ('button',)).sid)})"


def click_tab(obs: Obs) -> Iterator[str]:
    n = re.search(r"Tab #(\d+)", obs["goal"]).group(1)  # type: ignore[union-attr]
    yield f"click({q(with_text(obs, 'Tab #' + n, ('a',)).sid)})"


def click_collapsible(obs: Obs) -> Iterator[str]:
    head = next(e for e in elements(obs) if e.tag == "h3" and e.sid)
    obs = yield f"click({q(head.sid)})"
    yield submit(obs)


def click_option(obs: Obs) -> Iterator[str]:
    want = re.match(r"Select (.*) and click Submit\.", obs["goal"]).group(1)  # type: ignore[union-attr]
    radio = next(e for e in elements(obs) if e.tag == "label" and e.text == want).children[0]
    obs = yield f"click({q(radio.sid)})"
    yield submit(obs)


def click_checkboxes(obs: Obs) -> Iterator[str]:
    m = re.match(r"Select (.*) and click Submit\.", obs["goal"])
    assert m, obs["goal"]
    words = [] if m.group(1) == "nothing" else [w.strip() for w in re.split(r",", m.group(1)) if w.strip()]
    labels = {e.text: e for e in elements(obs) if e.tag == "label"}
    for w in words:
        obs = yield f"click({q(labels[w].children[0].sid)})"
    yield submit(obs)


def click_widget(obs: Obs) -> Iterator[str]:
    kind = quoted(obs["goal"])[0]
    el = next(e for e in elements(obs) if e.attrs.get("data-type") == kind)
    if not el.sid:  # a widget inside its label
        el = el.children[0]
    yield f"click({q(el.sid)})"


def focus_text(obs: Obs) -> Iterator[str]:
    yield f"click({q(first_input(obs).sid)})"


def unicode_test(obs: Obs) -> Iterator[str]:
    yield from click_button(obs)


# --- type ------------------------------------------------------------------------------------


def enter_text(obs: Obs) -> Iterator[str]:
    obs = yield f"fill({q(first_input(obs).sid)}, {q(quoted(obs['goal'])[0])})"
    yield submit(obs)


def enter_text_2(obs: Obs) -> Iterator[str]:
    word = quoted(obs["goal"])[0]
    text = word.upper() if "upper case" in obs["goal"] else word.lower()
    obs = yield f"fill({q(first_input(obs).sid)}, {q(text)})"
    yield submit(obs)


def enter_password(obs: Obs) -> Iterator[str]:
    pw = quoted(obs["goal"])[0]
    for box in [e for e in elements(obs) if e.tag == "input" and e.attrs.get("type") == "password"]:
        obs = yield f"fill({q(box.sid)}, {q(pw)})"
    yield submit(obs)


def login_user(obs: Obs) -> Iterator[str]:
    user, pw = quoted(obs["goal"])[:2]
    obs = yield f"fill({q(first_input(obs).sid)}, {q(user)})"
    obs = yield f"fill({q(first_input(obs, 'password').sid)}, {q(pw)})"
    yield submit(obs, "Login")


def read_table(obs: Obs) -> Iterator[str]:
    key = re.match(r"Enter the value of (.*) into the text field", obs["goal"]).group(1)  # type: ignore[union-attr]
    rows = [e for e in elements(obs) if e.tag == "tr"]
    value = next(r.children[1].text for r in rows if r.children[0].text == key)
    obs = yield f"fill({q(first_input(obs).sid)}, {q(value)})"
    yield submit(obs)


def find_word(obs: Obs) -> Iterator[str]:
    n = int(re.search(r"the (\d+)\w\w word", obs["goal"]).group(1))  # type: ignore[union-attr]
    para = next(e for e in elements(obs) if e.tag == "p")
    word = para.text.split()[n - 1].strip(".,")
    obs = yield f"fill({q(first_input(obs).sid)}, {q(word)})"
    yield submit(obs)


def copy_paste(obs: Obs) -> Iterator[str]:
    area = next(e for e in elements(obs) if e.tag == "textarea")
    obs = yield f"fill({q(first_input(obs).sid)}, {q(area.attrs.get('value', ''))})"
    yield submit(obs)


def use_spinner(obs: Obs) -> Iterator[str]:
    """Clicks the spinner's arrows (jQuery UI's: up first, then down) until it shows the number."""
    n = int(re.match(r"Select (-?\d+) with the spinner", obs["goal"]).group(1))  # type: ignore[union-attr]
    up, down = [e for e in elements(obs) if e.tag == "a" and e.attrs.get("role") == "button"][:2]
    for _ in range(abs(n)):
        obs = yield f"click({q((up if n > 0 else down).sid)})"
    yield submit(obs)


def guess_number(obs: Obs) -> Iterator[str]:
    """A multi-step task: binary search on the page's feedback ("higher", "lower")."""
    lo, hi = 0, 9
    while lo <= hi:
        mid = (lo + hi) // 2
        obs = yield f"fill({q(first_input(obs, 'number').sid)}, {q(str(mid))})"
        obs = yield submit(obs)
        feedback = next(e for e in elements(obs) if e.attrs.get("id") == "feedback").text.lower()
        if "higher" in feedback:
            lo = mid + 1
        elif "lower" in feedback:
            hi = mid - 1
        else:
            return


# --- select and scroll -----------------------------------------------------------------------


def choose_list(obs: Obs) -> Iterator[str]:
    want = re.match(r"Select (.*) from the list and click Submit\.", obs["goal"]).group(1)  # type: ignore[union-attr]
    sel = next(e for e in elements(obs) if e.tag == "select")
    obs = yield f"select_option({q(sel.sid)}, {q(want)})"
    yield submit(obs)


def click_scroll_list(obs: Obs) -> Iterator[str]:
    m = re.match(r"Select (.*) from the scroll list and click Submit\.", obs["goal"])
    assert m, obs["goal"]
    names = [w.strip() for w in m.group(1).split(",")]
    sel = next(e for e in elements(obs) if e.tag == "select")
    obs = yield f"select_option({q(sel.sid)}, [{', '.join(q(n) for n in names)}])"
    yield submit(obs)


def enter_date(obs: Obs) -> Iterator[str]:
    mm, dd, yyyy = re.search(r"(\d\d)/(\d\d)/(\d{4})", obs["goal"]).groups()  # type: ignore[union-attr]
    obs = yield f"fill({q(first_input(obs, 'date').sid)}, {q(f'{yyyy}-{mm}-{dd}')})"
    yield submit(obs)


def choose_date(obs: Obs) -> Iterator[str]:
    """The jQuery UI date picker: open it, page to the month, click the day."""
    mm, dd, yyyy = (int(x) for x in re.search(r"(\d\d)/(\d\d)/(\d{4})", obs["goal"]).groups())  # type: ignore[union-attr]
    obs = yield f"click({q(first_input(obs).sid)})"
    for _ in range(24):
        header = (
            next(e for e in elements(obs) if e.attrs.get("id") == "ui-datepicker-div")
            .children[0]
            .children[-1]
            .text
        )
        month, year = _MONTHS.index(header.split()[0]) + 1, int(header.split()[1])
        if (year, month) == (yyyy, mm):
            break
        way = "Prev" if (year, month) > (yyyy, mm) else "Next"
        obs = yield f"click({q(with_text(obs, way, ('a',)).sid)})"
    day = next(
        e
        for e in elements(obs)
        if e.tag == "td"
        and e.attrs.get("data-month") == str(mm - 1)
        and e.children
        and e.children[0].text == str(dd)
    )
    obs = yield f"click({q(day.children[0].sid)})"
    yield submit(obs)


_MONTHS = [
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
]  # fmt: skip


def _box(obs: Obs, sid: str) -> tuple[float, float, float, float]:
    x, y, w, h = obs["extra_element_properties"][sid]["bbox"]
    return x, y, w, h


def drag_items(obs: Obs) -> Iterator[str]:
    """A jQuery UI sortable list: press on the item, move it past its new neighbour, release."""
    pattern = r"Drag (.*?) (down by one|up by one|to the top|to the bottom|to the (\d+)\w\w)( position)?\."
    m = re.match(pattern, obs["goal"])
    assert m, obs["goal"]
    ul = next(e for e in elements(obs) if e.tag == "ul" and e.sid)
    items = [li.text for li in ul.children]
    ix = items.index(m.group(1)) + 1
    where = {"down by one": ix + 1, "up by one": ix - 1, "to the top": 1, "to the bottom": len(items)}
    target = where.get(m.group(2)) or int(m.group(3))
    x, y, w, h = _box(obs, ul.sid)
    row = h / len(items)
    to = y + (target - 0.5) * row + (0.4 * row if target > ix else -0.4 * row)
    yield f"mouse_drag_and_drop({x + w / 2:.1f}, {y + (ix - 0.5) * row:.1f}, {x + w / 2:.1f}, {to:.1f})"


def scroll_text_2(obs: Obs) -> Iterator[str]:
    """Scrolls the text area with the mouse wheel, over it."""
    area = next(e for e in elements(obs) if e.tag == "textarea")
    x, y, w, h = _box(obs, area.sid)
    obs = yield f"mouse_move({x + w / 2:.1f}, {y + h / 2:.1f})"
    down = "bottom" in obs["goal"]
    obs = yield f"scroll(0, {5000 if down else -5000})"
    yield submit(obs)


SOLVERS: dict[str, Solver] = {
    "click-test": click_test,
    "click-button": click_button,
    "click-link": click_link,
    "click-dialog": click_dialog,
    "click-dialog-2": click_dialog_2,
    "click-tab": click_tab,
    "click-collapsible": click_collapsible,
    "click-option": click_option,
    "click-checkboxes": click_checkboxes,
    "click-widget": click_widget,
    "focus-text": focus_text,
    "unicode-test": unicode_test,
    "enter-text": enter_text,
    "enter-text-2": enter_text_2,
    "enter-password": enter_password,
    "login-user": login_user,
    "read-table": read_table,
    "find-word": find_word,
    "copy-paste": copy_paste,
    "use-spinner": use_spinner,
    "guess-number": guess_number,
    "choose-list": choose_list,
    "click-scroll-list": click_scroll_list,
    "enter-date": enter_date,
    "choose-date": choose_date,
    "choose-date-easy": choose_date,
    "drag-items": drag_items,
    "scroll-text-2": scroll_text_2,
}


def play(
    solver: Solver, obs: Obs, step: Callable[[str], tuple[Obs, float, bool, bool, dict]]
) -> tuple[float, bool, bool, dict, list[str]]:
    """Plays a solver with an environment's ``step``: last reward, terminated, truncated, info, actions."""
    gen = solver(obs)
    actions: list[str] = []
    reward, term, trunc, info = 0.0, False, False, {}
    try:
        action = next(gen)
        while True:
            actions.append(action)
            obs, reward, term, trunc, info = step(action)
            if term or trunc:
                break
            action = gen.send(obs)
    except StopIteration:
        pass
    return reward, term, trunc, info, actions
