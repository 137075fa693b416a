"""The tool loop with a scripted backend: tools and observations, closing
text cut off by max_tokens, faults and retries, append-only context."""

from __future__ import annotations

import asyncio
import re

import pytest

from tossim.agents.grammar import choice_parts, parts_regex, turn_choices, walk
from tossim.agents.loop import LoopConfig, ToolLoop, TurnResult
from tossim.agents.tools import tool_options
from tossim.engine.commands import Chat, Vote

from .fake_backend import ScriptedBackend
from .support import day3_investigator

CFG = LoopConfig(max_tool_calls=2, action_tokens=40, turn_tokens=400)


def run(outputs: list[str], cfg: LoopConfig = CFG, check_regex: bool = True,
        slot: int = 7) -> tuple[TurnResult, ScriptedBackend]:
    memory = day3_investigator().memories[slot]
    backend = ScriptedBackend(outputs, check_regex)
    result = asyncio.run(ToolLoop(backend, cfg).run_turn(memory, key="g:7", seed=1))
    return result, backend


def test_tool_call_inside_the_thought_then_vote() -> None:
    r, b = run(["<thinking>Check the will.<check_will>Player 3</check_will>",
                " Player 4 lies.</thinking>", "<vote>Player 4</vote>"])
    assert r.command == Vote(7, 4)
    assert r.stats.tool_calls == 1 and r.stats.segments == 1
    # the seed's loop: observation injected inside the SAME thought, one <thinking>
    assert r.transcript.count("<thinking>") == 1
    assert ("<check_will>Player 3</check_will>\n<observation>Player 3's will:" in r.transcript)
    assert r.transcript.endswith("Player 4 lies.</thinking>\n<vote>Player 4</vote>")
    assert r.stats.faults == {} and r.stats.malformed == 0 and not r.stats.truncated
    # the resume does not reopen the thought; the action grammar has no tools
    assert not (b.requests[1].regex or "").startswith("<thinking>")
    assert "<check_will>" not in (b.requests[2].regex or "")
    assert [s["kind"] for s in r.steps] == ["thinking", "tool", "thinking", "action"]
    assert r.steps[1]["name"] == "check_will" and r.steps[1]["args"] == {"player": "Player 3"}
    assert r.steps[1]["observation"].startswith("Player 3's will:")
    assert r.steps[-1]["text"] == "<vote>Player 4</vote>"


def test_several_tool_calls_in_one_thought_and_steps_stream() -> None:
    seen: list[dict] = []
    memory = day3_investigator().memories[7]
    backend = ScriptedBackend(["<thinking>First the dead.<graveyard></graveyard>",
                               " Now the will.<check_will>Player 3</check_will>",
                               " And my results.<my_results></my_results>",
                               " Player 4 lies.</thinking>",
                               "<speak>Player 4 is lying about the Doctor.</speak>"])
    r = asyncio.run(ToolLoop(backend, LoopConfig(think_budget={"voting": 400})).run_turn(
        memory, key="g:7", seed=1, on_step=seen.append))
    assert r.command == Chat(7, "Player 4 is lying about the Doctor.")
    assert r.stats.tool_calls == 3 and r.transcript.count("<thinking>") == 1
    assert r.transcript.count("<observation>") == 3
    assert [s["name"] for s in r.steps if s["kind"] == "tool"] == [
        "graveyard", "check_will", "my_results"]
    assert seen == r.steps  # streamed as they completed
    # today's tool calls persist for the rest of the day (shown in later prompts)
    assert [x.tool for x in memory.tool_results_today()] == [
        "graveyard", "check_will", "my_results"]
    assert r.prompt.startswith("<|system|>") and "**Your results so far**" in r.prompt


def test_context_is_only_appended_to() -> None:
    r, b = run(["<thinking>a<graveyard></graveyard>", "b<my_results></my_results>",
                "c</thinking>", "<wait></wait>"])
    prompts = [req.prompt_ids for req in b.requests]
    assert len(prompts) == 4
    for before, after in zip(prompts, prompts[1:], strict=False):
        assert after[:len(before)] == before
    assert all(req.key == "g:7" for req in b.requests)


def test_tool_cap_removes_tools_from_the_grammar() -> None:
    r, b = run(["<thinking>a<graveyard></graveyard>", "b<graveyard></graveyard>",
                "c</thinking>", "<wait></wait>"])
    assert r.stats.tool_calls == 2
    assert "<graveyard>" in (b.requests[1].regex or "")
    assert "<graveyard>" not in (b.requests[2].regex or "")
    assert "</thinking>" in (b.requests[2].regex or "")


def test_thinking_budget_is_per_phase_and_shared_by_the_pieces() -> None:
    cfg = LoopConfig(think_budget={"voting": 60}, action_tokens=40)
    first = "<thinking>Check.<graveyard></graveyard>"
    r, b = run([first, " Player 4 says Doctor but the will says otherwise and so on",
                "<vote>Player 4</vote>"], cfg)
    assert b.requests[0].max_tokens == 60
    assert b.requests[1].max_tokens == 60 - len(first)
    assert r.stats.truncated == 1 and r.command == Vote(7, 4)
    assert r.transcript.count("</thinking>") == 1
    assert "</thinking>\n<vote>Player 4</vote>" in r.transcript


def test_cut_thought_is_closed_at_a_word_and_the_action_follows() -> None:
    long_thought = "<thinking>Player 4 says Doctor but the will says otherwise and"
    r, b = run([long_thought + " more", "<vote>Player 4</vote>"],
               LoopConfig(think_budget={}, think_tokens=len(long_thought) + 3,
                          action_tokens=40))
    assert r.command == Vote(7, 4)
    assert r.stats.truncated == 1
    assert "otherwise and</thinking>\n<vote>Player 4</vote>" in r.transcript


def test_a_half_written_tool_tag_is_dropped_when_the_budget_runs_out() -> None:
    cut = "<thinking>I should check the will <check_wi"
    r, _ = run([cut + "ll>Player 3</check_will>", "<vote>Player 4</vote>"],
               LoopConfig(think_budget={}, think_tokens=len(cut), action_tokens=40))
    assert r.stats.tool_calls == 0 and r.command == Vote(7, 4)
    assert "check the will</thinking>\n<vote>" in r.transcript


def test_cut_speech_is_closed_at_a_word() -> None:
    speech = "<speak>Player 4 is lying about the Doctor claim"
    r, _ = run(["<thinking>x</thinking>", speech], LoopConfig(action_tokens=len(speech) - 3))
    assert r.command == Chat(7, "Player 4 is lying about the Doctor")
    assert r.stats.truncated == 1 and r.stats.malformed == 0


def test_half_written_name_is_completed_with_a_legal_one() -> None:
    r, _ = run(["<thinking>x</thinking>", '<whisper to="Player 5">hi</whisper>',
                "<thinking>y</thinking>", '<whisper to="Player 5">hi</whisper>',
                "<thinking>z</thinking>", "<wait></wait>"],
               LoopConfig(action_tokens=len('<whisper to="Pla')))
    closed = [s["text"] for s in r.steps if s["kind"] == "action"][0]
    assert re.fullmatch(r'<whisper to="Player [124568]">\.\.\. \.\.\. \.\.\.</whisper>', closed)
    # the loop's filler is not a player's line: the guard refuses it twice,
    # then the seat may only say a move (no whisper): here it waits
    assert r.command is None and r.stats.degenerate == {"no letters": 2}
    assert not r.stats.silenced and not r.stats.moved
    r2, _ = run(["<thinking>x</thinking>", "<vote>Player 1</vote>"],
                LoopConfig(action_tokens=len("<vote>Player")))
    assert isinstance(r2.command, Vote)


def test_an_unguided_bad_target_gets_a_premise_fault_with_candidates() -> None:
    r, b = run(["<thinking>x</thinking>", "<vote>Player 3</vote>",
                "<thinking>y</thinking>", "<vote>Player 4</vote>"], check_regex=False)
    assert r.command == Vote(7, 4)
    assert r.stats.faults == {"premise": 1}
    assert "[premise fault] Player 3 is dead. Candidates: Player 1, Player 2" in r.transcript
    assert [s["kind"] for s in r.steps] == ["thinking", "action", "fault", "thinking",
                                            "action"]


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
    assert [s["kind"] for s in r.steps] == ["thinking", "tool", "thinking", "action"]


def test_json_protocol_several_tool_calls() -> None:
    r, b = run(['{"thought": "Graves.", ', '"action": "graveyard", "args": {}}',
                '{"thought": "Will.", ', '"action": "check_will", "args": {"player": "Player 3"}}',
                '{"thought": "Vote.", ', '"action": "vote", "args": {"target": "Player 4"}}'],
               LoopConfig(protocol="json"))
    assert r.command == Vote(7, 4) and r.stats.tool_calls == 2
    assert r.transcript.count("<observation>") == 2


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


def test_the_same_tool_call_twice_in_one_thought_is_refused() -> None:
    r, _ = run(["<thinking>Check.<check_will>Player 3</check_will>",
                " Again.<check_will>Player 3</check_will>",
                " Player 4 lies.</thinking>", "<vote>Player 4</vote>"])
    assert r.command == Vote(7, 4)
    assert r.stats.repeated_tools == 1 and r.stats.tool_calls == 2
    assert [s["kind"] for s in r.steps] == ["thinking", "tool", "thinking", "fault",
                                            "thinking", "action"]
    assert r.steps[3]["fault"] == "repeat"
    assert r.transcript.count("Player 3's will:") == 1  # the tool ran once
    assert "[repeated call] You already called check_will" in r.transcript


def test_a_speech_copied_from_the_prompt_is_resampled_once() -> None:
    copy = "<speak>Player 4 claimed Doctor, but Player 3's will says otherwise.</speak>"
    r, _ = run(["<thinking>x</thinking>", copy,
                "<thinking>y</thinking>", "<speak>Player 4 healed nobody, vote them.</speak>"],
               LoopConfig(action_tokens=90, turn_tokens=400))
    assert r.command == Chat(7, "Player 4 healed nobody, vote them.")
    assert r.stats.degenerate == {"copied from the prompt": 1} and not r.stats.forced
    assert "[guard] Not sent: copied from the prompt" in r.transcript


def test_a_second_degenerate_speech_becomes_a_structured_move() -> None:
    backend_outputs = ["<thinking>x</thinking>", "<speak>Dave, you are the game.</speak>",
                       "<thinking>y</thinking>",
                       "<speak>You are the game. You are the game.</speak>",
                       "<thinking>z</thinking>", "<speak>claim Investigator</speak>"]
    r, backend = run(backend_outputs, LoopConfig(action_tokens=90, turn_tokens=400))
    assert isinstance(r.command, Chat) and "Investigator" in r.command.text
    assert r.move is not None and r.stats.moved and not r.stats.silenced
    assert not r.stats.forced  # the loop's budget was not the reason
    assert r.stats.degenerate == {"not a player": 1, "repeated sentence": 1}
    # the last action was constrained to moves; the model was shown them
    assert "Say it as one of these moves instead" in r.transcript
    assert "claim" in backend.requests[-1].regex
