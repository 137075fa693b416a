"""What the routes do, as plain async functions (the demo loop and the tests
use them too): lobbies, joining, starting, summaries and replays."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tossim.agents.personas import PERSONAS
from tossim.engine import Game, GameConfig
from tossim.engine.modes import MODES, RULESET_VERSION
from tossim.engine.view import (
    OMNISCIENT_VIEWER,
    PUBLIC_VIEWER,
    Viewer,
    project_event,
    view,
    visible_events,
)
from tossim.inference.registry import unavailable_reason
from tossim.replay import LOG_FORMAT, rerun
from tossim.server.names import clean_name, name_problem
from tossim.server.runner import AI_BACKENDS, ActorHub
from tossim.server.sequence import renumber, seq_at
from tossim.server.settings import Settings
from tossim.store import ConflictError, GameRow, SeatRow, Store

MAX_NAME = 24


class ServiceError(Exception):
    """An error for the client. `loc` says which input a 422 is about (the
    routes answer 422s in FastAPI's validation-error form, as the OpenAPI
    schema declares them)."""

    def __init__(self, status: int, detail: str,
                 loc: tuple[str | int, ...] = ("body",)) -> None:
        super().__init__(detail)
        self.status, self.detail, self.loc = status, detail, loc


class Strict(BaseModel):
    """Request bodies: unknown fields are refused (a typo is an error, and a
    client cannot park data in a lobby), every string is bounded."""

    model_config = ConfigDict(extra="forbid")


class SeatSpec(Strict):
    slot: int = Field(ge=1, le=15)
    kind: Literal["human", "ai"] = "ai"
    backend: str = Field(default="scripted", max_length=32)
    model: str | None = Field(default=None, max_length=200)
    persona: str | None = Field(default=None, max_length=40)
    protocol: Literal["xml", "json"] = "xml"

    @field_validator("persona")
    @classmethod
    def _known_persona(cls, v: str | None) -> str | None:
        if v is not None and v not in PERSONAS:
            raise ValueError(f"persona is one of {', '.join(PERSONAS)}")
        return v


class LobbyIn(Strict):
    mode: str = Field(default="classic", max_length=32)
    players: int = Field(default=15, ge=7, le=15)
    speed: Literal["standard", "fast", "paced"] = "standard"
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1)
    seats: list[SeatSpec] = Field(default_factory=list, max_length=15)

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, v: str) -> str:
        if v not in MODES:
            raise ValueError(f"unknown mode {v!r}")
        return v


class JoinIn(Strict):
    name: str = Field(min_length=1, max_length=MAX_NAME)
    slot: int | None = Field(default=None, ge=1, le=15)

    @field_validator("name")
    @classmethod
    def _printable(cls, v: str) -> str:
        v = clean_name(v)  # NFKC, no bidi overrides or zero-width characters
        if not v or len(v) > MAX_NAME or not v.isprintable() or "<" in v or ">" in v:
            raise ValueError("a name is 1-24 printable characters without < or >")
        return v


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def seat_out(s: SeatRow) -> dict[str, Any]:
    return {"slot": s.slot, "name": s.name, "kind": s.kind, "claimed": s.claimed,
            "backend": s.backend if s.kind == "ai" else None, "persona": s.persona}


def lobby_out(row: GameRow) -> dict[str, Any]:
    return {"id": row.id, "mode": row.config["mode"], "players": row.config["players"],
            "speed": row.lobby.get("speed", "standard"), "status": row.status,
            "demo": bool(row.lobby.get("demo")), "created_at": row.created_at.isoformat(),
            "seats": [seat_out(s) for s in row.seats]}


def all_ai(row: GameRow) -> bool:
    return not any(s.kind == "human" and s.claimed for s in row.seats)


def backend_unavailable(backend: str, settings: Settings) -> str | None:
    """Why this server cannot play model seats on `backend` (None: it can).
    With inference on workers the workers run the models: a seat waits for
    one that offers its backend."""
    if settings.inference == "workers":
        return None
    return unavailable_reason(backend, settings.openai_url)


async def create_lobby(store: Store, spec: LobbyIn, *, demo: bool = False,
                       settings: Settings | None = None) -> GameRow:
    slots = [s.slot for s in spec.seats]
    if len(set(slots)) != len(slots) or any(s > spec.players for s in slots):
        raise ServiceError(422, f"seat numbers must be unique and within 1-{spec.players}",
                           ("body", "seats"))
    humans = [s for s in spec.seats if s.kind == "human"]
    if humans and spec.speed != "standard":
        raise ServiceError(422, "fast and paced games are for AI seats only", ("body", "speed"))
    for s in spec.seats:
        if s.kind == "ai" and s.backend not in AI_BACKENDS:
            raise ServiceError(422, f"AI backend {s.backend!r} is not available "
                                    f"(available: {', '.join(AI_BACKENDS)})",
                               ("body", "seats", "backend"))
        if s.kind == "ai" and s.backend != "scripted":
            why = backend_unavailable(s.backend, settings or Settings())
            if why is not None:
                raise ServiceError(422, f"AI backend {s.backend!r} is not available on this "
                                        f"server: {why}", ("body", "seats", "backend"))
        if s.model is not None:
            raise ServiceError(422, "the server's configuration chooses the model; "
                                    "leave `model` out", ("body", "seats", "model"))
    game_id = uuid.uuid4().hex
    asked = spec.seed if spec.seed is not None else secrets.randbelow(2**31)
    seed = asked
    if humans:
        seed = fair_seed((settings or Settings()).server_secret(), game_id, spec.seed)
    config = GameConfig(mode=spec.mode, players=spec.players, seed=seed)
    given = {s.slot: s for s in spec.seats}
    seats = []
    for slot in range(1, spec.players + 1):
        s = given.get(slot) or SeatSpec(slot=slot)
        seats.append(SeatRow(slot=slot, name=f"Player {slot}", kind=s.kind,
                             backend=s.backend if s.kind == "ai" else None, model=s.model,
                             persona=s.persona, protocol=s.protocol, token_hash=None,
                             claimed=False))
    lobby: dict[str, Any] = {"speed": spec.speed, "demo": demo}
    if humans:
        lobby["fair_deal"] = True
    await store.create_game(game_id, config.to_dict(), lobby, seats)
    row = await store.get_game(game_id)
    assert row is not None
    return row


def fair_seed(secret: bytes, game_id: str, asked: int | None) -> int:
    """The seed of a game with a human seat: HMAC-SHA256 of the game's id and
    the creator's seed (if any) under the server's secret. The creator still
    picks a seed, but cannot compute the deal from it; the game id makes a
    seed reused in another game give another deal."""
    msg = f"tossim-deal:{game_id}:{'' if asked is None else asked}".encode()
    digest = hmac.new(secret, msg, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # 0 .. 2**63-1, like a lobby's seed


async def get_row(store: Store, game_id: str) -> GameRow:
    row = await store.get_game(game_id) if len(game_id) <= 64 else None
    if row is None:
        raise ServiceError(404, "no such game")
    return row


async def join(store: Store, game_id: str, body: JoinIn) -> dict[str, Any]:
    row = await get_row(store, game_id)
    if row.status != "lobby":
        raise ServiceError(409, "this game has already started")
    problem = name_problem(body.name, [s.name for s in row.seats if s.claimed])
    if problem is not None:
        raise ServiceError(409, problem)
    free = [s.slot for s in row.seats if s.kind == "human" and not s.claimed]
    if body.slot is not None:
        free = [s for s in free if s == body.slot]
    if not free:
        raise ServiceError(409, "no free human seat" + (f" {body.slot}" if body.slot else ""))
    token = secrets.token_urlsafe(24)
    if not await store.claim_seat(game_id, free[0], body.name, token_hash(token)):
        raise ServiceError(409, "that seat was just taken")
    return {"game_id": game_id, "slot": free[0], "token": token}


async def start(store: Store, actors: ActorHub, game_id: str) -> GameRow:
    row = await get_row(store, game_id)
    if row.status != "lobby":
        raise ServiceError(409, "this game has already started")
    names = []
    for s in row.seats:
        name = s.name if s.kind == "human" and s.claimed else f"Player {s.slot}"
        names.append(name if name not in names else f"{name} ({s.slot})")
    config = GameConfig.from_dict({**row.config, "names": names})
    try:
        await store.start_game(game_id, config.to_dict())
    except ConflictError:
        raise ServiceError(409, "this game has already started") from None
    await actors.start_game(game_id)
    return await get_row(store, game_id)


async def rebuild(store: Store, game_id: str, row: GameRow) -> Game:
    """The game's current state, from its config and command log (the truth)."""
    commands = await store.commands(game_id)
    return rerun(GameConfig.from_dict(row.config), [c for _, _, c in commands])


def privileged_allowed(row: GameRow) -> bool:
    """Omniscient and player views are offered only where they cannot help a
    living human: all-AI games and finished games."""
    return row.status == "finished" or all_ai(row)


def parse_viewer_param(text: str, players: int) -> Viewer:
    if text in ("public", "omniscient"):
        return PUBLIC_VIEWER if text == "public" else OMNISCIENT_VIEWER
    # ASCII digits only: "²".isdigit() is true, but int("²") raises
    if text.isascii() and text.isdigit() and len(text) <= 2 and 1 <= int(text) <= players:
        return Viewer.player(int(text))
    raise ServiceError(422, "viewer is public, omniscient or a seat number",
                       ("query", "viewer"))


async def summary(store: Store, game_id: str) -> dict[str, Any]:
    row = await get_row(store, game_id)
    out = lobby_out(row)
    out.update({"day": row.day, "phase": row.phase, "version": 0,
                "result": row.result, "winners": row.winners, "graveyard": []})
    if row.status in ("live", "finished"):
        game = await rebuild(store, game_id, row)
        # a live game with human seats: the public sequence (the game's own
        # version would count hidden events); otherwise the game's version
        out["version"] = (game.version if privileged_allowed(row)
                          else seq_at(game, PUBLIC_VIEWER, game.version))
        out["graveyard"] = [e for e in view(game, PUBLIC_VIEWER).roster if not e["alive"]]
        out["names"] = [p.name for p in game.players]
    # AI-written summaries of the public discussion of each finished day
    out["summaries"] = [{"day": d, "text": t} for d, t in await store.summaries(game_id)]
    return out


async def replay(store: Store, game_id: str, viewer_text: str) -> dict[str, Any]:
    row = await get_row(store, game_id)
    if row.status == "lobby":
        raise ServiceError(409, "this game has not started")
    viewer = parse_viewer_param(viewer_text, row.config["players"])
    if viewer.kind != "public" and not privileged_allowed(row):
        raise ServiceError(403, "this view is offered once the game has finished")
    game = await rebuild(store, game_id, row)
    config = dict(row.config)
    out: dict[str, Any] = {"format": LOG_FORMAT, "ruleset": row.ruleset or RULESET_VERSION,
                           "viewer": viewer.label(), "status": row.status,
                           # numbered in the viewer's own sequence, like its
                           # websocket stream (tossim.server.sequence)
                           "events": renumber([project_event(e, viewer)
                                               for e in visible_events(game, viewer)], 1)}
    if viewer.kind == "omniscient":
        out["config"] = config
        out["seed"] = config["seed"]
        out["commands"] = list(game.commands)
    else:
        # the seed and the dealt roles would reveal hidden roles
        out["config"] = {k: v for k, v in config.items() if k not in ("seed", "roles")}
        out["seed"] = None
        out["commands"] = []
    return out
