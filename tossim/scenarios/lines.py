"""Reading a scenario file's YAML: mappings and lists that remember their line
numbers, and `FieldReader`, the typed field checks (a mapping, a whole number,
a player, a role ...) that record each problem as `file:line: message`.

Shared by the scenario compiler (`scenario.py`) and the mode-dealing checks
(`deal_check.py`), which both read parts of one file (docs/scenarios.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from tossim.engine.roles import ROLES, find_role


class Invalid(Exception):
    """One problem found while compiling, already located and recorded."""


class LineDict(dict[Any, Any]):
    """A YAML mapping that remembers its own line and the line of each key (1-based)."""

    line: int = 0
    key_lines: dict[Any, int]

    def line_of(self, key: Any) -> int:
        return self.key_lines.get(key, self.line)


class LineList(list[Any]):
    """A YAML sequence that remembers its own line and the line of each item (1-based)."""

    line: int = 0
    item_lines: list[int]

    def line_at(self, index: int) -> int:
        return self.item_lines[index] if index < len(self.item_lines) else self.line


class LineLoader(yaml.SafeLoader):
    """SafeLoader whose mappings and sequences carry line numbers."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.Node) -> LineDict:
    assert isinstance(node, yaml.MappingNode)
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a plain value", key_node.start_mark) from None
        if key in out:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _construct_sequence(loader: yaml.SafeLoader, node: yaml.Node) -> LineList:
    assert isinstance(node, yaml.SequenceNode)
    out = LineList(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [child.start_mark.line + 1 for child in node.value]
    return out


LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
LineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)


def kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    return repr(value)


class FieldReader:
    """A scenario file's compiler state (its file, errors, and the game's
    players once read) and the field checks that need it."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.errors: list[str] = []
        self.names: dict[str, int] = {}  # lower-case name -> seat
        self.full_names: list[str] = []
        self.roles: list[str] = []

    def err(self, line: int, message: str) -> None:
        self.errors.append(f"{self.file}:{line}: {message}")

    def unknown_fields(self, mapping: LineDict, allowed: Iterable[str], where: str) -> None:
        allowed = tuple(allowed)
        for key in mapping:
            if key not in allowed:
                self.err(mapping.line_of(key), f"unknown field {key!r} in {where} "
                                               f"(known: {', '.join(allowed)})")

    def mapping(self, value: Any, line: int, what: str) -> LineDict:
        if not isinstance(value, LineDict):
            self.err(line, f"{what} must be a mapping, not {kind(value)}")
            raise Invalid
        return value

    def sequence(self, value: Any, line: int, what: str) -> LineList:
        if isinstance(value, LineList):
            return value
        self.err(line, f"{what} must be a list, not {kind(value)}")
        raise Invalid

    def integer(self, value: Any, line: int, what: str, minimum: int = 0) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.err(line, f"{what} must be a whole number >= {minimum}, not {value!r}")
            raise Invalid
        return value

    def text(self, value: Any, line: int, what: str) -> str:
        if not isinstance(value, str):
            self.err(line, f"{what} must be text, not {kind(value)}")
            raise Invalid
        return value

    def ref(self, value: Any, line: int, what: str, *, strict: bool = True) -> int:
        """A player: a seat number or a player name. `strict=False` lets numbers
        outside the game through (an `illegal` step may name player 99)."""
        if isinstance(value, bool):
            pass
        elif isinstance(value, int):
            if not strict or 1 <= value <= len(self.roles):
                return value
            self.err(line, f"{what}: there is no player {value} "
                           f"(players are 1-{len(self.roles)})")
            raise Invalid
        elif isinstance(value, str):
            key = value.strip().lower()
            if key in self.names:
                return self.names[key]
            if key.isdigit():
                return self.ref(int(key), line, what, strict=strict)
            self.err(line, f"{what}: unknown player {value!r} "
                           f"(use a seat number or one of: {', '.join(self.full_names)})")
            raise Invalid
        self.err(line, f"{what} must be a seat number or a player name, not {value!r}")
        raise Invalid

    def refs(self, value: Any, line: int, what: str) -> list[tuple[int, int]]:
        """A list of players -> [(slot, line)]."""
        items = self.sequence(value, line, what)
        out = []
        for i, item in enumerate(items):
            try:
                out.append((self.ref(item, items.line_at(i), what), items.line_at(i)))
            except Invalid:
                continue
        return out

    def per_player(self, value: Any, line: int, what: str) -> list[tuple[int, Any, int]]:
        """A mapping player -> value -> [(slot, value, line)]."""
        m = self.mapping(value, line, what)
        out = []
        for key, item in m.items():
            try:
                out.append((self.ref(key, m.line_of(key), what), item, m.line_of(key)))
            except Invalid:
                continue
        return out

    def role_key(self, value: Any, line: int, what: str) -> str:
        r = find_role(value) if isinstance(value, str) else None
        if r is None:
            self.err(line, f"{what}: unknown role {value!r} "
                           f"(known: {', '.join(x.name for x in ROLES.values())})")
            raise Invalid
        return r.key
