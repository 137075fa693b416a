"""The game websocket's messages as types: what a client may send
(`ClientMessage`) and what the server sends (`ServerMessage`), each a union
discriminated on `type` (docs/api.md, "Websocket"; its message tables and
`web/wire-schema.json` are generated from these models by `tossim docs`).

Incoming messages are parsed with `parse_client`, which turns a validation
failure into the one sentence a client is shown. Outgoing messages are built
here too, but serialised with `json.dumps` (`dumps`): the `events` push is
the hot path, built once per viewer class and change and shared by every
socket, so it is a plain dict keyed by `Events`' field names
(`events_message`), never a model instance; the other messages are rare and
go through their model (`ServerModel.encode`).
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from tossim.engine.commands import COMMAND_TYPES

Version = Annotated[int, Field(ge=0, strict=True,
                               description="A version in this viewer's own sequence.")]


def dumps(message: dict[str, Any]) -> str:
    """A message as sent: compact JSON, ASCII-escaped (the one serialiser of
    every message on the socket, so pushes and replies look the same)."""
    return json.dumps(message, separators=(",", ":"))


# ---- client -> server -------------------------------------------------------------------


class ClientModel(BaseModel):
    """A client's message. Unknown fields are ignored (a newer client may
    send more); `problems` is the error text for a message of this type that
    does not validate, by the field at fault ("": any other)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    problems: ClassVar[dict[str, str]] = {}


class Auth(ClientModel):
    """A seat socket's first message (and only there), within 10 s of opening:
    the seat token never travels in the URL."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "auth", "token": "TOKEN", "since": 118},
    ]})
    type: Literal["auth"]
    token: str = Field(description="The seat token from the lobby join.")
    since: Annotated[Version | None,
                     Field(description="The last version this client holds (a reconnect).")
                     ] = None
    problems: ClassVar[dict[str, str]] = {"token": "unknown seat token",
                                          "": "since is a version number"}


class Ping(ClientModel):
    """Keep-alive: answered with `pong`."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "ping"},
    ]})
    type: Literal["ping"]


class Resume(ClientModel):
    """Send again everything after `since`: answered with one `events`
    message, whether or not anything changed."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "resume", "since": 118},
    ]})
    type: Literal["resume"]
    since: Version
    problems: ClassVar[dict[str, str]] = {"": "resume needs since: a version number"}


def _seat_command_schema() -> dict[str, Any]:
    """The JSON Schema of a seat's command: one engine command
    (`tossim.engine.commands`) without `actor`, which the server fills in.
    The engine validates the command itself; the schema documents its shapes."""
    shapes = []
    for kind, cls in COMMAND_TYPES.items():
        if "actor" not in {f.name for f in fields(cls)}:
            continue  # the timer's, never a seat's
        schema = TypeAdapter(cls).json_schema()
        props: dict[str, Any] = {"type": {"const": kind}}
        for name, prop in schema["properties"].items():
            if name != "actor":
                props[name] = {k: v for k, v in prop.items() if k != "title"}
        shape: dict[str, Any] = {
            "title": kind, "type": "object", "properties": props,
            "required": ["type", *(r for r in schema.get("required", []) if r != "actor")],
            "additionalProperties": False}
        if "description" in schema:
            shape["description"] = " ".join(str(schema["description"]).split())
        shapes.append(shape)
    return {"type": "object", "oneOf": shapes}


class Command(ClientModel):
    """A seat's command. `command` is checked by the engine (its error names
    the fault and, where it applies, the candidates); spectators may not send
    one."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "command", "command": {"type": "vote", "target": 5}},
        {"type": "command", "command": {"type": "chat", "text": "I am the Sheriff"}},
    ]})
    type: Literal["command"]
    command: dict[str, Any] = Field(json_schema_extra=_seat_command_schema())
    problems: ClassVar[dict[str, str]] = {"": "command must be an object without actor"}

    @field_validator("command")
    @classmethod
    def _no_actor(cls, value: dict[str, Any]) -> dict[str, Any]:
        if "actor" in value:
            raise PydanticCustomError("actor", "the server fills in the actor")
        return value


def message_type(model: type[BaseModel]) -> str:
    """The `type` tag of a message model."""
    return str(model.model_fields["type"].annotation.__args__[0])  # type: ignore[union-attr]


ClientMessage = Annotated[Auth | Ping | Resume | Command, Field(discriminator="type")]
CLIENT = TypeAdapter(ClientMessage)
CLIENT_TYPES: dict[str, type[ClientModel]] = {message_type(m): m
                                              for m in (Auth, Ping, Resume, Command)}


class WireError(ValueError):
    """A message that is not one the client may send: the text to answer,
    and the field at fault ("" when not one field)."""

    def __init__(self, text: str, field: str = "") -> None:
        super().__init__(text)
        self.field = field


def parse_client(msg: object) -> Auth | Ping | Resume | Command:
    """A decoded JSON value as a client message (WireError: the error text)."""
    if not isinstance(msg, dict):
        raise WireError("a message is a JSON object with a type")
    kind = msg.get("type")
    model = CLIENT_TYPES.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise WireError(f"unknown message type {kind!r}")
    try:
        parsed = CLIENT.validate_python(msg)
    except ValidationError as exc:
        loc = exc.errors()[0]["loc"]
        field = str(loc[1]) if len(loc) > 1 else ""
        text = (model.problems.get(field) or model.problems.get("")
                or f"a malformed {kind} message")
        raise WireError(text, field) from None
    assert isinstance(parsed, Auth | Ping | Resume | Command)
    return parsed


# ---- server -> client -------------------------------------------------------------------


class ServerModel(BaseModel):
    """A server's message. Strict about its fields (a test validates every
    message the server sends against these models); optional fields are
    left out of the JSON unless set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="after")
    def _type_is_sent(self) -> ServerModel:
        self.model_fields_set.add("type")
        return self

    def data(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True)

    def encode(self) -> str:
        return dumps(self.data())


class Hello(ServerModel):
    """The first message once the game has started: which view this socket
    gets, and the newest version it may have."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "hello", "game_id": "9f2c41d07a3e", "viewer": "player 3", "version": 120},
    ]})
    type: Literal["hello"] = "hello"
    game_id: str
    viewer: str = Field(description='"player N", "public" or "omniscient".')
    version: Version


class WireEvent(BaseModel):
    """One event as this viewer receives it (a projection by
    `tossim.engine.view`)."""

    model_config = ConfigDict(extra="forbid")
    v: int = Field(description="Its number in this viewer's own sequence.")
    day: int
    phase: str
    key: str = Field(description="What happened, as a stable key (`text` is its wording).")
    audience: str
    text: str
    data: dict[str, Any]
    to: Annotated[list[int] | None,
                  Field(description="Omniscient viewers only: who saw it.")] = None
    secret: Annotated[dict[str, Any] | None,
                      Field(description="Omniscient viewers only: its secret part.")] = None


class State(BaseModel):
    """The viewer's current view without events."""

    model_config = ConfigDict(extra="forbid")
    day: int
    phase: str
    phase_seq: int
    deadline: float | None = Field(description="The phase's end, UNIX time; null in "
                                               "fast games.")
    roster: list[dict[str, Any]]
    you: dict[str, Any] | None = Field(description="A seat's own card; null for spectators.")
    legal: list[dict[str, Any]] = Field(description="The actions open to this seat now.")
    trial: dict[str, Any] | None
    result: str | None
    winners: list[int]


class Events(ServerModel):
    """The events after the client's last version that this viewer may see,
    and (except for delayed spectators) its state. Sent when either changed,
    and once in answer to `resume`."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "events", "version": 125, "events": [
            {"v": 125, "day": 2, "phase": "voting", "key": "vote", "audience": "public",
             "text": "Alice voted against Bob.", "data": {"voter": 1, "target": 2}}],
         "published_at": 1732249990.1,
         "state": {"day": 2, "phase": "voting", "phase_seq": 9, "deadline": 1732250000.5,
                   "roster": [{"slot": 1, "name": "Alice", "alive": True}],
                   "you": {"slot": 3, "role": "Sheriff"}, "legal": [], "trial": None,
                   "result": None, "winners": []}},
    ]})
    type: Literal["events"] = "events"
    version: Version
    events: list[WireEvent]
    published_at: float | None = Field(
        description="When the game's actor published the newest event this viewer may "
                    "see (null: loaded from the store).")
    state: Annotated[State | None,
                     Field(description="Left out for delayed spectators.")] = None


def events_message(version: int, events: list[dict[str, Any]], published_at: float | None,
                   state: dict[str, Any] | None) -> dict[str, Any]:
    """An `Events` message as a plain dict (the push path: no model instance)."""
    message: dict[str, Any] = {"type": "events", "version": version, "events": events,
                               "published_at": published_at}
    if state is not None:
        message["state"] = state
    return message


class Error(ServerModel):
    """A message or command that was refused; nothing changed. A refused
    command carries the engine's `fault` and `candidates`."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "error", "version": 125, "error": "Player 5 is dead.", "fault": "premise",
         "candidates": [1, 2, 4]},
        {"type": "error", "version": 125, "error": "malformed JSON"},
    ]})
    type: Literal["error"] = "error"
    version: Version
    error: str
    fault: Annotated[str | None, Field(description="A refused command only: the "
                                                   "engine's fault kind (premise, "
                                                   "intention, parameter...).")] = None
    candidates: Annotated[list[Any] | None, Field(description="A refused command only: "
                                                              "the choices that would be "
                                                              "legal.")] = None


class Pong(ServerModel):
    """The answer to `ping`."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "pong", "version": 125},
    ]})
    type: Literal["pong"] = "pong"
    version: Version


class Summary(ServerModel):
    """A day's summary was written or replaced: fetch it from
    `GET /api/games/{id}` (never sent to delayed spectators)."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "summary", "day": 2, "version": 125},
    ]})
    type: Literal["summary"] = "summary"
    day: int
    version: Version


class Next(ServerModel):
    """A finished game's next lobby ("Play again"), once per socket."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "next", "lobby": "9f2c41d07a3e", "version": 310},
    ]})
    type: Literal["next"] = "next"
    lobby: str
    version: Version


class Standins(ServerModel):
    """The seats a stand-in plays now; `you` is, on a seat's own socket, its
    last absence (`{"since", "did"}`), else null."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "standins", "slots": [4], "you": None, "version": 126},
        {"type": "standins", "slots": [],
         "you": {"since": "Day 2", "did": ["voted against Player 3"]}, "version": 140},
    ]})
    type: Literal["standins"] = "standins"
    slots: list[int]
    you: dict[str, Any] | None
    version: Version


class Thinking(ServerModel):
    """One step of a model seat's turn, as it happens (omniscient spectators
    without delay only): `{"kind": "thinking"|"tool"|"fault"|"action", ...}`."""

    model_config = ConfigDict(extra="ignore", json_schema_extra={"examples": [  # bus: more
        {"type": "thinking", "slot": 4, "day": 2, "phase": "voting",
         "step": {"kind": "thinking", "text": "Player 9 claimed Doctor twice..."}},
    ]})
    type: Literal["thinking"] = "thinking"
    slot: int
    day: int
    phase: str
    step: dict[str, Any]


ServerMessage = Annotated[Hello | Events | Error | Pong | Summary | Next | Standins | Thinking,
                          Field(discriminator="type")]
SERVER = TypeAdapter(ServerMessage)
SERVER_MODELS: tuple[type[ServerModel], ...] = (Hello, Events, Error, Pong, Summary, Next,
                                                 Standins, Thinking)
CLIENT_MODELS: tuple[type[ClientModel], ...] = (Auth, Ping, Resume, Command)


def wire_schema() -> dict[str, Any]:
    """One JSON Schema for both directions (`web/wire-schema.json`, written
    by `tossim docs`): `$defs.ClientMessage` and `$defs.ServerMessage` are
    the unions, each discriminated on `type` (its `discriminator.mapping`
    lists every message type)."""
    defs: dict[str, Any] = {}
    unions: dict[str, Any] = {}
    for name, adapter in (("ClientMessage", CLIENT), ("ServerMessage", SERVER)):
        schema = adapter.json_schema(ref_template="#/$defs/{model}")
        for key, value in schema.pop("$defs", {}).items():
            assert defs.get(key, value) == value, f"two models named {key}"
            defs[key] = value
        unions[name] = schema
    for model in defs.values():
        tag = model.get("properties", {}).get("type", {})
        if "const" in tag:  # a message: its type is always there (a default here)
            tag.pop("default", None)
            if "type" not in model.setdefault("required", []):
                model["required"].insert(0, "type")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ToSSim game websocket messages",
        "description": "Generated from tossim/server/wire.py by `tossim docs`; do not edit "
                       "by hand. See docs/api.md, \"Websocket\".",
        "oneOf": [{"$ref": "#/$defs/ClientMessage"}, {"$ref": "#/$defs/ServerMessage"}],
        "$defs": {**unions, **dict(sorted(defs.items()))},
    }
