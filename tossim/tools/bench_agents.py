"""`tossim bench agents`: model seats playing the same days twice, batched and
one request at a time, with the figures that say where the time goes; or,
given several backends (`--ai local,torch`), the same days on each (its own
batching, up to each of `batches` requests at once: `1,4` is one seat
thinking at a time, then four) and their speed ratios at each batch size, in
one run (docs/agents.md, "Backends").

Timing (docs/agents.md#deadlines): each phase lasts its standard length
times `time_scale`, and a model turn has the phase's share of a round (a
discussion has two) less the server's margin, as a timed server game gives
it. With deadlines on, the seats act within it; with them off, the turns run
free and are only measured against it (how a game without deadlines fares).
The bench prints the share of turns that acted in time, seconds per turn and
the share of each phase the model seats used (the slowest seat's turn).

Rates are wall-clock (the match's elapsed seconds), never sums of per-request
seconds (rows decoded together overlap, so those sums overcount time). Each
run's backend is closed (its scheduler thread stopped and joined) before the
next one starts and before the process exits.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tossim.agents.entry_match import EntryMatch, play_entry_match
from tossim.agents.loop import LoopConfig, phase_turn_seconds
from tossim.agents.seat import SeatTelemetry
from tossim.agents.turns import turns_in
from tossim.analysis.quality import format_quality, game_quality
from tossim.engine.modes import DURATIONS
from tossim.engine.state import GameConfig
from tossim.inference.base import Backend, BackendStats
from tossim.inference.catalogue import backend_entry
from tossim.inference.registry import make_backend


@dataclass(frozen=True)
class PhaseClock:
    """Phase lengths and model turns' time in the bench (module docstring)."""

    time_scale: float = 1.0
    deadlines: bool = True

    def phase_seconds(self, phase: str) -> float:
        return DURATIONS["current"].get(phase, 30) * self.time_scale

    def turn_seconds(self, phase: str) -> float:
        share = self.phase_seconds(phase) / turns_in(phase)
        return phase_turn_seconds(share)


@dataclass
class Timing:
    """Model turns against their time: in time, seconds, phase shares."""

    turns: int = 0
    in_time: int = 0
    seconds: float = 0.0
    max_seconds: float = 0.0
    thinking_cut: int = 0
    # phase -> shares (one per phase played: its slowest seat's turns over its length)
    shares: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    @property
    def in_time_rate(self) -> float:
        return self.in_time / max(self.turns, 1)


def timing(match: EntryMatch, clock: PhaseClock) -> Timing:
    """Each model turn (`turn_log`) measured against its phase's time."""
    out = Timing()
    used: dict[tuple[int, str], dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for slot, seat in match.seats.items():
        for turn in seat.turn_log if isinstance(seat, SeatTelemetry) else ():
            t = turn.get("time") or {}
            secs = float(t.get("seconds") or 0.0)
            phase = str(turn["phase"])
            out.turns += 1
            out.seconds += secs
            out.max_seconds = max(out.max_seconds, secs)
            if not t.get("missed") and secs <= clock.turn_seconds(phase) + 0.5:
                out.in_time += 1
            used[(int(turn["day"]), phase)][slot] += secs
    for (_day, phase), per_seat in sorted(used.items()):
        out.shares[phase].append(max(per_seat.values()) / clock.phase_seconds(phase))
    out.thinking_cut = match.total().thinking_cut
    return out


def timing_lines(match: EntryMatch, clock: PhaseClock) -> list[str]:
    t = timing(match, clock)
    mode = "deadlines on" if clock.deadlines else "deadlines off (measured only)"
    shares = ", ".join(f"{phase} {sum(v) / len(v):.0%}" for phase, v in t.shares.items())
    return [
        f"    time ({mode}; phases x{clock.time_scale:g} of standard lengths): "
        f"{t.in_time_rate:.0%} of {t.turns} turns acted in time; "
        f"{t.seconds / max(t.turns, 1):.1f} s per turn (max {t.max_seconds:.1f}); "
        f"thinking cut for time in {t.thinking_cut}",
        f"    share of each phase the model seats used: {shares or 'none'}",
    ]


@dataclass
class BenchRun:
    label: str
    match: EntryMatch
    stats: BackendStats

    @property
    def actions_per_s(self) -> float:
        return self.match.total().turns / max(self.match.seconds, 1e-9)

    @property
    def tokens_per_s(self) -> float:
        """Generated tokens per wall-clock second."""
        return self.stats.generated_tokens / max(self.match.seconds, 1e-9)


def play_once(backend: Backend, config: GameConfig, loop_config: LoopConfig, days: int,
              max_batch: int, clock: PhaseClock | None = None
              ) -> tuple[EntryMatch, BackendStats]:
    backend.max_batch = max_batch
    timed = clock.turn_seconds if clock is not None and clock.deadlines else None

    async def go() -> EntryMatch:
        try:
            # the built-in local entry stands for the backend made here; the
            # bench's loop config is the seats' whole configuration
            return await play_entry_match(config, backend_entry("local"), backend=backend,
                                          loop_config=loop_config, max_days=days,
                                          turn_seconds=timed)
        finally:
            await backend.close()

    match = asyncio.run(go())
    return match, backend.stats


def report_lines(run: BenchRun) -> list[str]:
    t, stats, m = run.match.total(), run.stats, run.match
    turns = max(t.turns, 1)
    summaries = m.summary_stats.to_dict()
    step_ms = 1000 * stats.decode_seconds / max(stats.decode_steps, 1)
    new_prompt = stats.prompt_tokens - stats.cached_tokens
    return [
        f"  {run.label}: {t.turns} actions in {m.seconds:.1f} s = {run.actions_per_s:.3f} "
        f"actions/s; {stats.generated_tokens} tokens generated = {run.tokens_per_s:.1f} "
        f"tokens/s (wall clock); largest batch {stats.largest_batch}",
        f"    malformed {t.malformed / turns:.1%} ({t.malformed}), forced waits {t.forced}, "
        f"engine rejections {sum(m.result.faults.values())}, truncated segments "
        f"{t.truncated}",
        "    faults by kind: " + (", ".join(f"{k} {v}" for k, v in sorted(t.faults.items()))
                                  or "none"),
        f"    per turn: tool calls {t.tool_calls / turns:.2f}, thinking tokens "
        f"{t.thinking_tokens / turns:.0f}, prompt tokens {t.prompt_tokens / turns:.0f}, "
        f"generated {t.generated_tokens / turns:.1f}, prefix-cache hits "
        f"{t.cached_tokens / max(t.requested_tokens, 1):.0%} of the context sent",
        f"    summaries: {summaries['model']} by the model, {summaries['fallback']} "
        f"fallback (rate {summaries['fallback_rate']:.0%})",
        f"    backend: {stats.requests} requests; prefill {stats.prefill_seconds:.1f} s for "
        f"{stats.prompt_tokens - stats.cached_tokens} new prompt tokens in "
        f"{stats.prefill_passes} forward passes; decode {stats.decode_seconds:.1f} s over "
        f"{stats.decode_steps} steps ({step_ms:.0f} ms/step), "
        f"{stats.forced_tokens} tokens forced by the grammar (no step of their own)",
        f"    speed: {m.seconds / turns:.2f} s per turn; prefill "
        f"{new_prompt / max(stats.prefill_seconds, 1e-9):.0f} tokens/s, decode "
        f"{stats.generated_tokens / max(stats.decode_seconds, 1e-9):.1f} tokens/s; backend "
        f"prefix hits {stats.cached_tokens / max(stats.prompt_tokens, 1):.0%} of prompt tokens",
        "    actions: " + ", ".join(f"{k} {v}" for k, v in sorted(t.actions.items())),
    ]


def run_bench_agents(*, ai: str, model: str | None, url: str | None, players: int, days: int,
                     seed: int, protocol: str, think_scale: float, max_tools: int,
                     baseline: bool, echo: Callable[[str], Any],
                     clock: PhaseClock | None = None,
                     batches: Sequence[int] = (16,)) -> list[BenchRun]:
    """`ai` names one backend, or several separated by commas (each plays the
    same days once per batch size in `batches`, and the first is compared with
    each other one at each size)."""
    clock = clock or PhaseClock()
    names = [n.strip() for n in ai.split(",") if n.strip()]
    if not names:
        raise ValueError("--ai names no backend")
    loop_config = LoopConfig(protocol=protocol, max_tool_calls=max_tools).scaled(think_scale)
    config = GameConfig(players=players, seed=seed)
    echo(f"bench agents: {players} model seats ({ai}, {protocol}), seed {seed}, {days} day(s), "
         f"thinking budget x{think_scale:g}, up to {max_tools} tool calls per turn")
    if len(names) > 1:
        return _compare(names, model, url, config, loop_config, days, echo, clock, batches)
    runs = []
    for label, batch in (("batched (up to 16)", 16), ("sequential (one request at a time)", 1)):
        if batch == 1 and not baseline:
            break
        match, stats = play_once(make_backend(ai, model=model, url=url), config, loop_config,
                                 days, batch, clock)
        runs.append(BenchRun(label, match, stats))
        for line in report_lines(runs[-1]) + timing_lines(match, clock):
            echo(line)
        if batch > 1:  # the play quality of the batched run's game (tossim.analysis.quality)
            for line in format_quality(game_quality(match.result.game),
                                       {"model seats": sorted(match.seats)}):
                echo(line)
    if len(runs) == 2:
        b, s = runs
        echo(f"  ratio batched/sequential: {b.actions_per_s / max(s.actions_per_s, 1e-9):.2f} "
             f"(actions/s), {b.tokens_per_s / max(s.tokens_per_s, 1e-9):.2f} (tokens/s)")
    return runs


def _compare(names: list[str], model: str | None, url: str | None, config: GameConfig,
             loop_config: LoopConfig, days: int, echo: Callable[[str], Any],
             clock: PhaseClock, batches: Sequence[int]) -> list[BenchRun]:
    """The same days on each backend (its own batching, at most `batch`
    requests at once for each batch size), then each one's speed against the
    first's at the same size. The seats' turns differ once the models'
    outputs differ, so the ratios compare rates (per turn, per token)."""
    runs: list[BenchRun] = []
    by_batch: dict[int, list[BenchRun]] = defaultdict(list)
    for batch in batches:
        for name in names:
            match, stats = play_once(make_backend(name, model=model, url=url), config,
                                     loop_config, days, batch, clock)
            run = BenchRun(f"{name}, up to {batch} at once", match, stats)
            runs.append(run)
            by_batch[batch].append(run)
            for line in report_lines(run) + timing_lines(match, clock):
                echo(line)
    echo("  side by side (ratios: the first backend against each other one, same batch size):")
    for group in by_batch.values():
        for other in group[1:]:
            echo("    " + _ratio_line(group[0], other))
    return runs


def _ratio_line(first: BenchRun, other: BenchRun) -> str:
    def rate(tokens: int, seconds: float) -> float:
        return tokens / max(seconds, 1e-9)

    a, b = first.stats, other.stats
    turn_a = first.match.seconds / max(first.match.total().turns, 1)
    turn_b = other.match.seconds / max(other.match.total().turns, 1)
    prefill = (rate(a.prompt_tokens - a.cached_tokens, a.prefill_seconds)
               / max(rate(b.prompt_tokens - b.cached_tokens, b.prefill_seconds), 1e-9))
    decode = (rate(a.generated_tokens, a.decode_seconds)
              / max(rate(b.generated_tokens, b.decode_seconds), 1e-9))
    return (f"{first.label} vs {other.label}: a turn {turn_b / max(turn_a, 1e-9):.2f}x "
            f"faster ({turn_a:.1f} s against {turn_b:.1f} s), actions/s "
            f"{first.actions_per_s / max(other.actions_per_s, 1e-9):.2f}x, prefill tokens/s "
            f"{prefill:.2f}x, decode tokens/s {decode:.2f}x")
