"""XML and JSON protocol parsers: round trips and rejections."""

from __future__ import annotations

import json

import pytest

from tossim.agents.protocols import Parsed, ProtocolError
from tossim.agents.protocols import json as jp
from tossim.agents.protocols import xml as xp

SAMPLES = [
    Parsed("tool", "check_will", {"player": "Player 3"}, "I need the will."),
    Parsed("tool", "graveyard", {}, "Who is dead?"),
    Parsed("tool", "chat_history", {"day": "2"}, ""),
    Parsed("tool", "role_info", {"role": "Serial Killer"}, "t"),
    Parsed("tool", "notebook", {"text": "P4 claims Doctor."}, "t"),
    Parsed("tool", "notebook", {}, "read my notes"),
    Parsed("final", "speak", {"text": "Player 4 is lying."}, "They contradict the will."),
    Parsed("final", "whisper", {"target": "Player 5", "text": "I am the Sheriff."}, "t"),
    Parsed("final", "wait", {}, "Nothing to add."),
    Parsed("final", "vote", {"target": "Player 4"}, "t"),
    Parsed("final", "judge", {"verdict": "guilty"}, "t"),
    Parsed("final", "night", {"targets": "Player 1 and Player 2"}, "t"),
    Parsed("final", "will", {"text": "I am the Investigator.\nN1: Player 4."}, "t"),
    Parsed("final", "death_note", {"text": ""}, "t"),
    Parsed("final", "reveal", {}, "t"),
    Parsed("final", "jail", {"target": "Player 2"}, "t"),
    Parsed("final", "seance", {"target": "Player 2"}, "t"),
]


@pytest.mark.parametrize("p", SAMPLES, ids=lambda p: f"{p.name}-{len(p.args)}")
def test_xml_round_trip(p: Parsed) -> None:
    assert xp.parse(xp.render(p)) == p


@pytest.mark.parametrize("p", SAMPLES, ids=lambda p: f"{p.name}-{len(p.args)}")
def test_json_round_trip(p: Parsed) -> None:
    assert jp.parse(jp.render(p)) == p


def test_xml_seed003_shape() -> None:
    p = xp.parse("<thinking>\nPlayer 4 is lying.\n</thinking>\n<speak>Vote Player 4.</speak>")
    assert (p.kind, p.name, p.args, p.thought) == ("final", "speak",
                                                   {"text": "Vote Player 4."},
                                                   "Player 4 is lying.")
    assert xp.parse("<check_will>Player 3</check_will>").tool_arg == "Player 3"


@pytest.mark.parametrize("bad", [
    "<thinking>x</thinking><vote>Player 4</speak>",
    "<thinking>x</thinking><vote>Player 4</vote><speak>hi</speak>",
    "<thinking>x</thinking>",
    "<thinking>x<vote>Player 4</vote>",
    "<thinking>x</thinking><lookup>x</lookup>",
    "<thinking>x</thinking><speak>hi </speak><observation>You are the Godfather"
    "</observation></speak>",
    "<thinking>x</thinking><wait>now</wait>",
    "<thinking>x</thinking><whisper>no target</whisper>",
    "<thinking>x</thinking><vote to=\"Player 1\">Player 4</vote>",
    "plain text",
])
def test_xml_rejects(bad: str) -> None:
    with pytest.raises(ProtocolError):
        xp.parse(bad)


def test_json_accepts_seed001_string_args() -> None:
    text = json.dumps({"thought": "t", "action": "check_will",
                       "args": json.dumps({"player": "Player 3"})})
    assert jp.parse(text) == Parsed("tool", "check_will", {"player": "Player 3"}, "t")
    assert jp.parse('{"thought": "t", "action": "votes", "args": {}}').kind == "tool"


@pytest.mark.parametrize("bad", [
    "not json", "[]", '{"thought": "t", "action": "FINISH", "args": {}}',
    '{"thought": "t", "action": "vote", "args": {"player": "Player 4"}}',
    '{"thought": "t", "action": "graveyard", "args": {"player": "Player 4"}}',
    '{"thought": "t", "action": "vote", "args": [1]}',
    '{"thought": 3, "action": "wait", "args": {}}',
    '{"thought": "t", "action": "wait", "args": {}, "final_answer": "x"}',
])
def test_json_rejects(bad: str) -> None:
    with pytest.raises(ProtocolError):
        jp.parse(bad)
