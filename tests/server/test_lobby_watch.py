"""The sockets waiting in one lobby share one bus subscription in a process
(a Redis subscription is a connection), are all woken by a change, and the
subscription goes with the last of them (docs/api.md, "Seat sockets in the
lobby")."""

from __future__ import annotations

import asyncio

from tossim.server.bus import MemoryBus, lobby_channel
from tossim.server.lobby_watch import LobbyWatch, notify_lobby


async def test_one_subscription_per_lobby_woken_by_a_change() -> None:
    bus = MemoryBus()
    hub = LobbyWatch(bus)
    async with hub.watch("g1") as a, hub.watch("g1") as b, hub.watch("g2") as other:
        assert a is b and other is not a
        assert len(bus.subs[lobby_channel("g1")]) == 1
        changed, untouched = a.changed, other.changed
        await notify_lobby(bus, "g1", "seats", slot=2)
        await asyncio.wait_for(changed.wait(), 5)
        assert a.changes == 1 and not untouched.is_set()
        assert not a.changed.is_set()  # a fresh event for the next change
    assert not bus.subs and not hub.lobbies
