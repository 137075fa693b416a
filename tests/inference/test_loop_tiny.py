"""The tool loop on a real model path: the local backend (transformers +
outlines-core, batched decoding, prefix KV caches) running a tiny randomly
initialised model with a locally trained tokenizer. A random model writes
nonsense of every shape; the grammar and the loop must still turn every
turn into one well-formed, legal action."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from tossim.agents.entry_match import play_entry_match
from tossim.agents.grammar import choice_parts, turn_choices, turn_regex, walk
from tossim.agents.match import HookSink, play
from tossim.agents.prompting import build_messages
from tossim.agents.tools import tool_options
from tossim.engine.events import Event
from tossim.engine.state import GameConfig
from tossim.inference.base import GenerationRequest
from tossim.inference.catalogue import backend_entry

pytest.importorskip("torch")
pytest.importorskip("outlines_core")

from agents.support import day3_investigator  # noqa: E402

from tossim.inference.local_backend import LocalBackend  # noqa: E402


@pytest.fixture(scope="module")
def backend(tiny_model_dir: Path) -> LocalBackend:
    return LocalBackend(tiny_model_dir)


@pytest.mark.parametrize("protocol", ["xml", "json"])
def test_random_model_plays_whole_days_with_only_legal_actions(
        backend: LocalBackend, protocol: str) -> None:
    from tossim.agents.loop import LoopConfig
    match = asyncio.run(play_entry_match(
        GameConfig(players=7, seed=5), backend_entry("local"), backend=backend,
        loop_config=LoopConfig(protocol=protocol), max_days=2))
    r = match.result
    total = match.total()
    assert total.turns >= 7 * 3  # day 1, night 1, day 2 discussion and voting at least
    assert r.faults == dict.fromkeys(range(1, 8), 0), r.fault_reasons  # engine took all
    assert r.errors == dict.fromkeys(range(1, 8), 0)
    assert total.malformed == 0 and total.forced == 0 and not total.faults
    assert total.truncated > 0  # random text runs out of tokens: the loop closed it
    assert total.tool_calls > 0
    assert set(total.actions) - {"wait"}  # it acted, not only waited
    assert 1 in r.summaries and r.summaries[1]
    m = match.metrics()
    assert set(m["seats"]) == {str(s) for s in range(1, 8)}
    assert m["total"]["generated_tokens"] == sum(s["agent"]["generated_tokens"]
                                                 for s in m["seats"].values())


def test_guided_output_follows_the_turn_grammar_and_ids_decode(backend: LocalBackend) -> None:
    """A finished output matches the regex in full; one cut off by max_tokens
    is a prefix of a match (the loop can close it)."""
    t = day3_investigator()
    requests, shapes = [], []
    for slot in (1, 2, 7):
        m = t.memories[slot]
        ids = backend.tokenizer.chat_prompt(build_messages(m))
        rx = turn_regex(m.legal, m.names, tool_options(m), think=False)
        requests.append(GenerationRequest(tuple(ids), 60, regex=rx, seed=slot, key=f"t{slot}"))
        shapes.append([choice_parts(c) for c in turn_choices(m.legal, m.names, tool_options(m))])

    async def go():  # type: ignore[no-untyped-def]
        return await backend.generate(requests)

    results = asyncio.run(go())
    for req, res, shape in zip(requests, results, shapes, strict=True):
        assert backend.tokenizer.decode(res.token_ids) == res.text
        if res.finish_reason == "stop":
            assert re.fullmatch(req.regex or "", res.text), res.text
        else:
            assert any(walk(parts, res.text) is not None for parts in shape), res.text


def test_a_resumed_context_reuses_the_cache(backend: LocalBackend) -> None:
    m = day3_investigator().memories[7]
    ids = tuple(backend.tokenizer.chat_prompt(build_messages(m)))

    async def go():  # type: ignore[no-untyped-def]
        first = await backend.generate_one(GenerationRequest(ids, 8, seed=1, key="resume"))
        longer = ids + first.token_ids + tuple(backend.tokenizer.encode("<observation>x"))
        second = await backend.generate_one(GenerationRequest(longer, 8, seed=1, key="resume"))
        other = await backend.generate_one(GenerationRequest(ids, 8, seed=1, key="other"))
        return first, second, other

    first, second, other = asyncio.run(go())
    assert second.cached_tokens >= len(ids) + len(first.token_ids) - 1
    assert other.cached_tokens > len(ids) // 2  # another seat: the shared head
    assert other.token_ids == first.token_ids  # same seed, same context: same output


def test_batched_decoding_equals_one_at_a_time(backend: LocalBackend) -> None:
    t = day3_investigator()
    prompts = [tuple(backend.tokenizer.chat_prompt(build_messages(t.memories[s])))
               for s in (2, 5)]

    async def go(batch: bool):  # type: ignore[no-untyped-def]
        reqs = [GenerationRequest(p, 12, seed=3, temperature=0) for p in prompts]
        if batch:
            return await backend.generate(reqs)
        return [await backend.generate_one(r) for r in reqs]

    together, alone = asyncio.run(go(True)), asyncio.run(go(False))
    assert [r.token_ids for r in together] == [r.token_ids for r in alone]


def test_match_events_are_all_legal_applications(backend: LocalBackend) -> None:
    """Every command the model seats sent was applied (an `after` hook sees
    no rejection) across a whole day."""
    rejected: list[str] = []

    def after(game, cmd, events: list[Event] | None) -> None:  # type: ignore[no-untyped-def]
        if events is None:
            rejected.append(repr(cmd))

    from tossim.agents.llm_seat import LLMSeat
    from tossim.agents.loop import ToolLoop
    loop = ToolLoop(backend)
    seats = {s: LLMSeat(s, loop, key=f"h{s}", seed=s) for s in range(1, 8)}
    asyncio.run(play(GameConfig(players=7, seed=9), seats, [HookSink(after=after)], max_days=1))
    assert rejected == []
    assert sum(s.metrics.turns for s in seats.values()) >= 7


def test_random_model_finishes_a_whole_game(backend: LocalBackend) -> None:
    match = asyncio.run(play_entry_match(
        GameConfig(players=7, seed=3), backend_entry("local"), backend=backend))
    r = match.result
    assert r.finished and r.result is not None
    assert r.faults == dict.fromkeys(range(1, 8), 0), r.fault_reasons
    assert match.total().malformed == 0
    # every day before the last has its summary
    assert set(range(1, r.game.day)) <= set(r.summaries)
    assert all(text.strip() for text in r.summaries.values())


def test_a_final_state_that_allows_more_does_not_end_the_row(backend: LocalBackend) -> None:
    """The summary grammar is complete after one character; the row must go
    on until EOS or max_tokens (it used to stop after one token: "The")."""
    from tossim.agents.summarize import SUMMARY_REGEX
    ids = tuple(backend.tokenizer.chat_prompt([{"role": "user", "content": "Summarise."}]))

    async def go():  # type: ignore[no-untyped-def]
        return await backend.generate([GenerationRequest(ids, 24, regex=SUMMARY_REGEX, seed=s)
                                       for s in range(3)])

    results = asyncio.run(go())
    assert all(re.fullmatch(SUMMARY_REGEX, r.text) for r in results)
    # a random model rarely picks EOS: most rows run to their budget
    assert sum(len(r.token_ids) for r in results) > 3 * 12, [r.text for r in results]
    assert any(r.finish_reason == "length" for r in results)


def test_write_summary_is_model_written(backend: LocalBackend) -> None:
    from tossim.agents.summarize import SummaryStats, fallback_summary, write_summary
    t = day3_investigator()
    public = t.memories[1]
    stats = SummaryStats()
    text = asyncio.run(write_summary(backend, public, 2, seed=4, stats=stats))
    assert stats.model == 1 and stats.fallback == 0
    assert text != fallback_summary(public, 2) and len(text) >= 12 and "<" not in text


def test_tiny_model_calls_several_tools_inside_one_thought(backend: LocalBackend) -> None:
    """The seed's loop on a real model: the thought is interrupted at each
    tool's closing tag, the observation injected and the SAME thought resumed.
    Steered by the grammar (the thought may not close before two tool calls),
    but which tools, their arguments and all text are the model's output."""
    from tossim.agents.loop import LoopConfig, ToolLoop
    m = day3_investigator().memories[7]
    cfg = LoopConfig(min_tool_calls=2, think_budget={"voting": 300}, turn_tokens=500)
    steps: list[dict] = []  # type: ignore[type-arg]
    r = asyncio.run(ToolLoop(backend, cfg).run_turn(m, key="tiny-tools", seed=2,
                                                    on_step=steps.append))
    # every tool call interrupts the thought and gets an observation: a
    # tool's answer, or a fault when a random model repeats a call it made.
    # The first attempt's thought is the one the grammar steers (an action
    # the guard refuses gets another attempt, which opens a new thought)
    first = steps[:next(i for i, s in enumerate(steps) if s["kind"] == "action")]
    calls = [s for s in first if s["kind"] == "tool"
             or (s["kind"] == "fault" and "[repeated call]" in str(s.get("text", "")))]
    assert len(calls) >= 2 and any(s["kind"] == "tool" for s in calls), r.transcript
    assert r.transcript.count("<thinking>") == r.transcript.count("</thinking>") >= 1
    # every observation of those calls sits inside that one thought
    inside = r.transcript.split("</thinking>")[0]
    assert inside.count("<thinking>") == 1
    assert inside.count("<observation>") == len(calls)
    assert r.command is not None or r.action == "wait"
    assert steps[-1]["kind"] == "action"


def test_summary_is_model_written_and_shown_on_day_2(backend: LocalBackend) -> None:
    from tossim.agents.loop import LoopConfig
    match = asyncio.run(play_entry_match(
        GameConfig(players=7, seed=5), backend_entry("local"), backend=backend,
        loop_config=LoopConfig(think_budget={}, think_tokens=8, action_tokens=16),
        turns={}, max_days=2))
    # the random model's summaries are gibberish the text guard refuses: each
    # is replaced by the extractive one (counted), never lost
    stats = match.summary_stats
    assert stats.model + stats.fallback >= 1 and stats.fallback == stats.degenerate
    assert match.metrics()["summary_stats"]["fallback_rate"] == stats.fallback / (
        stats.model + stats.fallback)
    day2 = [entry for seat in match.seats.values() for entry in seat.turn_log
            if entry["day"] == 2]
    assert day2 and all(f"- Day 1: {match.result.summaries[1][:20]}" in e["prompt"]
                        for e in day2)
    entry = day2[0]
    assert {"day", "phase", "prompt", "output", "steps", "action", "tokens"} <= set(entry)
    assert set(entry["tokens"]) == {"prompt", "generated", "cached"}


def test_warm_rows_are_prefilled_together_with_the_same_result(backend: LocalBackend) -> None:
    """Rows that resume a cached context are prefilled in one forward pass
    (prefix left-padded, new tokens right-padded); the tokens they then
    generate equal those of one-at-a-time prefills."""
    t = day3_investigator()
    heads = [tuple(backend.tokenizer.chat_prompt(build_messages(t.memories[s]))) for s in (2, 5)]
    tails = [tuple(backend.tokenizer.encode(x)) for x in ("<observation>a b c</observation>",
                                                           "<observation>longer text here "
                                                           "with more words</observation>")]

    async def go(together: bool, tag: str):  # type: ignore[no-untyped-def]
        for i, h in enumerate(heads):  # warm each seat's own cache
            await backend.generate_one(GenerationRequest(h, 1, seed=1, temperature=0,
                                                         key=f"{tag}{i}"))
        reqs = [GenerationRequest(h + (7,) + tl, 10, seed=2, temperature=0, key=f"{tag}{i}")
                for i, (h, tl) in enumerate(zip(heads, tails, strict=True))]
        passes = backend.stats.prefill_passes
        out = (await backend.generate(reqs) if together
               else [await backend.generate_one(r) for r in reqs])
        return out, backend.stats.prefill_passes - passes

    both, passes_both = asyncio.run(go(True, "pt"))
    alone, passes_alone = asyncio.run(go(False, "pa"))
    assert passes_both == 1 and passes_alone == 2
    assert all(r.cached_tokens >= len(h) - 1 for r, h in zip(both, heads, strict=True))
    assert [r.token_ids for r in both] == [r.token_ids for r in alone]
