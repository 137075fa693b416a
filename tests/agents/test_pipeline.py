"""The whole model-free pipeline in real games: a random "model" that writes
only strings the turn grammar accepts; parsed, resolved and applied, every
final action must be accepted by the engine and every tool call answered."""

from __future__ import annotations

import random
import re

import pytest

from tossim.agents import play_match
from tossim.agents.actions import to_command
from tossim.agents.grammar import Choice, turn_choices, turn_regex
from tossim.agents.memory import SeatMemory
from tossim.agents.personas import persona_for
from tossim.agents.prompting import build_messages
from tossim.agents.protocols import json as jp
from tossim.agents.protocols import xml as xp
from tossim.agents.tools import run_tool, tool_options
from tossim.engine import Command, GameConfig, View


def write(c: Choice, rng: random.Random) -> str:
    """One string for this choice, as a model constrained by the grammar could write it."""
    if c.arg == "names2":
        a, b = rng.sample(c.options, 2)
        body = f"{a} and {b}"
    elif c.arg in ("names", "options", "self"):
        body = rng.choice(c.options)
    elif c.arg in ("text", "free"):
        body = rng.choice(["I am the Sheriff.", "Vote Player 4 now!", "Hmm.\nWait a moment."])
    else:
        body = ""
    attr = f' to="{rng.choice(c.attr_options)}"' if c.attr_options else ""
    return f"<thinking>Let me see.</thinking>\n<{c.tag}{attr}>{body}</{c.tag}>"


class RandomModelSeat:
    def __init__(self, slot: int, seed: int, protocol: str) -> None:
        self.memory = SeatMemory(slot)
        self.rng = random.Random(seed * 100 + slot)
        self.protocol = protocol
        self.tool_calls = 0

    def decide(self, obs: View) -> list[Command]:
        m = self.memory
        m.update(obs)
        build_messages(m, None, self.protocol, persona_for(m.slot))
        for step in range(3):
            tools = tool_options(m)
            allow = step < 2
            rx = turn_regex(m.legal, m.names, tools, allow_tools=allow)
            choices = turn_choices(m.legal, m.names, tools, allow_tools=allow)
            text = write(self.rng.choice(choices), self.rng)
            assert re.fullmatch(rx, text), text
            parsed = xp.parse(text)
            if self.protocol == "json":
                parsed = jp.parse(jp.render(parsed))
            if parsed.kind == "tool":
                obs_text = run_tool(m, parsed.name, parsed.tool_arg)
                assert "fault]" not in obs_text, obs_text
                self.tool_calls += 1
                continue
            m.end_turn()
            cmd = to_command(m.slot, parsed.name, parsed.args, m.legal, m.names, m.roster)
            return [] if cmd is None else [cmd]
        raise AssertionError("no final action")


@pytest.mark.parametrize(("seed", "protocol"), [(0, "xml"), (1, "json"), (2, "xml")])
def test_random_model_games_have_no_faults(seed: int, protocol: str) -> None:
    config = GameConfig(players=15, seed=seed)
    seats = {s: RandomModelSeat(s, seed, protocol) for s in range(1, 16)}
    result = play_match(config, dict(seats), max_days=8)  # type: ignore[arg-type]
    assert result.faults == dict.fromkeys(range(1, 16), 0), result.fault_reasons
    assert sum(s.tool_calls for s in seats.values()) > 50
