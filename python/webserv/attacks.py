"""The attack library and attacked environments (docs/attacks.md).

``library()`` is the attacks shipped with the package (``attacks.json``, a copy of the server's one
library, attack/library.json, made when the wheel is built): every page channel paired with
every goal kind, each with templates in the task's own words. ``load(path)`` reads a file of attacks
of your own (a JSON or YAML list, each an attack with an ``id``), and ``pick(attacks, key, seed)``
draws one for an episode: the same (task, attacks, seed) always draws the same attack, and the server
draws the same template and place in the page from the same seed, so a (task, attack, seed) triple
is one page.

``AttackedEnv`` is ``webserv/shopping-attacked`` and ``webserv/cms-attacked``: each reset puts an
attack drawn from the library (or ``attacks=``) into the episode's pages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .env import WebEnv
from .options import check_attack

#: The name ``attacks=`` gives for the shipped library.
LIBRARY = "library"


@dataclass(frozen=True)
class Attack:
    """One attack of a library: its ``id`` (``banner.url``) and its spec (``make``'s ``attack``)."""

    id: str
    spec: Mapping[str, Any] = field(hash=False)

    @property
    def channel(self) -> str:
        return str(self.spec["channel"])

    @property
    def goal(self) -> str:
        return str(self.spec["goal"]["kind"])


def parse(items: Any, where: str) -> list[Attack]:
    """Attacks from a list of mappings, each an attack (docs/attacks.md) with an ``id``; ``where``
    names the source in errors."""
    if not isinstance(items, list) or not items:
        raise ValueError(f"{where}: an attack file is a non-empty list of attacks, each with an id")
    out: list[Attack] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ValueError(
                f"{where}[{i}]: an attack is a mapping like {{'id': 'banner.url', 'channel': ...}}"
            )
        spec = dict(item)
        ident = str(spec.pop("id", "") or "")
        if not ident:
            raise ValueError(
                f"{where}[{i}]: give the attack an id (like banner.url) that names it in results"
            )
        if ident in seen:
            raise ValueError(f"{where}[{i}]: id {ident!r} is used twice")
        seen.add(ident)
        try:
            out.append(Attack(ident, check_attack(spec)))
        except (ValueError, TypeError) as e:
            raise ValueError(f"{where}[{i}] ({ident}): {e}") from e
    return out


def library() -> list[Attack]:
    """The attacks shipped with the package: 5 channels x 4 goal kinds."""
    shipped = resources.files(__package__ or "webserv").joinpath("attacks.json")
    if shipped.is_file():
        return parse(json.loads(shipped.read_text()), "webserv/attacks.json")
    # A source checkout run as it is (not built): the one library, which the server embeds.
    source = Path(__file__).resolve().parents[2] / "attack" / "library.json"
    return parse(json.loads(source.read_text()), str(source))


def load(source: str | Path | Sequence[Mapping[str, Any]]) -> list[Attack]:
    """Attacks from ``"library"``, a JSON or YAML file (a list of attacks with ids), or a list."""
    if isinstance(source, str) and source == LIBRARY:
        return library()
    if isinstance(source, (str, Path)):
        path = Path(source)
        text = path.read_text()
        if path.suffix in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError as e:
                raise ValueError(f"{path}: reading YAML needs PyYAML (pip install 'webserv[yaml]')") from e
            return parse(yaml.safe_load(text), str(path))
        return parse(json.loads(text), str(path))
    return parse(list(source), "attacks")


def pick(attacks: Sequence[Attack], key: str, seed: int) -> Attack:
    """The attack an episode of ``key`` (a task id, or a site for a site's environment) draws with
    ``seed``: the same in any process, and the same the server draws (``attack.Draw``) for a task's
    ``attacks`` and its attacked task sets (``attacked.shopping.3``: 64-bit FNV-1a of the key, the
    seed and the attacks' ids)."""
    if not attacks:
        raise ValueError("no attacks to pick from")
    h = _FNV_OFFSET
    for b in f"{key}\x00{seed}".encode() + b"".join(b"\x00" + a.id.encode() for a in attacks):
        h = ((h ^ b) * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return attacks[h % len(attacks)]


_FNV_OFFSET, _FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3


class AttackedEnv(WebEnv):
    """A ``WebEnv`` whose every episode carries an attack drawn from ``attacks`` (the library, a
    file, or a list; docs/attacks.md) by the reset's seed and the task (or site). The reset's info
    and the ending step's ``info["attack"]`` name the drawn attack's ``id``. A reset's
    ``options={"attack": ...}`` overrides the draw for that episode."""

    def __init__(self, *args: Any, attacks: str | Path | Sequence[Mapping[str, Any]] = LIBRARY, **kw: Any):
        if "attack" in kw:
            raise ValueError("AttackedEnv draws its attack from attacks=; give attacks=[...], not attack=")
        self.attacks = load(attacks)
        super().__init__(*args, **kw)
        self.attack_id = ""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        options = dict(options or {})
        if "attack" in options:
            self.attack_id = str(options.get("attack_id") or "custom")
            options.pop("attack_id", None)
        else:
            if seed is None:
                seed = int(self.np_random.integers(0, 2**31 - 1))
            key = str(options.get("task") or options.get("task_id") or self.options.task or self.options.site)
            a = pick(self.attacks, key, seed)
            options["attack"] = dict(a.spec)
            self.attack_id = a.id
        obs, info = super().reset(seed=seed, options=options)
        info["attack_id"] = self.attack_id
        return obs, info

    def step(self, action: str | dict[str, Any]) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        if isinstance(info.get("attack"), dict):
            info["attack"] = {**info["attack"], "id": self.attack_id}
        return obs, reward, terminated, truncated, info


__all__ = ["LIBRARY", "Attack", "AttackedEnv", "library", "load", "pick"]
