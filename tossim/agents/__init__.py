"""How seats decide: the seat interface, scripted bots and the headless match driver."""

from tossim.agents.match import MatchResult, play_match, seats_to_ask
from tossim.agents.scripted import ScriptedBot
from tossim.agents.seat import Bot, Seat

__all__ = ["Bot", "MatchResult", "ScriptedBot", "Seat", "play_match", "seats_to_ask"]
