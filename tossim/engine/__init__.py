"""The rules engine: pure, deterministic, no I/O.

Use `new_game(config)` and `apply(game, command)`; read games only through
`view(game, viewer)`.
"""

from tossim.engine.commands import (
    Chat,
    Command,
    DayAction,
    Judge,
    MalformedCommand,
    NightAction,
    PhaseTimeout,
    Vote,
    Whisper,
    WriteDeathNote,
    WriteWill,
    command_from_dict,
)
from tossim.engine.events import Audience, Event
from tossim.engine.legal import IllegalCommand, LegalAction, legal_actions
from tossim.engine.rules import ConfigError, apply, new_game
from tossim.engine.state import Game, GameConfig, Phase
from tossim.engine.view import OMNISCIENT_VIEWER, PUBLIC_VIEWER, View, Viewer, view

__all__ = [
    "OMNISCIENT_VIEWER", "PUBLIC_VIEWER", "Audience", "Chat", "Command", "ConfigError",
    "DayAction", "Event", "Game", "GameConfig", "IllegalCommand", "Judge", "LegalAction",
    "MalformedCommand", "NightAction", "Phase", "PhaseTimeout", "View", "Viewer", "Vote",
    "Whisper", "WriteDeathNote", "WriteWill", "apply", "command_from_dict", "legal_actions",
    "new_game", "view",
]
