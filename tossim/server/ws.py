"""Websockets: authenticate, subscribe to the game's mirror, forward projected
events; forward seat commands to the game's actor (in whichever process runs it)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections import Counter
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from pydantic import ValidationError
from starlette.websockets import WebSocketState

from tossim.engine.view import Viewer, view
from tossim.server.bus import command_channel, thinking_channel
from tossim.server.mirror import GameMirror, Push
from tossim.server.names import strip_format
from tossim.server.sequence import newest_at, renumber, seq_at, version_at
from tossim.server.service import (
    ServiceError,
    get_row,
    parse_viewer_param,
    privileged_allowed,
    token_hash,
)
from tossim.server.uvicorn_direct import DirectSocket, direct_socket
from tossim.server.wire import (
    Auth,
    Command,
    Error,
    Hello,
    Next,
    Ping,
    Pong,
    Resume,
    ServerModel,
    Standins,
    Summary,
    Thinking,
    WireError,
    dumps,
    events_message,
    parse_client,
)
from tossim.timeouts import stopped, within

router = APIRouter()

CLOSE_PROTOCOL = 4400
CLOSE_UNAUTHORIZED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_TOO_MANY = 4429
REPLY_TIMEOUT = 5.0
# A seat command the game has not taken up within this many seconds is
# dropped by the game's actor unapplied, well before the socket gives up at
# REPLY_TIMEOUT: "the game did not answer" then means it was not applied, so a
# player who sends it again does not double it (docs/architecture.md, "Day summaries").
COMMAND_TTL = REPLY_TIMEOUT / 2
AUTH_TIMEOUT = 10.0
# A seat socket waiting in the lobby re-reads the lobby when its bus channel
# says it changed (tossim.server.lobby_watch), and otherwise only this often,
# in case a bus message was lost (a Redis reconnect).
LOBBY_RECHECK = 30.0
SEAT_GONE = ("your seat was given up or removed: this socket no longer plays it "
             "(join again for a seat)")
MAX_TOKEN = 200
# pushes sent by this process, by path: "frame" (written by the mirror's
# fan-out straight to the transport) or "asgi" (a socket's own task)
PUSHES_SENT: Counter[str] = Counter()
TOKEN_IN_URL = ('a token never travels in the URL: send {"type": "auth", "token": ...} '
                'as the first message')


async def refuse(ws: WebSocket, code: int, reason: str) -> None:
    """Close with one of our close codes. The socket is accepted first: a close
    before the handshake is answered with a bare HTTP 403, and the client never
    learns the code."""
    await ws.accept()
    await ws.close(code=code, reason=reason)


@router.websocket("/ws/games/{game_id}")
async def seat_socket(ws: WebSocket, game_id: str, since: int = 0) -> None:
    """A seat's socket. The token comes in the first message,
    `{"type": "auth", "token": ..., "since": v}`, never in the URL (where
    access logs, proxies and browser history would keep it)."""
    if any(k.lower() == "token" for k in ws.query_params):  # ?TOKEN= too
        await refuse(ws, CLOSE_PROTOCOL, TOKEN_IN_URL)
        return
    await ws.accept()
    try:
        auth = await first_message(ws)
    except WebSocketDisconnect:
        return
    except WireError as exc:
        code = CLOSE_UNAUTHORIZED if exc.field == "token" else CLOSE_PROTOCOL
        await ws.close(code=code, reason=str(exc)[:120])
        return
    asked = auth.since if auth.since is not None else since
    if asked < 0:
        await ws.close(code=CLOSE_PROTOCOL, reason="since is a version number")
        return
    store = ws.app.state.store
    seat = None
    if 0 < len(auth.token) <= MAX_TOKEN:
        seat = await store.seat_for_token(game_id, token_hash(auth.token))
    if seat is None:
        await ws.close(code=CLOSE_UNAUTHORIZED, reason="unknown seat token")
        return
    limiter = ws.app.state.limiter
    # counted per claim, not per slot: a socket of a claim that was freed
    # never holds one of the next occupant's sockets
    claim = seat.token_hash or ""
    key = (f"{game_id}:{claim[:16]}", seat.slot)
    if not await limiter.open(key):
        await ws.close(code=CLOSE_TOO_MANY, reason=f"this seat has {limiter.max_sockets} "
                                                   "sockets open already")
        return
    try:
        await Connection(ws, game_id, Viewer.player(seat.slot), seat_slot=seat.slot,
                         since=asked, claim=claim).run()
    finally:
        await limiter.close(key)


async def first_message(ws: WebSocket, timeout: float = AUTH_TIMEOUT) -> Auth:
    """The seat socket's first message, an `auth` (WireError: anything else,
    or nothing within `timeout`; its `field` is "token" for a token that
    cannot be one, answered as an unknown token)."""
    try:
        frame = await within(ws.receive(), timeout)
    except TimeoutError:
        raise WireError(f"expected an auth message within {timeout:g} s") from None
    if frame["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(frame.get("code", 1000))
    text = frame.get("text")
    try:
        if text is None or len(text) > 4096:
            raise ValueError
        msg = json.loads(text)
    except (ValueError, RecursionError):
        raise WireError("expected a JSON auth message") from None
    if not isinstance(msg, dict) or msg.get("type") != "auth":
        raise WireError("the first message must be of type 'auth'")
    auth = parse_client(msg)
    assert isinstance(auth, Auth)
    return auth


@router.websocket("/ws/games/{game_id}/watch")
async def watch_socket(ws: WebSocket, game_id: str, viewer: str = "public",
                       since: int = 0) -> None:
    store = ws.app.state.store
    settings = ws.app.state.settings
    try:
        row = await get_row(store, game_id)
        who = parse_viewer_param(viewer, row.config["players"])
    except ServiceError as exc:
        code = CLOSE_NOT_FOUND if exc.status == 404 else CLOSE_FORBIDDEN
        await refuse(ws, code, exc.detail)
        return
    if row.status == "lobby":
        await refuse(ws, CLOSE_NOT_FOUND, "this game has not started")
        return
    delay = 0.0
    if who.kind != "public" and not privileged_allowed(row):
        if settings.spectator_delay is None:
            await refuse(ws, CLOSE_FORBIDDEN,
                         "this view is offered for all-AI or finished games")
            return
        delay = float(settings.spectator_delay)
    await Connection(ws, game_id, who, delay=delay, since=since).run()


class Connection:
    """One websocket: a sender that follows the mirror and a receiver for the
    client's messages, sharing the last version this client has."""

    def __init__(self, ws: WebSocket, game_id: str, viewer: Viewer, *,
                 seat_slot: int | None = None, delay: float = 0.0, since: int = 0,
                 claim: str | None = None) -> None:
        self.ws = ws
        self.game_id = game_id
        self.viewer = viewer
        self.slot = seat_slot
        # the seat claim (its token's hash) this socket authenticated with: the
        # socket plays the seat only while that claim holds it
        self.claim = claim
        self.delay = delay
        # The last event this client has, in its own sequence (see
        # tossim.server.sequence): a reconnecting client passes it (seat: in
        # its auth message; spectator: ?since=v), so the first push is exactly
        # the missing tail. `sent` is the same point as a game version.
        self.since = max(0, since)
        self.seq = 0
        self.sent = 0
        self.sent_deadline: float | None = None
        self.sent_state: dict[str, Any] | None = None
        # a `resume` waits for its answer: one push, whether or not anything
        # changed (were it answered only after hidden events, its answer
        # would tell that they happened)
        self.resuming = False
        self.wake = asyncio.Event()
        self.send_lock = asyncio.Lock()
        self.label = viewer.label()
        # the follower task waits for a change (so the mirror may write this
        # socket's pushes itself), and the mirror it follows
        self.idle = False
        self.mirror: GameMirror | None = None
        # this socket's transport, when pushes may be written there as
        # pre-built frames (set once accepted; uvicorn_direct.py)
        self.direct: DirectSocket | None = None
        settings = ws.app.state.settings
        self.max_bytes = settings.max_message_bytes
        self.rate_n = settings.rate_limit_messages
        self.rate_window = settings.rate_limit_seconds
        self.recent: list[float] = []
        # summary notices of the mirror forwarded so far (a socket that joins
        # later fetches the summaries it needs with its first page load)
        self.summaries_sent: int | None = None
        # the next lobby this socket has announced (once per socket)
        self.next_sent: str | None = None
        # the stand-ins message last sent (docs/api.md, "Stand-ins")
        self.standins_sent: dict[str, Any] | None = None

    async def send(self, message: ServerModel) -> None:
        await self.send_raw(message.encode())

    async def send_error(self, version: int, error: str) -> None:
        """Answer with an `error` message (nothing changed)."""
        await self.send(Error(version=version, error=error))

    async def send_raw(self, text: str) -> None:
        """Send a message already serialised (pushes are, once for many sockets)."""
        async with self.send_lock:
            await self.ws.send_text(text)

    async def run(self) -> None:
        if self.ws.application_state == WebSocketState.CONNECTING:
            await self.ws.accept()
        hub = self.ws.app.state.mirrors
        try:
            # (spectators are refused in the lobby by watch_socket already)
            if self.slot is not None and not await self._until_started():
                return
            mirror = await hub.acquire(self.game_id)
        except KeyError:
            await self.ws.close(code=CLOSE_NOT_FOUND, reason="no such game")
            return
        except (WebSocketDisconnect, RuntimeError):  # gone while waiting for the start
            return
        try:
            assert mirror.game is not None
            self.mirror = mirror
            self.direct = direct_socket(self.ws)
            game = mirror.game
            cap = game.version if not self.delay else mirror.version_at(time.time() - self.delay)
            self.sent = min(version_at(game, self.viewer, self.since), cap)
            self.seq = seq_at(game, self.viewer, self.sent)
            await self.send(Hello(game_id=self.game_id, viewer=self.viewer.label(),
                                  version=seq_at(game, self.viewer, cap)))
            senders = [asyncio.create_task(self._follow(mirror))]
            if self.sees_thinking:
                senders.append(asyncio.create_task(self._follow_thinking()))
            socket_id = uuid.uuid4().hex
            await self._presence(socket_id, True)
            try:
                await self._receive(mirror)
            finally:
                with contextlib.suppress(Exception):
                    await self._presence(socket_id, False)
                await stopped(*senders)
        except WebSocketDisconnect:
            pass
        finally:
            await hub.release(mirror)

    async def _presence(self, socket_id: str, is_open: bool) -> None:
        """A seat socket tells the game's actor (in whichever process) that
        it opened or closed: a seat with none open for a whole phase gets a
        stand-in, and gets its player back when one opens (tossim.server.standins)."""
        if self.slot is None:
            return
        await self.ws.app.state.bus.publish(command_channel(self.game_id), {
            "type": "presence", "slot": self.slot, "socket": socket_id, "open": is_open})

    async def _until_started(self) -> bool:
        """Wait (answering pings) until the game has started: a seat may
        connect from the lobby page, and its view must come from the started
        game in the store, never from the lobby's config (whose players have
        no names yet). The lobby is re-read only when its bus channel says it
        changed (tossim.server.lobby_watch). False if the client left first,
        or if the claim this socket authenticated was freed (a kick, the
        player leaving; the seat may have gone to another player or a bot
        since): then the socket is closed with 4401 and never plays."""
        store = self.ws.app.state.store
        receiving: asyncio.Task[Any] | None = None
        async with self.ws.app.state.lobbies.watch(self.game_id) as lobby:
            try:
                while True:
                    changed = lobby.changed  # taken before the read: no change is missed
                    row = await store.get_game(self.game_id)
                    if row is None:
                        raise KeyError(self.game_id)
                    if not self._holds_claim(row):
                        await self.ws.close(code=CLOSE_UNAUTHORIZED, reason=SEAT_GONE)
                        return False
                    if row.status != "lobby":
                        return True
                    while not changed.is_set():
                        if receiving is None:
                            receiving = asyncio.create_task(self.ws.receive())
                        waiter = asyncio.create_task(changed.wait())
                        done, _ = await asyncio.wait({receiving, waiter},
                                                     timeout=LOBBY_RECHECK,
                                                     return_when=asyncio.FIRST_COMPLETED)
                        waiter.cancel()
                        if receiving not in done:
                            break  # a change (or the rare re-check): read the lobby
                        frame, receiving = receiving.result(), None
                        if frame["type"] == "websocket.disconnect":
                            return False
                        if self._is_ping(frame.get("text")):
                            await self.send(Pong(version=0))
                        else:
                            await self.send_error(0, "the game has not started yet")
            finally:
                await stopped(receiving)

    def _is_ping(self, text: str | None) -> bool:
        """Whether a frame is a well-formed `ping` (a seat waiting in the lobby
        answers nothing else)."""
        if text is None or len(text) > self.max_bytes:
            return False
        try:
            return isinstance(parse_client(json.loads(text)), Ping)
        except (ValueError, RecursionError):  # WireError too
            return False

    def _holds_claim(self, row: Any) -> bool:
        """Whether the seat is still claimed with this socket's token."""
        if self.claim is None:
            return True
        seat = next((s for s in row.seats if s.slot == self.slot), None)
        return (seat is not None and seat.claimed and seat.token_hash is not None
                and seat.token_hash == self.claim)

    # ---- server -> client ---------------------------------------------------------------
    @property
    def sees_thinking(self) -> bool:
        """Model seats' thinking goes only to omniscient spectators watching
        without delay, which `watch_socket` allows only for all-AI and finished
        games: never to a seat, a public viewer or a delayed spectator."""
        return self.slot is None and self.viewer.kind == "omniscient" and not self.delay

    async def _follow_thinking(self) -> None:
        bus = self.ws.app.state.bus
        sub = await bus.subscribe(thinking_channel(self.game_id))
        try:
            async for msg in sub:
                if msg.get("type") == "thinking":
                    try:
                        step = Thinking.model_validate(msg)
                    except ValidationError:
                        continue  # not a step a page could show
                    await self.send(step)
        finally:
            await sub.close()

    async def _follow(self, mirror: GameMirror) -> None:
        """The slow path: the first push, pushes to a socket that could not
        take a frame when the mirror changed (its buffer is full, another
        send is under way, a delayed view), and resumes. One push covers
        everything since the last, so a lagging socket gets its backlog
        coalesced into one message rather than one per change."""
        first = True
        mirror.listeners.add(self._on_change)
        try:
            while True:
                # a slow reader: wait until its buffer drains, then send one
                # push with all it missed meanwhile
                if self.direct is not None:
                    await self.direct.drained()
                # cleared before the state is read, so that a change while the
                # push below is being sent still wakes this loop
                self.wake.clear()
                push = self._next(mirror, first)
                first = False
                if push is not None:
                    PUSHES_SENT["asgi"] += 1
                    await self.send_raw(push.text)
                await self._send_summary_notices(mirror)
                await self._send_next_notice(mirror)
                await self._send_standins(mirror)
                if self.delay:  # the delayed present moves on by itself
                    with contextlib.suppress(TimeoutError):
                        await within(self.wake.wait(), 1.0)
                    continue
                self.idle = True
                try:
                    await self.wake.wait()
                finally:
                    self.idle = False
        finally:
            mirror.listeners.discard(self._on_change)

    def _on_change(self) -> None:
        """Called by the mirror on every change, for every socket. The fast
        path: a socket whose task is idle, on a transport that takes a frame
        now, gets its push written there and then: the message text and its
        frame are shared with every socket of its viewer class, so the work
        per socket is a cache lookup and one write, with no task to wake and
        nothing awaited. Any other socket's task is woken to send."""
        mirror = self.mirror
        if (mirror is not None and self.idle and not self.wake.is_set()
                and not self.send_lock.locked() and self._can_write()):
            before = (self.sent, self.sent_deadline, self.seq, self.sent_state, self.resuming)
            push = self._next(mirror, False)
            if push is None:
                if (self._summaries_due(mirror) or self._next_due(mirror)
                        or self._standins_due(mirror)):
                    self.wake.set()  # the task sends the notice
                return
            assert self.direct is not None
            try:
                self.direct.write(push.frame)
            except Exception:  # not sent: the task sends it (or finds the socket gone)
                (self.sent, self.sent_deadline, self.seq, self.sent_state,
                 self.resuming) = before
            else:
                PUSHES_SENT["frame"] += 1
                return
        self.wake.set()

    def _summaries_due(self, mirror: GameMirror) -> bool:
        """Summary notices this socket has not forwarded yet; never to a
        delayed spectator (a summary of a day it has not seen end yet)."""
        if self.delay:
            return False
        if self.summaries_sent is None:  # joined now: later notices only
            self.summaries_sent = len(mirror.summaries)
        return len(mirror.summaries) > self.summaries_sent

    def _standins_of(self, mirror: GameMirror) -> dict[str, Any]:
        """Which seats stand-ins play (for everyone) and, for a seat's own
        socket only, what its stand-in did while the player was away."""
        mine = mirror.away.get(str(self.slot)) if self.slot is not None else None
        return {"slots": list(mirror.standins), "you": mine}

    def _standins_due(self, mirror: GameMirror) -> bool:
        if self.delay:  # a delayed view would see the label ahead of the game
            return False
        now = self._standins_of(mirror)
        if self.standins_sent is None:
            return bool(now["slots"] or now["you"])
        return now != self.standins_sent

    async def _send_standins(self, mirror: GameMirror) -> None:
        if not self._standins_due(mirror):
            return
        self.standins_sent = self._standins_of(mirror)
        await self.send(Standins(**self.standins_sent, version=self.seq))

    def _next_due(self, mirror: GameMirror) -> bool:
        # never to a delayed spectator: it would tell that the game is over
        return (not self.delay and mirror.next_lobby is not None
                and mirror.next_lobby != self.next_sent)

    async def _send_next_notice(self, mirror: GameMirror) -> None:
        """{"type": "next", "lobby": id, "version": V} once the finished game
        has a next lobby ("Play again"): every player's end screen offers the
        same lobby (docs/api.md, "Play again")."""
        if not self._next_due(mirror):
            return
        lobby = self.next_sent = mirror.next_lobby
        assert lobby is not None
        await self.send(Next(lobby=lobby, version=self.seq))

    async def _send_summary_notices(self, mirror: GameMirror) -> None:
        """{"type": "summary", "day": D, "version": V} for each day whose
        summary was published or replaced since the last notice: the page
        fetches it (GET /api/games/{id}) at once instead of polling."""
        if not self._summaries_due(mirror):
            return
        assert self.summaries_sent is not None
        days = sorted(set(mirror.summaries[self.summaries_sent:]))
        self.summaries_sent = len(mirror.summaries)
        for day in days:
            await self.send(Summary(day=day, version=self.seq))

    def _can_write(self) -> bool:
        """Whether a frame may go straight to the transport now (see
        `uvicorn_direct.DirectSocket.can_write`)."""
        return self.direct is not None and self.direct.can_write()

    def _next(self, mirror: GameMirror, first: bool) -> Push | None:
        """This viewer's next push up to the mirror's present (a delayed
        view: up to its delayed present), counted as sent; None when there is
        nothing to send. Nothing at all is sent when neither the viewer's
        events nor its state changed: a message for a hidden event would
        tell the viewer that something happened. The push is built once per
        viewer class and point (`mirror.pushes`) and shared by all such
        sockets."""
        game = mirror.game
        assert game is not None
        first, self.resuming = first or self.resuming, False
        cap = (game.version if not self.delay
               else mirror.version_at(time.time() - self.delay))
        # push new events, and a new phase deadline even without events
        if not (first or cap > self.sent
                or (not self.delay and mirror.deadline != self.sent_deadline)):
            return None
        key = (self.label, self.sent, cap, mirror.deadline, bool(self.delay))
        push = mirror.pushes.get(key)
        if push is None:
            push = self._build(mirror, cap)
            mirror.pushes[key] = push
        self.sent = cap
        self.sent_deadline = mirror.deadline
        if not (first or push.count or push.state != self.sent_state):
            return None
        self.seq += push.count
        self.sent_state = push.state
        return push

    def _build(self, mirror: GameMirror, cap: int) -> Push:
        game = mirror.game
        assert game is not None
        v = view(game, self.viewer, since=self.sent)
        events = renumber([e for e in v.events if e["v"] <= cap], self.seq + 1)
        state: dict[str, Any] | None = None
        if not self.delay:  # a delayed spectator must not see the present state
            state = {
                "day": v.day, "phase": v.phase, "phase_seq": v.phase_seq,
                "deadline": mirror.deadline, "roster": [r.to_dict() for r in v.roster],
                "you": None if v.you is None else v.you.to_dict(),
                "legal": [a.to_dict() for a in v.legal], "trial": v.trial,
                "result": v.result, "winners": v.winners}
        # when the newest event this viewer may see was published: a hidden
        # event's batch must not show through as a new time
        newest = newest_at(game, self.viewer, cap)
        message = events_message(self.seq + len(events), events,
                                 mirror.published_for(newest), state)
        return Push(len(events), state, dumps(message))

    # ---- client -> server ---------------------------------------------------------------
    async def _receive(self, mirror: GameMirror) -> None:
        while True:
            frame = await self.ws.receive()
            if frame["type"] == "websocket.disconnect":
                raise WebSocketDisconnect(frame.get("code", 1000), frame.get("reason"))
            text = frame.get("text")
            version = self.seq  # the viewer's own sequence, never the game's
            problem = self._too_much(text if text is not None else frame.get("bytes") or b"")
            if problem is None and text is None:
                problem = "messages are JSON text, not binary frames"
            if problem:
                await self.send_error(version, problem)
                continue
            assert text is not None
            try:
                decoded = json.loads(text)
            except (ValueError, RecursionError):  # bad JSON, too deep, too many digits
                await self.send_error(version, "malformed JSON")
                continue
            if self.slot is None and isinstance(decoded, dict) and (
                    decoded.get("type") == "command"):
                # before the command's shape: whatever it is, not from a spectator
                await self.send_error(version, "spectators cannot send commands")
                continue
            try:
                msg = parse_client(decoded)
            except WireError as exc:
                await self.send_error(version, str(exc))
                continue
            if isinstance(msg, Ping):
                await self.send(Pong(version=version))
            elif isinstance(msg, Resume):
                assert mirror.game is not None
                self.since = min(msg.since, self.seq)
                self.sent = version_at(mirror.game, self.viewer, self.since)
                self.seq = seq_at(mirror.game, self.viewer, self.sent)
                self.sent_state = None  # the answer carries the state again
                self.resuming = True
                self.wake.set()
            elif isinstance(msg, Command):
                await self._command(msg.command, version)
            else:  # an auth: a seat sends it first, and only then
                await self.send_error(version, "auth is only a seat socket's first message")

    def _too_much(self, data: str | bytes) -> str | None:
        size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "replace"))
        if size > self.max_bytes:
            return f"message over {self.max_bytes} bytes"
        now = time.monotonic()
        self.recent = [t for t in self.recent if now - t < self.rate_window]
        if len(self.recent) >= self.rate_n:
            return (f"too many messages: at most {self.rate_n} in "
                    f"{self.rate_window:g} seconds")
        self.recent.append(now)
        return None

    async def _command(self, command: dict[str, Any], version: int) -> None:
        """Forward a seat's command (its shape checked by `wire.Command`) to
        the game's actor and answer a refusal with the engine's error."""
        if isinstance(command.get("text"), str):  # chat, whisper, will
            # bidirectional overrides and zero-width characters would let a
            # player reverse or hide what others read
            command = {**command, "text": strip_format(command["text"])}
        if command.get("type") in ("chat", "whisper"):
            problem = await self.ws.app.state.limiter.chat_problem((self.game_id,
                                                                    self.slot))
            if problem is not None:
                await self.send_error(version, problem)
                return
        bus = self.ws.app.state.bus
        reply_to = f"tossim:reply:{uuid.uuid4().hex}"
        sub = await bus.subscribe(reply_to)
        try:
            await bus.publish(command_channel(self.game_id), {
                "type": "seat", "slot": self.slot, "command": command, "reply_to": reply_to,
                "expires": time.time() + COMMAND_TTL})
            reply = await within(_first(sub), REPLY_TIMEOUT)
        except TimeoutError:
            reply = {"ok": False, "error": "the game did not answer (is it running?); "
                                           "the command was not applied"}
        finally:
            await sub.close()
        if not reply.get("ok"):
            error = str(reply.get("error") or "the command was refused")
            await self.send(Error(version=version, error=error, fault=reply.get("fault"),
                                  candidates=reply.get("candidates") or []))


async def _first(sub: Any) -> dict[str, Any]:
    async for msg in sub:
        return dict(msg)
    return {"ok": False, "error": "no reply"}
