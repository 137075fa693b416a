"""The one place the websocket fan-out reads uvicorn's internals.

The fast path (`ws.Conn._on_change`) writes a push's pre-built frame straight
to the connection's transport instead of waking the socket's task for an
ASGI send. That needs three things ASGI does not give: the uvicorn protocol
object behind a socket (its ASGI `receive` is that protocol's bound method,
`ws._receive.__self__`, which Starlette and our middleware pass through
unchanged), its transport, and its connection state (write buffer below the
high-water mark, no close sent, the websockets state machine open, no
extension negotiated: a compressed socket's frames differ per socket).

These are private to uvicorn's sans-I/O websocket protocol (the one it picks
when `websockets` is installed), so uvicorn is pinned in pyproject.toml to the
minor versions this was tested on; on any other server or protocol
`direct_socket` answers None and every push goes through ASGI sends
(docs/architecture.md, "Fan-out" under "Server").
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.websockets import WebSocket
from websockets.protocol import State

try:
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
except ImportError:  # pragma: no cover (another server: every send goes through ASGI)
    WebSocketsSansIOProtocol = None  # type: ignore[assignment,misc]

_OPEN = State.OPEN


class DirectSocket:
    """An accepted websocket whose pushes may be written as whole frames to
    its transport (uvicorn's sans-I/O sends are whole frames written
    synchronously, so frames never interleave)."""

    def __init__(self, proto: Any) -> None:
        self._proto = proto

    @property
    def transport(self) -> asyncio.Transport:
        transport: asyncio.Transport = self._proto.transport
        return transport

    def can_write(self) -> bool:
        """Whether a frame may go to the transport now: the connection open
        and its write buffer below the high-water mark."""
        p = self._proto
        return bool(p.writable.is_set() and not p.close_sent and not p.disconnected
                    and p.conn.state is _OPEN and not p.transport.is_closing())

    async def drained(self) -> None:
        """Until the write buffer is below the high-water mark (at once when
        it is)."""
        writable: asyncio.Event = self._proto.writable
        if not writable.is_set():
            await writable.wait()

    def write(self, frame: bytes) -> None:
        self._proto.transport.write(frame)


def direct_socket(ws: WebSocket) -> DirectSocket | None:
    """The direct writer behind an accepted websocket, or None when its
    pushes must go through ASGI sends (not uvicorn's sans-I/O protocol, an
    extension negotiated, or no transport)."""
    proto = getattr(ws._receive, "__self__", None)
    if (WebSocketsSansIOProtocol is None or not isinstance(proto, WebSocketsSansIOProtocol)
            or proto.conn.extensions or getattr(proto, "transport", None) is None):
        return None
    return DirectSocket(proto)
