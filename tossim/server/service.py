"""What the routes do, as plain async functions (the demo loop and the tests
use them too): lobbies, joining, starting, summaries and replays."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tossim.agents.personas import PERSONAS
from tossim.engine import Game, GameConfig, role_lists
from tossim.engine.modes import DURATIONS, MODES, RULESET_VERSION
from tossim.engine.replay import LOG_FORMAT, rerun
from tossim.engine.role_lists import RoleListError
from tossim.engine.roles import ROLES
from tossim.engine.rules import ConfigError, make_config
from tossim.engine.view import (
    OMNISCIENT_VIEWER,
    PUBLIC_VIEWER,
    Viewer,
    project_event,
    view,
    visible_events,
)
from tossim.inference.catalogue import CatalogueError, ModelEntry, backend_entry, cached_catalogue
from tossim.inference.registry import unavailable_reason
from tossim.server.bus import lobby_channel
from tossim.server.names import clean_name, name_problem
from tossim.server.runner import AI_BACKENDS, SPEED_SCALE, ActorHub
from tossim.server.sequence import renumber, seq_at
from tossim.server.settings import Settings
from tossim.store import ConflictError, GameRow, SeatRow, Store

MAX_NAME = 24

# Speeds a lobby may choose. Timed speeds run on real phase timers (the
# standard lengths times SPEED_SCALE); the others are for all-AI games only.
TIMED_SPEEDS = ("standard", "quick")
SPEEDS: dict[str, str] = {
    "standard": "Standard: real Town of Salem phase lengths",
    "quick": "Quick: half-length phases, still playable by people",
    "fast": "Fast: all-AI only, a phase ends as soon as every seat acted",
    "paced": "Paced: all-AI only, a short pause after each decision (easy to watch)",
}


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
    # a model catalogue entry's name (GET /api/models); it decides the backend
    model: str | None = Field(default=None, max_length=64)
    persona: str | None = Field(default=None, max_length=40)
    # xml or json (default: the entry's protocol; chat entries always use json)
    protocol: Literal["xml", "json"] | None = None
    # free text or structured speech moves (default: the entry's `speech`;
    # docs/agents.md#speech-moves); kept in the lobby document by slot
    speech: Literal["free", "moves"] | None = None

    @field_validator("persona")
    @classmethod
    def _known_persona(cls, v: str | None) -> str | None:
        if v is not None and v not in PERSONAS:
            raise ValueError(f"persona is one of {', '.join(PERSONAS)}")
        return v


def _clean_name(v: str) -> str:
    v = clean_name(v)  # NFKC, no bidi overrides or zero-width characters
    if not v or len(v) > MAX_NAME or not v.isprintable() or "<" in v or ">" in v:
        raise ValueError("a name is 1-24 printable characters without < or >")
    return v


class LobbyIn(Strict):
    mode: str = Field(default="classic", max_length=32)
    players: int = Field(default=15, ge=7, le=15)
    speed: Literal["standard", "quick", "fast", "paced"] = "standard"
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1)
    seats: list[SeatSpec] = Field(default_factory=list, max_length=15)
    # A custom role list (mode "custom"): slots such as "Jailor",
    # "Town Investigative", "Random Mafia", "Any"; `players` defaults to its length.
    roles: list[Annotated[str, Field(min_length=1, max_length=40)]] | None = Field(
        default=None, min_length=1, max_length=15)
    # the creator's name: given, the creator also claims the first human seat
    # in the same request (so a refused name leaves no lobby behind)
    name: str | None = Field(default=None, min_length=1, max_length=MAX_NAME)

    @field_validator("name")
    @classmethod
    def _printable(cls, v: str | None) -> str | None:
        return None if v is None else _clean_name(v)

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, v: str) -> str:
        if v not in MODES:
            raise ValueError(f"unknown mode {v!r}")
        return v


def lobby_config(spec: LobbyIn, seed: int) -> GameConfig:
    """The engine config of a lobby, checked now so that a list that cannot be
    dealt is refused (422 naming the slot) before anything is stored."""
    players = spec.players if "players" in spec.model_fields_set or not spec.roles else None
    try:
        return make_config(spec.mode, players, seed, spec.roles)
    except RoleListError as exc:
        loc: tuple[Any, ...] = ("body", "roles") if exc.slot is None \
            else ("body", "roles", exc.slot - 1)
        raise ServiceError(422, str(exc), loc) from None
    except ConfigError as exc:
        raise ServiceError(422, str(exc), ("body", "roles" if spec.roles else "mode")) from None


class JoinIn(Strict):
    name: str = Field(min_length=1, max_length=MAX_NAME)
    slot: int | None = Field(default=None, ge=1, le=15)

    @field_validator("name")
    @classmethod
    def _printable(cls, v: str) -> str:
        return _clean_name(v)


class NextIn(Strict):
    """A finished game's player asks for its next lobby ("Play again")."""
    # the name to play under (default: the name this player had in the game)
    name: str | None = Field(default=None, min_length=1, max_length=MAX_NAME)

    @field_validator("name")
    @classmethod
    def _printable(cls, v: str | None) -> str | None:
        return None if v is None else _clean_name(v)


class LobbySettingsIn(Strict):
    """What a lobby's owner may change before the start: the speed and the
    seats nobody has claimed (human or AI, and which AI)."""
    speed: Literal["standard", "quick", "fast", "paced"] | None = None
    seats: list[SeatSpec] = Field(default_factory=list, max_length=15)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def seat_label(kind: str, backend: str | None, model: str | None = None) -> str:
    """What plays a seat, in words for spectators: "human", "scripted bot" or
    "model (local)" / "model (gpt-4o-mini)" (the catalogue entry when a seat
    names one; the demo mixes model seats with scripted ones)."""
    if kind != "ai":
        return "human"
    if backend in (None, "scripted"):
        return "scripted bot"
    return f"model ({model or backend})"


def seat_out(s: SeatRow) -> dict[str, Any]:
    return {"slot": s.slot, "name": s.name, "kind": s.kind, "claimed": s.claimed,
            "backend": s.backend if s.kind == "ai" else None,
            "model": s.model if s.kind == "ai" else None, "persona": s.persona,
            "label": seat_label(s.kind, s.backend, s.model)}


def lobby_out(row: GameRow) -> dict[str, Any]:
    return {"id": row.id, "mode": row.config["mode"], "players": row.config["players"],
            "speed": row.lobby.get("speed", "standard"), "status": row.status,
            "demo": bool(row.lobby.get("demo")), "created_at": row.created_at.isoformat(),
            # a custom role list is public (every player sees it at the start)
            "roles": list(row.config.get("role_list") or []) or None,
            "seats": [seat_out(s) for s in row.seats]}


def modes_out() -> dict[str, Any]:
    """Every mode the engine deals, with its role list (GET /api/modes)."""
    def role_name(text: str) -> str:
        slot = role_lists.parse_slot(text)
        if slot.kind is role_lists.SlotKind.ROLE:
            return ROLES[slot.value].name
        if slot.kind is role_lists.SlotKind.FACTION:
            return f"Random {slot.value.title()}"
        return "Any" if slot.kind is role_lists.SlotKind.ANY else slot.value

    durations = DURATIONS["current"]
    return {
        "modes": [{"key": m.key, "name": m.name, "min_players": m.min_players,
                   "max_players": m.max_players, "roles": list(m.slots),
                   "custom": m.custom, "description": m.description,
                   "role_names": [role_name(k) for k in m.slots]}
                  for m in MODES.values()],
        "speeds": [{"key": k, "label": v, "humans": k in TIMED_SPEEDS,
                    "durations": ({p: round(d * SPEED_SCALE[k], 1) for p, d in durations.items()}
                                  if k in TIMED_SPEEDS else None)}
                   for k, v in SPEEDS.items()],
    }


def check_owner(row: GameRow, authorization: str | None, what: str) -> None:
    """Refuse (403) unless `authorization` is `Bearer <the lobby's owner token>`."""
    stored = row.lobby.get("owner_hash")
    token = ""
    if authorization and authorization[:7].lower() == "bearer ":
        token = authorization[7:].strip()
    if not stored or not token or not secrets.compare_digest(token_hash(token), stored):
        raise ServiceError(403, f"only the lobby's owner can {what}")


def all_ai(row: GameRow) -> bool:
    return not any(s.kind == "human" and s.claimed for s in row.seats)


def backend_unavailable(backend: str, settings: Settings) -> str | None:
    """Why this server cannot play model seats on `backend` (None: it can).
    With inference on workers the workers run the models: a seat waits for
    one that offers its backend."""
    if settings.inference == "workers":
        return None
    return unavailable_reason(backend, settings.openai_url)


def seat_entry(s: SeatSpec, settings: Settings) -> ModelEntry:
    """The catalogue entry an AI seat spec plays, or a 422 naming the
    unknown entry or saying why this server cannot run it."""
    if s.model is not None:
        try:
            entry = cached_catalogue(settings.models).get(s.model)
        except KeyError as exc:
            raise ServiceError(422, str(exc.args[0]), ("body", "seats", "model")) from None
        except CatalogueError as exc:
            raise ServiceError(422, f"the server's model catalogue is broken: {exc}",
                               ("body", "seats", "model")) from None
        if "backend" in s.model_fields_set and s.backend != entry.backend:
            raise ServiceError(422, f"entry {entry.name!r} plays on the {entry.backend} "
                                    f"backend, not {s.backend!r}; leave `backend` out",
                               ("body", "seats", "backend"))
        loc: tuple[str | int, ...] = ("body", "seats", "model")
    else:
        if s.backend not in AI_BACKENDS:
            raise ServiceError(422, f"AI backend {s.backend!r} is not available "
                                    f"(available: {', '.join(AI_BACKENDS)}; hosted models "
                                    "are seated by `model`: GET /api/models)",
                               ("body", "seats", "backend"))
        entry = backend_entry(s.backend)
        loc = ("body", "seats", "backend")
    why = entry_unavailable(entry, settings)
    if why is not None:
        what = (f"model entry {entry.name!r}" if s.model is not None
                else f"AI backend {entry.backend!r}")
        raise ServiceError(422, f"{what} is not available on this server: {why}", loc)
    return entry


def entry_unavailable(entry: ModelEntry, settings: Settings) -> str | None:
    """Why this server cannot play `entry` (None: it can); with inference on
    workers, in-process model backends wait for a worker instead."""
    if entry.backend in ("scripted", "chat"):
        return entry.unavailable_reason()
    if settings.inference == "workers":
        return None
    return unavailable_reason(entry.backend, entry.base_url or settings.openai_url)


def check_seats(seats: list[SeatSpec], players: int, speed: str,
                settings: Settings | None) -> dict[int, ModelEntry]:
    """Refuse (422) seat specs this server cannot play; nothing is stored
    before. Returns the catalogue entry of each AI seat, by slot."""
    slots = [s.slot for s in seats]
    if len(set(slots)) != len(slots) or any(s > players for s in slots):
        raise ServiceError(422, f"seat numbers must be unique and within 1-{players}",
                           ("body", "seats"))
    humans = [s for s in seats if s.kind == "human"]
    if humans and speed not in TIMED_SPEEDS:
        raise ServiceError(422, "fast and paced games are for AI seats only", ("body", "speed"))
    settings = settings or Settings()
    entries: dict[int, ModelEntry] = {}
    for s in seats:
        if s.kind == "ai":
            entries[s.slot] = seat_entry(s, settings)
            if s.speech is not None and entries[s.slot].backend in ("scripted", "chat"):
                raise ServiceError(422, f"seat {s.slot}: `speech` is for model seats on "
                                        "local, vllm or openai (a chat entry writes free "
                                        "text)", ("body", "seats", "speech"))
        elif s.model is not None or s.speech is not None:
            raise ServiceError(422, "a human seat takes no `model` or `speech`",
                               ("body", "seats", "model" if s.model else "speech"))
    return entries


def seat_speech(current: dict[str, Any], seats: list[SeatSpec]) -> dict[str, str]:
    """The lobby document's `speech` (slot -> free | moves) after `seats`
    are set: a seat given again keeps only what it says now."""
    out = {k: v for k, v in current.items() if int(k) not in {s.slot for s in seats}}
    out.update({str(s.slot): s.speech for s in seats if s.speech is not None})
    return out


async def create_lobby(store: Store, spec: LobbyIn, *, demo: bool = False,
                       settings: Settings | None = None,
                       game_id: str | None = None) -> GameRow:
    """Create a lobby (its owner token is dropped: for the demo, arenas and
    tests). `game_id` (default: a fresh one) lets a caller that planned the
    game in advance (an arena) find it again after a restart."""
    row, _ = await open_lobby(store, spec, demo=demo, settings=settings, game_id=game_id)
    return row


async def open_lobby(store: Store, spec: LobbyIn, *, demo: bool = False,
                     settings: Settings | None = None,
                     game_id: str | None = None) -> tuple[GameRow, dict[str, Any]]:
    """Validate everything, then store the lobby (a refused request stores
    nothing). Returns the lobby and what is shown to its creator once:
    `owner_token`, and `seat` ({game_id, slot, token}) when `spec.name` is set."""
    game_id = game_id or uuid.uuid4().hex
    seed = spec.seed if spec.seed is not None else secrets.randbelow(2**31)
    humans = any(s.kind == "human" for s in spec.seats)
    if humans:  # a fair deal: the creator cannot compute it from the seed they asked for
        seed = fair_seed((settings or Settings()).server_secret(), game_id, spec.seed)
    config = lobby_config(spec, seed)  # mode, players and role list, or a 422
    entries = check_seats(spec.seats, config.players, spec.speed, settings)
    if spec.name is not None and not humans:
        raise ServiceError(422, "a name claims a human seat, and this lobby has none",
                           ("body", "name"))
    if spec.name is not None and (problem := name_problem(spec.name, [])) is not None:
        raise ServiceError(409, problem)  # "Player 9", a role name ... (as when joining)
    given = {s.slot: s for s in spec.seats}
    seats = []
    for slot in range(1, config.players + 1):
        s = given.get(slot) or SeatSpec(slot=slot)
        entry = entries.get(slot)
        # the row keeps the entry's name (never a URL or a key)
        seats.append(SeatRow(slot=slot, name=f"Player {slot}", kind=s.kind,
                             backend=entry.backend if entry else None,
                             model=s.model if entry else None, persona=s.persona,
                             protocol=s.protocol or (entry.protocol if entry else "xml"),
                             token_hash=None, claimed=False))
    owner_token = secrets.token_urlsafe(24)
    if spec.name is not None:  # the creator's seat, claimed with the lobby
        first = next(s for s in seats if s.kind == "human")
        seat_token = secrets.token_urlsafe(24)
        first.name, first.claimed, first.token_hash = spec.name, True, token_hash(seat_token)
    lobby: dict[str, Any] = {"speed": spec.speed, "demo": demo,
                             "owner_hash": token_hash(owner_token),
                             # the deal is decided again at the start, from the
                             # final seats (a PATCH may add human seats)
                             "asked_seed": spec.seed}
    if speech := seat_speech({}, spec.seats):
        lobby["speech"] = speech
    if humans:
        lobby["fair_deal"] = True
    await store.create_game(game_id, config.to_dict(), lobby, seats)
    row = await store.get_game(game_id)
    assert row is not None
    # shown once, never stored in the clear
    shown: dict[str, Any] = {"owner_token": owner_token}
    if spec.name is not None:
        shown["seat"] = {"game_id": game_id, "slot": first.slot, "token": seat_token}
    return row, shown


async def update_lobby(store: Store, game_id: str, body: LobbySettingsIn,
                       authorization: str | None,
                       settings: Settings | None = None) -> GameRow:
    """The owner changes the speed or unclaimed seats (all checked first)."""
    row = await get_row(store, game_id)
    check_owner(row, authorization, "change its settings")
    if row.status != "lobby":
        raise ServiceError(409, "this game has already started")
    current = {s.slot: s for s in row.seats}
    speed = body.speed or row.lobby.get("speed", "standard")
    for s in body.seats:
        seat = current.get(s.slot)
        if seat is not None and seat.claimed:
            raise ServiceError(409, f"seat {s.slot} is taken: remove its player first",
                               ("body", "seats"))
    merged: dict[int, SeatSpec] = {
        slot: SeatSpec(slot=slot, kind="human" if r.kind == "human" else "ai",
                       backend=r.backend or "scripted", persona=r.persona,
                       protocol="json" if r.protocol == "json" else "xml")
        for slot, r in current.items()}
    merged.update({s.slot: s for s in body.seats})
    entries = check_seats(list(merged.values()), row.config["players"], speed, settings)
    seats = [SeatRow(slot=s.slot, name=f"Player {s.slot}", kind=s.kind,
                     backend=entries[s.slot].backend if s.slot in entries else None,
                     model=s.model if s.slot in entries else None, persona=s.persona,
                     protocol=s.protocol or (entries[s.slot].protocol if s.slot in entries
                                             else "xml"))
             for s in body.seats]
    doc = {**row.lobby, "speed": speed}
    if speech := seat_speech(dict(row.lobby.get("speech") or {}), body.seats):
        doc["speech"] = speech
    else:
        doc.pop("speech", None)
    if not await store.update_lobby(game_id, doc, seats):
        raise ServiceError(409, "this game has already started")
    return await get_row(store, game_id)


async def remove_seat(store: Store, game_id: str, slot: int,
                      authorization: str | None) -> GameRow:
    """Free a claimed human seat of a lobby: the owner removes (kicks) anyone;
    a player may leave with their own seat token."""
    row = await get_row(store, game_id)
    seat = next((s for s in row.seats if s.slot == slot), None)
    if seat is None:
        raise ServiceError(404, f"no seat {slot}")
    token = authorization[7:].strip() if authorization and \
        authorization[:7].lower() == "bearer " else ""
    own = bool(token) and seat.token_hash is not None and secrets.compare_digest(
        token_hash(token), seat.token_hash)
    if not own:
        check_owner(row, authorization, "remove a player")
    if row.status != "lobby":
        raise ServiceError(409, "this game has already started")
    if not await store.release_seat(game_id, slot):
        raise ServiceError(409, f"seat {slot} is not taken")
    return await get_row(store, game_id)


def fair_seed(secret: bytes, game_id: str, asked: int | None) -> int:
    """The seed of a game with a human seat: HMAC-SHA256 of the game's id and
    the creator's seed (if any) under the server's secret. The creator still
    picks a seed, but cannot compute the deal from it; the game id makes a
    seed reused in another game give another deal."""
    msg = f"tossim-deal:{game_id}:{'' if asked is None else asked}".encode()
    digest = hmac.new(secret, msg, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # 0 .. 2**63-1, like a lobby's seed


def deal_seed(row: GameRow, settings: Settings) -> int:
    """The seed a lobby is dealt from, decided at the start from its final
    seats: the fair seed if any seat is human (whatever the seats were when
    the lobby was made), else the seed asked for (else the lobby's own
    random one). Lobbies stored before `asked_seed` keep their seed."""
    seed = int(row.config["seed"])
    if "asked_seed" not in row.lobby:
        return seed
    asked = row.lobby["asked_seed"]
    if any(s.kind == "human" for s in row.seats):
        return fair_seed(settings.server_secret(), row.id, asked)
    return int(asked) if asked is not None else seed


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
    config = GameConfig.from_dict({**row.config, "names": names,
                                   "seed": deal_seed(row, actors.settings)})
    try:
        # this process takes the game's lease with the start: it runs the game
        await store.start_game(game_id, config.to_dict(), lease=(actors.owner, actors.lease_s))
    except ConflictError:
        raise ServiceError(409, "this game has already started") from None
    try:
        await actors.start_game(game_id)
    finally:  # the seat sockets waiting in the lobby (tossim.server.lobby_watch)
        await actors.bus.publish(lobby_channel(game_id), {"type": "started"})
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
                "result": row.result, "winners": row.winners, "graveyard": [],
                # the lobby its players were offered after it ended ("Play again")
                "next_lobby": row.lobby.get("next")})
    if row.status in ("live", "finished"):
        game = await rebuild(store, game_id, row)
        # a live game with human seats: the public sequence (the game's own
        # version would count hidden events); otherwise the game's version
        out["version"] = (game.version if privileged_allowed(row)
                          else seq_at(game, PUBLIC_VIEWER, game.version))
        out["graveyard"] = [e.to_dict() for e in view(game, PUBLIC_VIEWER).roster
                            if not e.alive]
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


def next_lobby_id(game_id: str) -> str:
    """The id of a finished game's next lobby, derived from the game's: two
    players clicking "Play again" at once (in any process) name the same
    lobby, and the store lets only one of them create it."""
    return hashlib.sha256(f"tossim-next:{game_id}".encode()).hexdigest()[:32]


def bearer(authorization: str | None) -> str:
    if authorization and authorization[:7].lower() == "bearer ":
        return authorization[7:].strip()
    return ""


async def play_again(store: Store, game_id: str, body: NextIn, authorization: str | None,
                     settings: Settings | None = None) -> tuple[GameRow, dict[str, Any], bool]:
    """"Play again" for a finished game with human seats: one next lobby per
    game (same mode, players, speed, role list and seat kinds; a new deal),
    made by the first player who asks, who owns it; every player who asks
    takes a seat in it (their old slot when it is free). The caller proves
    they played the game with that game's seat token (Bearer).

    Returns the next lobby, what is shown to this caller once (`owner_token`
    for its creator, `seat` when a seat was claimed) and whether this call
    created it. A lobby that started meanwhile, or has no free human seat,
    gives no seat: the caller can watch it."""
    row = await get_row(store, game_id)
    token = bearer(authorization)
    mine = next((s for s in row.seats if s.kind == "human" and s.claimed and s.token_hash
                 and token and secrets.compare_digest(token_hash(token), s.token_hash)), None)
    if mine is None:
        raise ServiceError(403, "only a player of this game (with its seat token) can "
                                "ask for its next lobby")
    if row.status != "finished":
        raise ServiceError(409, "this game is not over yet")
    next_id = next_lobby_id(game_id)
    spec = LobbyIn(mode=row.config["mode"], players=row.config["players"],
                   speed=row.lobby.get("speed", "standard"),
                   roles=list(row.config.get("role_list") or []) or None,
                   seats=[SeatSpec(slot=s.slot, kind="human") if s.kind == "human"
                          else SeatSpec(slot=s.slot, kind="ai", model=s.model,
                                        persona=s.persona) if s.model
                          else SeatSpec(slot=s.slot, kind="ai", backend=s.backend or "scripted",
                                        persona=s.persona)
                          for s in row.seats])
    shown: dict[str, Any] = {}
    created = True
    try:
        _, shown = await open_lobby(store, spec, settings=settings, game_id=next_id)
    except ConflictError:
        created = False  # another player's click made it first
    if created:
        await store.set_lobby_field(game_id, "next", next_id)
    name = body.name or mine.name
    nxt = await get_row(store, next_id)
    free = [s.slot for s in nxt.seats if s.kind == "human" and not s.claimed]
    if nxt.status == "lobby" and free:
        slot = mine.slot if mine.slot in free else None
        try:
            shown["seat"] = await join(store, next_id, JoinIn(name=name, slot=slot))
        except ServiceError as exc:
            if exc.status != 409:
                raise
            # the seat went to someone else meanwhile, or the name is taken: no seat
    return await get_row(store, next_id), shown, created
