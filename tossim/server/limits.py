"""Limits for a server open to strangers: request bodies, URL length, and
per-seat chat rates and socket counts.

- `BodyLimit` (ASGI middleware): a body over `max_body_bytes` is answered
  413 before anything parses it, whether it announces its length or streams.
- `bounded_http_protocol` (uvicorn's httptools protocol): a request line over
  `MAX_URL_BYTES` is answered 414 at once. Without it a websocket upgrade with
  an 8 KB URL got no answer at all (uvicorn hands the request to the
  `websockets` handshake, whose 414 never reached the client), and the
  client hung until its own timeout. Headers and bodies that come too slowly
  are answered 408, and one address holds only so many connections.
- `LobbyRate`: lobbies one client address may create per window (in Redis
  with a Redis bus, so the fleet counts together).
- `SeatLimiter`: chat and whisper rates count per seat across all of its
  sockets (five sockets on one token no longer send five times as much), and
  a seat may hold only so many sockets at once. In this process; with Redis
  (`RedisSeatLimiter`) the same counts hold across every server process of
  the fleet, so a seat cannot spread its sockets or chats over them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import time
import uuid
from collections import deque
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tossim.timeouts import stopped

log = logging.getLogger(__name__)

MAX_URL_BYTES = 8192


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def _refuse(self, send: Send) -> None:
        body = json.dumps({"detail": f"request body over {self.max_bytes} bytes"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and (not value.isdigit()
                                              or int(value) > self.max_bytes):
                await self._refuse(send)
                return
        seen = 0
        started = refused = False

        async def bounded_receive() -> Message:
            nonlocal seen, started, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    # answer now; the app then sees a client that went away
                    # (whatever it answers to that is dropped)
                    refused = True
                    if not started:
                        started = True
                        await self._refuse(send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, bounded_receive, guarded_send)


def bounded_http_protocol(settings: Any = None) -> Any:
    """uvicorn's httptools protocol with bounds for clients that hold a
    connection without finishing a request (or "auto" when httptools is not
    installed: h11 answers long request lines itself):

    - a request line over MAX_URL_BYTES is answered 414 at once;
    - headers must arrive within `header_timeout_s` of the request's first
      byte (or of the connection), and the body within `body_timeout_s` of
      the headers: else 408 and the connection closes (a "slowloris" held 300
      connections for a minute with a header line every few seconds);
    - one client address holds at most `max_connections_per_client`
      connections at once (websockets included, until they close); one more
      is answered 429 and closed.

    `settings` (a Settings; None: its defaults) gives the bounds."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # pragma: no cover - uvicorn[standard] brings httptools
        return "auto"
    if settings is None:
        from tossim.server.settings import Settings

        settings = Settings()
    header_timeout = float(settings.header_timeout_s)
    body_timeout = float(settings.body_timeout_s)
    max_per_client = int(settings.max_connections_per_client)
    open_by_client: dict[str, int] = {}  # this server's connections, by address

    class BoundedHttpTools(HttpToolsProtocol):
        _timer: asyncio.TimerHandle | None = None
        _counted: str | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            host = self.client[0] if self.client else ""
            if max_per_client and host:
                if open_by_client.get(host, 0) >= max_per_client:
                    self._refuse(429, "Too Many Requests",
                                 f"too many connections from this address: at most "
                                 f"{max_per_client} at once")
                    return
                open_by_client[host] = open_by_client.get(host, 0) + 1
                self._counted = host
            self._arm(header_timeout, "request headers")

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            self._uncount()
            super().connection_lost(exc)

        def _uncount(self) -> None:
            host, self._counted = self._counted, None
            if host is not None:
                n = open_by_client.get(host, 0) - 1
                if n > 0:
                    open_by_client[host] = n
                else:
                    open_by_client.pop(host, None)

        def _arm(self, seconds: float, what: str) -> None:
            self._disarm()
            self._timer = self.loop.call_later(seconds, self._timed_out, seconds, what)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _timed_out(self, seconds: float, what: str) -> None:
            self._timer = None
            if self.transport.is_closing():
                return
            cycle = self.cycle
            if cycle is None or cycle.response_complete or not cycle.response_started:
                self._refuse(408, "Request Timeout",
                             f"the {what} did not arrive within {seconds:g} s")
            else:
                self.transport.close()

        def _refuse(self, status: int, phrase: str, msg: str) -> None:
            body = msg.encode()
            self.transport.write(
                f"HTTP/1.1 {status} {phrase}\r\n".encode()
                + b"content-type: text/plain; charset=utf-8\r\n"
                b"content-length: " + str(len(body)).encode() + b"\r\n"
                b"connection: close\r\n\r\n" + body)
            self.transport.close()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._url_too_long = False
            if self._timer is None:  # a further request on a kept-alive connection
                self._arm(header_timeout, "request headers")

        def on_headers_complete(self) -> None:
            super().on_headers_complete()
            if self.parser.should_upgrade() and self._should_upgrade():
                self._disarm()  # a websocket: its handshake follows
            else:
                self._arm(body_timeout, "request body")

        def on_message_complete(self) -> None:
            self._disarm()
            super().on_message_complete()

        def handle_websocket_upgrade(self) -> None:
            self._disarm()
            super().handle_websocket_upgrade()
            # the websocket's protocol now owns the connection: it keeps this
            # address's count until it is lost
            ws_protocol = self.transport.get_protocol()
            lost = ws_protocol.connection_lost
            host, self._counted = self._counted, None

            def connection_lost(exc: Exception | None) -> None:
                if host is not None:
                    self._counted = host
                    self._uncount()
                lost(exc)

            ws_protocol.connection_lost = connection_lost  # type: ignore[method-assign]

        def on_url(self, url: bytes) -> None:
            super().on_url(url)
            if len(self.url) > MAX_URL_BYTES and not self._url_too_long:
                self._url_too_long = True
                self._disarm()
                msg = f"URL over {MAX_URL_BYTES} bytes".encode()
                self.transport.write(
                    b"HTTP/1.1 414 URI Too Long\r\ncontent-type: text/plain; charset=utf-8\r\n"
                    b"content-length: " + str(len(msg)).encode() + b"\r\n"
                    b"connection: close\r\n\r\n" + msg)
                self.transport.close()
                raise ValueError("URL too long")  # stops the parser

        def send_400_response(self, msg: str) -> None:
            if getattr(self, "_url_too_long", False):
                return  # answered 414 already
            super().send_400_response(msg)

    return BoundedHttpTools


Key = tuple[str, int]  # (game id, slot)


class SeatLimiter:
    """Per seat (game id, slot), in this process: open sockets and recent chats
    (a sliding window)."""

    def __init__(self, max_sockets: int, chat_messages: int, chat_seconds: float) -> None:
        self.max_sockets = max_sockets
        self.chat_messages, self.chat_seconds = chat_messages, chat_seconds
        self.sockets: dict[Key, int] = {}
        self.chats: dict[Key, deque[float]] = {}

    async def open(self, key: Key) -> bool:
        """Count a new socket of this seat: False (not counted) if the seat
        has `max_sockets` open already."""
        return self.open_now(key)

    def open_now(self, key: Key) -> bool:
        n = self.sockets.get(key, 0)
        if n >= self.max_sockets:
            return False
        self.sockets[key] = n + 1
        return True

    async def close(self, key: Key) -> None:
        """One of the seat's sockets closed."""
        self.close_now(key)

    def close_now(self, key: Key) -> None:
        n = self.sockets.get(key, 0) - 1
        if n > 0:
            self.sockets[key] = n
            return
        self.sockets.pop(key, None)
        recent = self.chats.get(key)
        if recent is not None and (not recent
                                   or time.monotonic() - recent[-1] >= self.chat_seconds):
            del self.chats[key]  # nothing left to remember

    async def chat_problem(self, key: Key) -> str | None:
        """None if this seat may chat now (and counts it), else why not."""
        return self.chat_problem_now(key)

    def chat_problem_now(self, key: Key) -> str | None:
        now = time.monotonic()
        recent = self.chats.setdefault(key, deque())
        while recent and now - recent[0] >= self.chat_seconds:
            recent.popleft()
        if len(recent) >= self.chat_messages:
            return self.too_many()
        recent.append(now)
        return None

    def too_many(self) -> str:
        return (f"too many chat messages from this seat: at most {self.chat_messages} "
                f"in {self.chat_seconds:g} seconds")

    async def aclose(self) -> None:
        """Nothing to let go of in this process."""


# Sorted sets in Redis, one per seat and kind, each a window of entries scored
# by expiry (sockets) or by time (chats), pruned and checked in one script
# with Redis's own clock, so every process of the fleet counts alike.
_OPEN_SOCKET = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return 1
"""
_REFRESH_SOCKETS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
return 1
"""
_CHAT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) / 1000))
return 1
"""


class RedisSeatLimiter(SeatLimiter):
    """The same limits, counted in Redis for the whole fleet.

    Chats: a sliding window per seat, as in one process. Sockets: one entry
    per open socket, with an expiry this process pushes back every
    SOCKET_TTL/3 seconds while the socket is open; a process that dies
    without closing its sockets stops doing so, and its entries lapse within
    SOCKET_TTL, so a seat is never locked out for good. If Redis fails, the
    count falls back to this process's (logged), rather than refuse players."""

    SOCKET_TTL = 30.0

    def __init__(self, client: Any, prefix: str, max_sockets: int, chat_messages: int,
                 chat_seconds: float) -> None:
        super().__init__(max_sockets, chat_messages, chat_seconds)
        self.client, self.prefix = client, prefix
        self._open_script = client.register_script(_OPEN_SOCKET)
        self._refresh_script = client.register_script(_REFRESH_SOCKETS)
        self._chat_script = client.register_script(_CHAT)
        self._names = itertools.count(1)
        self._me = uuid.uuid4().hex[:12]
        # this process's open sockets: seat -> their entries in Redis
        self.entries: dict[Key, list[str]] = {}
        self._refresher: asyncio.Task[None] | None = None

    def _key(self, kind: str, key: Key) -> str:
        return f"{self.prefix}tossim:{kind}:{key[0]}:{key[1]}"

    async def open(self, key: Key) -> bool:
        entry = f"{self._me}:{next(self._names)}"
        try:
            ok = await self._open_script(keys=[self._key("sockets", key)],
                                         args=[entry, self.max_sockets,
                                               int(self.SOCKET_TTL * 1000)])
        except Exception:
            log.warning("limits: Redis did not answer; counting this socket here",
                        exc_info=True)
            return self.open_now(key)
        if not ok:
            return False
        self.entries.setdefault(key, []).append(entry)
        if self._refresher is None:
            self._refresher = asyncio.get_running_loop().create_task(
                self._refresh(), name="limits-refresh")
        return True

    async def close(self, key: Key) -> None:
        entries = self.entries.get(key)
        if not entries:  # counted here while Redis was away
            self.close_now(key)
            return
        entry = entries.pop()
        if not entries:
            del self.entries[key]
        try:
            await self.client.zrem(self._key("sockets", key), entry)
        except Exception:
            log.warning("limits: Redis did not answer; the socket's entry lapses",
                        exc_info=True)

    async def _refresh(self) -> None:
        while True:
            await asyncio.sleep(self.SOCKET_TTL / 3)
            for key, entries in list(self.entries.items()):
                if not entries:
                    continue
                try:
                    await self._refresh_script(keys=[self._key("sockets", key)],
                                               args=[int(self.SOCKET_TTL * 1000), *entries])
                except Exception:
                    log.warning("limits: could not refresh socket counts", exc_info=True)
                    break

    async def chat_problem(self, key: Key) -> str | None:
        try:
            ok = await self._chat_script(
                keys=[self._key("chat", key)],
                args=[self.chat_messages, int(self.chat_seconds * 1_000_000),
                      f"{self._me}:{next(self._names)}"])
        except Exception:
            log.warning("limits: Redis did not answer; counting this chat here",
                        exc_info=True)
            return self.chat_problem_now(key)
        return None if ok else self.too_many()

    async def aclose(self) -> None:
        """Stop refreshing, and take this process's open sockets off the count."""
        if self._refresher is not None:
            await stopped(self._refresher)
            self._refresher = None
        for key, entries in list(self.entries.items()):
            with contextlib.suppress(Exception):
                await self.client.zrem(self._key("sockets", key), *entries)
        self.entries.clear()


def make_limiter(bus: Any, max_sockets: int, chat_messages: int,
                 chat_seconds: float) -> SeatLimiter:
    """In Redis when the bus is Redis (the whole fleet counts together), else
    in this process."""
    client = getattr(bus, "client", None)
    if getattr(bus, "kind", None) == "redis" and client is not None:
        return RedisSeatLimiter(client, getattr(bus, "prefix", ""), max_sockets,
                                chat_messages, chat_seconds)
    return SeatLimiter(max_sockets, chat_messages, chat_seconds)


class LobbyRate:
    """Lobbies one client address may create per window (`lobby_rate_limit`
    per `lobby_rate_seconds`): creating lobbies is the cheapest way to fill
    the store (300 in 14 s). A sliding window per address, in this process,
    or in Redis for the whole fleet when the bus is Redis (if Redis fails,
    counted here, logged)."""

    def __init__(self, limit: int, seconds: float, bus: Any = None) -> None:
        self.limit, self.seconds = limit, seconds
        self.recent: dict[str, deque[float]] = {}
        client = getattr(bus, "client", None)
        self.client = client if getattr(bus, "kind", None) == "redis" else None
        self.prefix = getattr(bus, "prefix", "")
        self._script = self.client.register_script(_CHAT) if self.client is not None else None
        self._names = itertools.count(1)
        self._me = uuid.uuid4().hex[:12]

    def message(self) -> str:
        return (f"too many new lobbies from this address: at most {self.limit} in "
                f"{self.seconds:g} seconds; try again later")

    async def allow(self, address: str) -> bool:
        """Count one lobby for `address`: False (not counted) if it has made
        `limit` in the window already."""
        if self._script is not None:
            try:
                return bool(await self._script(
                    keys=[f"{self.prefix}tossim:lobbies:{address}"],
                    args=[self.limit, int(self.seconds * 1_000_000),
                          f"{self._me}:{next(self._names)}"]))
            except Exception:
                log.warning("limits: Redis did not answer; counting this lobby here",
                            exc_info=True)
        return self.allow_now(address)

    def allow_now(self, address: str) -> bool:
        now = time.monotonic()
        if len(self.recent) > 10_000:  # forget addresses that have been quiet
            self.recent = {a: q for a, q in self.recent.items()
                           if q and now - q[-1] < self.seconds}
        recent = self.recent.setdefault(address, deque())
        while recent and now - recent[0] >= self.seconds:
            recent.popleft()
        if len(recent) >= self.limit:
            return False
        recent.append(now)
        return True
