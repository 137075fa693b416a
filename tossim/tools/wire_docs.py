"""The websocket message tables of docs/api.md and `web/wire-schema.json`,
generated from the wire models (`tossim.server.wire`) by `tossim docs`, so
the documented protocol and the one the server speaks cannot drift apart (a
test compares the committed files with this output)."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from tossim.server.wire import CLIENT_MODELS, SERVER_MODELS, message_type, wire_schema
from tossim.server.worker_wire import TO_WORKER, TO_WORKER_MODELS, WORKER, WORKER_MODELS

REGENERATE = "run `tossim docs` from the repository root"
BLOCKS: dict[str, tuple[type[BaseModel], ...]] = {
    "server": SERVER_MODELS,
    "client": CLIENT_MODELS,
    "worker": (*WORKER_MODELS, *TO_WORKER_MODELS),
}
SOURCE = {"worker": "tossim/server/worker_wire.py"}


def _marker(block: str, end: bool = False) -> str:
    if end:
        return f"<!-- /wire:{block} -->"
    source = SOURCE.get(block, "tossim/server/wire.py")
    return (f"<!-- wire:{block}: generated from {source} by `tossim docs`; "
            "do not edit by hand -->")


def schema_json() -> str:
    """`web/wire-schema.json` as committed."""
    return json.dumps(wire_schema(), indent=2, ensure_ascii=False) + "\n"


def _kind(prop: dict[str, Any]) -> str:
    """A property's type in a few words."""
    if "$ref" in prop:
        return str(prop["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in prop:
        return " or ".join(_kind(p) for p in prop["anyOf"])
    if "const" in prop:
        return json.dumps(prop["const"])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_kind(prop.get('items', {}))}"
    if kind == "integer" and prop.get("minimum") == 0:
        return "integer ≥ 0"
    return str(kind)


def _fields(model: dict[str, Any], skip: tuple[str, ...] = ("type",)) -> str:
    required = set(model.get("required", []))
    out = []
    for name, prop in model.get("properties", {}).items():
        if name in skip:
            continue
        optional = "" if name in required else "?"
        out.append(f"`{name}`{optional} {_kind(prop)}")
    return ", ".join(out) or "-"


def _line(text: str) -> str:
    """A docstring as one table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _table(schema: dict[str, Any], models: tuple[type[BaseModel], ...]) -> list[str]:
    defs = schema["$defs"]
    lines = ["| `type` | Fields (`?`: may be left out) | What it is |", "|---|---|---|"]
    examples = []
    for cls in models:
        model = defs[cls.__name__]
        lines.append(f"| `{message_type(cls)}` | {_fields(model)} "
                     f"| {_line(model.get('description', ''))} |")
        extra = cls.model_config.get("json_schema_extra")
        assert isinstance(extra, dict), f"{cls.__name__} has no examples"
        shown = extra.get("examples")
        assert isinstance(shown, list), f"{cls.__name__} has no examples"
        examples += [json.dumps(e, ensure_ascii=False) for e in shown]
    return [*lines, "", "```json", *examples, "```"]


def _objects(schema: dict[str, Any], names: tuple[str, ...]) -> list[str]:
    defs = schema["$defs"]
    lines = ["| Object | Fields | What it is |", "|---|---|---|"]
    for name in names:
        model = defs[name]
        lines.append(f"| `{name}` | {_fields(model, ())} | "
                     f"{_line(model.get('description', ''))} |")
    return lines


def _commands(schema: dict[str, Any]) -> list[str]:
    shapes = schema["$defs"]["Command"]["properties"]["command"]["oneOf"]
    parts = [f"`{shape['title']}` ({_fields(shape)})" for shape in shapes]
    return ["Commands (`command.type`, the engine's command without `actor`): "
            + "; ".join(parts) + "."]


def _worker_schema() -> dict[str, Any]:
    defs: dict[str, Any] = {}
    for adapter in (WORKER, TO_WORKER):
        defs.update(adapter.json_schema(ref_template="#/$defs/{model}").get("$defs", {}))
    return {"$defs": defs}


def block(name: str) -> str:
    """One generated block of docs/api.md, without its markers."""
    if name == "worker":
        schema = _worker_schema()
        return "\n".join(["Worker → server:", "", *_table(schema, WORKER_MODELS), "",
                          "Server → worker:", "", *_table(schema, TO_WORKER_MODELS)])
    schema = wire_schema()
    lines = _table(schema, BLOCKS[name])
    if name == "server":
        lines += ["", *_objects(schema, ("State", "WireEvent"))]
    else:
        lines += ["", *_commands(schema)]
    return "\n".join(lines)


def api_markdown(text: str) -> str:
    """docs/api.md with its generated blocks rewritten (ValueError: a
    marker is missing)."""
    for name in BLOCKS:
        pattern = re.compile(re.escape(_marker(name)) + r"\n.*?" + re.escape(_marker(name, True)),
                             re.DOTALL)
        found = pattern.search(text)
        if found is None:
            raise ValueError(f"docs/api.md has no {_marker(name)} ... {_marker(name, True)}")
        text = (text[:found.start()] + f"{_marker(name)}\n{block(name)}\n{_marker(name, True)}"
                + text[found.end():])
    return text
