"""Limits for a server open to strangers: request bodies, URL length, and
per-seat chat rates and socket counts.

- `BodyLimit` (ASGI middleware): a body over `max_body_bytes` is answered
  413 before anything parses it, whether it announces its length or streams.
- `BoundedURLHttpTools` (uvicorn's httptools protocol): a request line over
  `MAX_URL_BYTES` is answered 414 at once. Without it a websocket upgrade with
  an 8 KB URL got no answer at all (uvicorn hands the request to the
  `websockets` handshake, whose 414 never reached the client), and the
  client hung until its own timeout.
- `SeatLimiter`: chat and whisper rates count per seat across all of its
  sockets (five sockets on one token no longer send five times as much), and
  a seat may hold only so many sockets at once.
"""

from __future__ import annotations

import json
import time
from collections import deque
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

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


def bounded_http_protocol() -> Any:
    """uvicorn's httptools protocol with a bound on the URL (or "auto" when
    httptools is not installed: h11 answers long request lines itself)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # pragma: no cover - uvicorn[standard] brings httptools
        return "auto"

    class BoundedURLHttpTools(HttpToolsProtocol):
        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._url_too_long = False

        def on_url(self, url: bytes) -> None:
            super().on_url(url)
            if len(self.url) > MAX_URL_BYTES and not self._url_too_long:
                self._url_too_long = True
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

    return BoundedURLHttpTools


class SeatLimiter:
    """Per seat (game id, slot), in this process: open sockets and recent chats."""

    def __init__(self, max_sockets: int, chat_messages: int, chat_seconds: float) -> None:
        self.max_sockets = max_sockets
        self.chat_messages, self.chat_seconds = chat_messages, chat_seconds
        self.sockets: dict[tuple[str, int], int] = {}
        self.chats: dict[tuple[str, int], deque[float]] = {}

    def open(self, key: tuple[str, int]) -> bool:
        n = self.sockets.get(key, 0)
        if n >= self.max_sockets:
            return False
        self.sockets[key] = n + 1
        return True

    def close(self, key: tuple[str, int]) -> None:
        n = self.sockets.get(key, 0) - 1
        if n > 0:
            self.sockets[key] = n
            return
        self.sockets.pop(key, None)
        recent = self.chats.get(key)
        if recent is not None and (not recent
                                   or time.monotonic() - recent[-1] >= self.chat_seconds):
            del self.chats[key]  # nothing left to remember

    def chat_problem(self, key: tuple[str, int]) -> str | None:
        """None if this seat may chat now (and counts it), else why not."""
        now = time.monotonic()
        recent = self.chats.setdefault(key, deque())
        while recent and now - recent[0] >= self.chat_seconds:
            recent.popleft()
        if len(recent) >= self.chat_messages:
            return (f"too many chat messages from this seat: at most {self.chat_messages} "
                    f"in {self.chat_seconds:g} seconds")
        recent.append(now)
        return None
