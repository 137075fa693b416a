"""The store's own errors, in a module of their own so that the query mixins
(`arenas.py`, `leases.py`) and `store.py` all import them without importing
each other (no import cycle: docs/architecture.md, "Layers")."""

from __future__ import annotations


class StoreError(Exception):
    """Base class of the store's own errors."""


class ConflictError(StoreError):
    """A write that would overwrite or skip history: a command `seq` or event
    `v` already stored, the batch does not follow the game's stored version,
    or a game id already taken. Nothing was stored. For a game's actor this
    means another writer owns the game."""


class GameNotFound(StoreError, LookupError):
    """No game with that id."""
