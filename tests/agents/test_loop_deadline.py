"""Timed turns (docs/agents.md#deadlines): a fake backend whose speed the
test sets, on a fake clock, so the loop's sizing is checked without waiting.
The thought fits the time left at the measured speed; a turn short of time
skips its thought and acts; an action the deadline cuts is completed and
counted as a miss; a turn already out of time waits, also a miss."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from tossim.agents import loop as loop_module
from tossim.agents.loop import LoopConfig, ToolLoop, TurnResult
from tossim.agents.metrics import AgentMetrics
from tossim.engine.commands import Chat, Vote
from tossim.inference.base import Backend, GenerationRequest, GenerationResult

from .fake_backend import CharTokenizer
from .support import day3_investigator

CFG = LoopConfig(action_tokens=40, think_budget={"voting": 200}, turn_tokens=800)


class FakeClock:
    """time.monotonic / time.perf_counter for the loop: moved only by the backend."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        return self.now


class PacedBackend(Backend):
    """Writes `outputs[i]` for request i at `rate` characters (tokens) per
    second of the fake clock, stopping at max_tokens ("length") or at the
    request's deadline ("deadline"), as a real backend does."""

    name = "paced-fake"

    def __init__(self, outputs: Sequence[str], rate: float, clock: FakeClock) -> None:
        super().__init__()
        self.tokenizer = CharTokenizer()
        self.outputs, self.rate, self.clock = list(outputs), rate, clock
        self.requests: list[GenerationRequest] = []
        # measured so far: `rate` tokens per second of decoding
        self.stats.decode_steps, self.stats.decode_seconds = int(rate * 10), 10.0

    async def _generate_batch(
            self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        out = []
        for r in requests:
            self.requests.append(r)
            text, finish = self.outputs.pop(0), "stop"
            if len(text) > r.max_tokens:
                text, finish = text[:r.max_tokens], "length"
            if r.deadline is not None:
                room = max(0, int((r.deadline - self.clock.now) * self.rate))
                if room < len(text):
                    text, finish = text[:room], "deadline"
            self.clock.now += len(text) / self.rate
            out.append(GenerationResult(tuple(ord(c) for c in text), text, finish,
                                        len(r.prompt_ids)))
        return out


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(loop_module, "time", fake)
    return fake


def play(clock: FakeClock, outputs: list[str], *, rate: float, seconds: float | None
         ) -> tuple[TurnResult, PacedBackend]:
    memory = day3_investigator().memories[7]
    backend = PacedBackend(outputs, rate, clock)
    deadline = None if seconds is None else clock.now + seconds
    result = asyncio.run(ToolLoop(backend, CFG).run_turn(memory, key="g:7", seed=1,
                                                         deadline=deadline))
    return result, backend


THOUGHT = "<thinking>" + "Player 4 claimed Doctor but the will says otherwise. " * 4
VOTE = "<vote>Player 4</vote>"


def test_plenty_of_time_leaves_the_thinking_budget_alone(clock: FakeClock) -> None:
    r, b = play(clock, [THOUGHT + "</thinking>", VOTE], rate=100.0, seconds=60.0)
    assert r.command == Vote(7, 4)
    assert b.requests[0].max_tokens == 200  # the phase's budget: the time is ample
    assert b.requests[1].deadline == 1060.0  # the action's: the turn's deadline
    assert not r.stats.thinking_cut and not r.stats.missed
    assert r.stats.time_s == 60.0


def test_the_thought_is_sized_to_the_measured_speed(clock: FakeClock) -> None:
    # 20 tokens/s and 10 s: the action keeps 40 tokens / 20 = 2 s... at least
    # 30% = 3 s; the thought has 7 s, planned at 70% of the speed: 98 tokens
    r, b = play(clock, [THOUGHT, VOTE], rate=20.0, seconds=10.0)
    assert b.requests[0].max_tokens == 98
    assert b.requests[0].deadline == 1007.0  # the thought stops where the action's time starts
    assert r.stats.thinking_cut and r.stats.truncated == 1
    assert r.command == Vote(7, 4) and not r.stats.missed
    assert r.steps[0]["kind"] == "thinking" and r.steps[0]["text"]  # it thought, closed


def test_a_turn_asked_late_skips_its_thought_and_still_acts(clock: FakeClock) -> None:
    # 1.5 s at 20 tokens/s: the action may need 2 s, so no thought at all
    r, b = play(clock, [VOTE], rate=20.0, seconds=1.5)
    assert len(b.requests) == 1  # no thinking request
    assert "<thinking></thinking>" in r.transcript
    assert r.command == Vote(7, 4)
    assert r.stats.thinking_cut and not r.stats.missed


def test_a_speech_the_deadline_cuts_is_completed_and_counted_as_a_miss(
        clock: FakeClock) -> None:
    speech = "<speak>Player 4 is lying about the Doctor, vote them today.</speak>"
    r, b = play(clock, [speech], rate=10.0, seconds=2.0)
    assert r.command == Chat(7, "Player 4 is")  # "<speak>Player 4 is l", closed at a word
    assert r.stats.action_cut and r.stats.missed
    metrics = AgentMetrics()
    metrics.add(r)
    assert metrics.to_dict()["misses"] == 1 and metrics.to_dict()["in_time_rate"] == 0.0


def test_a_turn_out_of_time_waits_and_counts_a_miss(clock: FakeClock) -> None:
    r, b = play(clock, [VOTE], rate=10.0, seconds=0.0)
    assert r.command is None and r.action == "wait"
    assert r.stats.late and r.stats.missed and r.stats.forced
    assert not b.requests  # no model time spent on a turn that cannot be used


def test_without_a_deadline_nothing_is_timed(clock: FakeClock) -> None:
    r, b = play(clock, [THOUGHT + "</thinking>", VOTE], rate=1.0, seconds=None)
    assert r.command == Vote(7, 4)
    assert all(req.deadline is None for req in b.requests)
    assert r.stats.time_s is None and not r.stats.missed
    metrics = AgentMetrics()
    metrics.add(r)
    assert metrics.timed_turns == 0 and metrics.misses == 0
