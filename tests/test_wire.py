"""The game websocket's typed wire (tossim/server/wire.py): the committed
JSON Schema and docs/api.md's message tables are generated from it, the web
client has a handler for every message the server sends, and a client's bad
message gets the one sentence that says what was wrong."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tossim.server.wire import (
    CLIENT_MODELS,
    SERVER,
    SERVER_MODELS,
    Auth,
    Command,
    Error,
    Events,
    Ping,
    Resume,
    WireError,
    dumps,
    events_message,
    message_type,
    parse_client,
    wire_schema,
)
from tossim.server.worker_wire import TO_WORKER, TO_WORKER_MODELS, WORKER, WORKER_MODELS
from tossim.tools.wire_docs import REGENERATE, api_markdown, schema_json

ROOT = Path(__file__).resolve().parent.parent


def test_committed_schema_is_generated_from_the_models() -> None:
    on_disk = (ROOT / "web" / "wire-schema.json").read_text(encoding="utf-8")
    assert on_disk == schema_json(), f"web/wire-schema.json is stale: {REGENERATE}"


def test_api_doc_message_tables_are_generated_from_the_models() -> None:
    on_disk = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    assert on_disk == api_markdown(on_disk), (
        f"docs/api.md's websocket message tables are stale: {REGENERATE}")
    for model in (*SERVER_MODELS, *CLIENT_MODELS, *WORKER_MODELS, *TO_WORKER_MODELS):
        assert f"| `{message_type(model)}` |" in on_disk


def handled_types(source: str) -> set[str]:
    """The message types `GameSocket.handle` has a case for (web/api.js)."""
    start = source.index("  handle(msg) {")
    end = source.index("\n  }\n", start)
    return set(re.findall(r'case "([a-z_]+)":', source[start:end]))


def test_web_client_handles_every_server_message_type() -> None:
    schema = json.loads((ROOT / "web" / "wire-schema.json").read_text(encoding="utf-8"))
    sent = set(schema["$defs"]["ServerMessage"]["discriminator"]["mapping"])
    assert sent == {message_type(m) for m in SERVER_MODELS}
    handled = handled_types((ROOT / "web" / "api.js").read_text(encoding="utf-8"))
    missing = sorted(sent - handled)
    assert not missing, (f"web/api.js GameSocket.handle has no case for the server's "
                         f"message type(s) {missing} (web/wire-schema.json)")
    assert not handled - sent, f"web/api.js handles types the server never sends: " \
                               f"{sorted(handled - sent)}"


def test_the_client_handler_check_sees_a_missing_case() -> None:
    """The check above reads the switch, so dropping a case fails it."""
    source = (ROOT / "web" / "api.js").read_text(encoding="utf-8")
    assert "summary" in handled_types(source)
    assert "summary" not in handled_types(source.replace('case "summary":', ""))


@pytest.mark.parametrize("model", [*SERVER_MODELS, *CLIENT_MODELS, *WORKER_MODELS,
                                   *TO_WORKER_MODELS], ids=lambda m: m.__name__)
def test_every_message_has_examples_that_fit_it(model: Any) -> None:
    examples = model.model_config["json_schema_extra"]["examples"]
    assert examples
    for example in examples:
        parsed = model.model_validate(example)
        union = (SERVER if model in SERVER_MODELS else WORKER if model in WORKER_MODELS
                 else TO_WORKER if model in TO_WORKER_MODELS else None)
        if union is not None:
            assert union.validate_python(example) == parsed
            # as sent: the same keys in the same order
            assert list(parsed.data()) == list(example), example
        else:
            assert parse_client(example) == parsed


def test_server_messages_keep_their_json() -> None:
    """The JSON on the wire is what clients have always read: compact, the
    type first, a fault and candidates only on a refused command."""
    assert Error(version=3, error="malformed JSON").encode() == (
        '{"type":"error","version":3,"error":"malformed JSON"}')
    assert Error(version=3, error="No.", fault=None, candidates=[]).encode() == (
        '{"type":"error","version":3,"error":"No.","fault":null,"candidates":[]}')
    push = events_message(4, [{"v": 4, "day": 1, "phase": "day1", "key": "k",
                               "audience": "public", "text": "t", "data": {}}], None, None)
    assert dumps(push).startswith('{"type":"events","version":4,"events":[')
    assert "state" not in Events.model_validate(push).data()


@pytest.mark.parametrize(("message", "error"), [
    (5, "a message is a JSON object with a type"),
    ([{"type": "ping"}], "a message is a JSON object with a type"),
    ({}, "unknown message type None"),
    ({"type": "bogus"}, "unknown message type 'bogus'"),
    ({"type": "PING"}, "unknown message type 'PING'"),
    ({"type": "hello"}, "unknown message type 'hello'"),
    ({"type": "resume"}, "resume needs since: a version number"),
    ({"type": "resume", "since": -1}, "resume needs since: a version number"),
    ({"type": "resume", "since": True}, "resume needs since: a version number"),
    ({"type": "resume", "since": 1.5}, "resume needs since: a version number"),
    ({"type": "resume", "since": "5"}, "resume needs since: a version number"),
    ({"type": "command"}, "command must be an object without actor"),
    ({"type": "command", "command": "vote"}, "command must be an object without actor"),
    ({"type": "command", "command": {"type": "vote", "target": 2, "actor": 2}},
     "command must be an object without actor"),
    ({"type": "auth"}, "unknown seat token"),
    ({"type": "auth", "token": ["x"]}, "unknown seat token"),
    ({"type": "auth", "token": "t", "since": "x"}, "since is a version number"),
])
def test_a_bad_client_message_gets_one_clear_error(message: Any, error: str) -> None:
    with pytest.raises(WireError) as caught:
        parse_client(message)
    assert str(caught.value) == error


def test_good_client_messages_parse_to_their_model() -> None:
    assert isinstance(parse_client({"type": "ping", "extra": 1}), Ping)  # extras ignored
    assert parse_client({"type": "resume", "since": 0}) == Resume(type="resume", since=0)
    auth = parse_client({"type": "auth", "token": "abc"})
    assert isinstance(auth, Auth) and auth.token == "abc" and auth.since is None
    cmd = parse_client({"type": "command", "command": {"type": "night", "targets": [3]}})
    assert isinstance(cmd, Command) and cmd.command == {"type": "night", "targets": [3]}


def test_schema_documents_each_seat_command_without_actor() -> None:
    shapes = wire_schema()["$defs"]["Command"]["properties"]["command"]["oneOf"]
    kinds = {s["properties"]["type"]["const"] for s in shapes}
    assert kinds == {"chat", "whisper", "vote", "judge", "night", "day", "will", "death_note"}
    assert all("actor" not in s["properties"] for s in shapes)


def test_tossim_docs_rewrites_a_stale_api_doc_and_schema(tmp_path: Path) -> None:
    """`tossim docs` (the command the stale-file failures name) brings an API
    doc with outdated tables and a missing schema back to the committed ones."""
    from typer.testing import CliRunner

    from tossim.cli import app

    committed = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    stale = re.sub(r"\| `pong` \|[^\n]*\n", "", committed)
    assert stale != committed
    api, schema = tmp_path / "api.md", tmp_path / "wire-schema.json"
    api.write_text(stale, encoding="utf-8")
    result = CliRunner().invoke(app, ["docs", "--out", str(tmp_path / "roles.md"),
                                      "--api", str(api), "--schema", str(schema)])
    assert result.exit_code == 0, result.output
    assert api.read_text(encoding="utf-8") == committed
    assert schema.read_text(encoding="utf-8") == (
        ROOT / "web" / "wire-schema.json").read_text(encoding="utf-8")
