"""The tool loop with a scripted backend: tools and observations, closing
text cut off by max_tokens, faults and retries, append-only context."""

from __future__ import annotations

import asyncio
import re

import pytest

from tossim.agents.grammar import choice_parts, parts_regex, turn_choices, walk
from tossim.agents.loop import LoopConfig, ToolLoop, TurnResult
from tossim.agents.tools import tool_options
from tossim.engine.commands import Chat, Vote, Whisper

from .fake_backend import ScriptedBackend
from .support import day3_investigator

CFG = LoopConfig(max_tool_calls=2, think_tokens=40, action_tokens=40, turn_tokens=400)


def run(outputs: list[str], cfg: LoopConfig = CFG, check_regex: bool = True,
        slot: int = 7) -> tuple[TurnResult, ScriptedBackend]:
    memory = day3_investigator().memories[slot]
    backend = ScriptedBackend(outputs, check_regex)
    result = asyncio.run(ToolLoop(backend, cfg).run_turn(memory, key="g:7", seed=1))
    return result, backend


def test_tool_call_then_vote_with_observation() -> None:
    r, b = run(["<thinking>Check the will.</thinking>", "<check_will>Player 3</check_will>",
                "<thinking>Player 4 lies.</thinking>", "<vote>Player 4</vote>"])
    assert r.command == Vote(7, 4)
    assert r.stats.tool_calls == 1 and r.stats.segments == 2
    assert "<observation>Player 3's will:" in r.transcript
    assert r.stats.faults == {} and r.stats.malformed == 0 and not r.stats.truncated


def test_context_is_only_appended_to() -> None:
    r, b = run(["<thinking>a</thinking>", "<graveyard></graveyard>",
                "<thinking>b</thinking>", "<my_results></my_results>",
                "<thinking>c</thinking>", "<wait></wait>"])
    prompts = [req.prompt_ids for req in b.requests]
    for before, after in zip(prompts, prompts[1:], strict=False):
        assert after[:len(before)] == before
    assert all(req.key == "g:7" for req in b.requests)


def test_tool_cap_removes_tools_from_the_grammar() -> None:
    r, b = run(["<thinking>a</thinking>", "<graveyard></graveyard>",
                "<thinking>b</thinking>", "<graveyard></graveyard>",
                "<thinking>c</thinking>", "<wait></wait>"])
    assert r.stats.tool_calls == 2
    last = b.requests[-1].regex or ""
    assert "<graveyard>" not in last and "<vote>" in last
    assert "<graveyard>" in (b.requests[1].regex or "")


def test_cut_thought_is_closed_at_a_word_and_the_action_follows() -> None:
    long_thought = "<thinking>Player 4 says Doctor but the will says otherwise and"
    r, b = run([long_thought + " more", "<vote>Player 4</vote>"],
               LoopConfig(think_tokens=len(long_thought) + 3, action_tokens=40))
    assert r.command == Vote(7, 4)
    assert r.stats.truncated == 1
    assert "otherwise and</thinking>\n<vote>Player 4</vote>" in r.transcript


def test_cut_speech_is_closed_at_a_word() -> None:
    speech = "<speak>Player 4 is lying about the Doctor claim"
    r, _ = run(["<thinking>x</thinking>", speech], LoopConfig(think_tokens=40,
                                                             action_tokens=len(speech) - 3))
    assert r.command == Chat(7, "Player 4 is lying about the Doctor")
    assert r.stats.truncated == 1 and r.stats.malformed == 0


def test_half_written_name_is_completed_with_a_legal_one() -> None:
    r, _ = run(["<thinking>x</thinking>", '<whisper to="Player 5">hi</whisper>'],
               LoopConfig(think_tokens=40, action_tokens=len('<whisper to="Pla')))
    assert isinstance(r.command, Whisper) and r.command.target in (1, 2, 4, 5, 6, 8)
    assert r.command.text == "..."
    r2, _ = run(["<thinking>x</thinking>", "<vote>Player 1</vote>"],
                LoopConfig(think_tokens=40, action_tokens=len("<vote>Player")))
    assert isinstance(r2.command, Vote)


def test_an_unguided_bad_target_gets_a_premise_fault_with_candidates() -> None:
    r, b = run(["<thinking>x</thinking>", "<vote>Player 3</vote>",
                "<thinking>y</thinking>", "<vote>Player 4</vote>"], check_regex=False)
    assert r.command == Vote(7, 4)
    assert r.stats.faults == {"premise": 1}
    assert "[premise fault] Player 3 is dead. Candidates: Player 1, Player 2" in r.transcript


def test_malformed_output_is_answered_and_counted() -> None:
    r, _ = run(["<thinking>x</thinking>", "vote for 4 please",
                "<thinking>y</thinking>", "<vote>Player 4</vote>"], check_regex=False)
    assert r.command == Vote(7, 4)
    assert r.stats.malformed == 1 and "[expression fault]" in r.transcript


def test_retries_run_out_and_the_seat_waits() -> None:
    bad = ["<thinking>x</thinking>", "<vote>Player 3</vote>"] * 3
    r, _ = run(bad, LoopConfig(max_retries=2), check_regex=False)
    assert r.command is None and r.action == "wait" and r.stats.forced


def test_json_protocol_turn() -> None:
    r, b = run(['{"thought": "Check.", ', '"action": "graveyard", "args": {}}',
                '{"thought": "Vote.", ', '"action": "vote", "args": {"target": "Player 4"}}'],
               LoopConfig(protocol="json"))
    assert r.command == Vote(7, 4) and r.stats.tool_calls == 1


@pytest.mark.parametrize("protocol", ["xml", "json"])
def test_every_prefix_of_every_choice_completes_to_a_match(protocol: str) -> None:
    m = day3_investigator().memories[7]
    for c in turn_choices(m.legal, m.names, tool_options(m)):
        parts = choice_parts(c, protocol)
        rx = re.compile(parts_regex(parts, protocol))
        sample = "".join(p.value if p.kind == "lit" else
                         (p.options[-1] if p.kind == "opt" else 'Hi "there" \\ you')
                         for p in parts)
        if protocol == "json":
            sample = sample.replace('Hi "there" \\ you', 'Hi \\"there\\" \\\\ you')
        assert rx.fullmatch(sample), (c.tag, sample)
        for i in range(len(sample)):
            w = walk(parts, sample[:i], protocol)
            assert w is not None and not w.complete, (c.tag, sample[:i])
            assert rx.fullmatch(sample[:i] + w.suffix), (c.tag, sample[:i], w.suffix)
