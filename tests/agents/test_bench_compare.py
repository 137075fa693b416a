"""`tossim bench agents --ai A,B --batches 1,4`: the same days on each
backend at each batch size (one seat thinking at a time, then four), each
backend told the most requests it may decode at once, and a side-by-side
ratio line per size (docs/agents.md, "Backends")."""

from __future__ import annotations

import pytest

from tossim.tools import bench_agents
from tossim.tools.bench_agents import PhaseClock, run_bench_agents

from .grammar_backend import GrammarWalkBackend


def test_each_backend_plays_each_batch_size_and_is_compared_at_that_size(
        monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[str, GrammarWalkBackend]] = []

    def make(name: str, **_: object) -> GrammarWalkBackend:
        backend = GrammarWalkBackend()
        made.append((name, backend))
        return backend

    monkeypatch.setattr(bench_agents, "make_backend", make)
    lines: list[str] = []
    runs = run_bench_agents(ai="first,second", model=None, url=None, players=7, days=1,
                            seed=3, protocol="xml", think_scale=0.2, max_tools=1,
                            baseline=False, echo=lines.append,
                            clock=PhaseClock(deadlines=False), batches=(1, 4))

    assert [name for name, _ in made] == ["first", "second", "first", "second"]
    assert [b.max_batch for _, b in made] == [1, 1, 4, 4]
    assert [r.label for r in runs] == ["first, up to 1 at once", "second, up to 1 at once",
                                       "first, up to 4 at once", "second, up to 4 at once"]
    assert all(r.match.total().turns > 0 for r in runs)
    side = lines[lines.index(next(x for x in lines if x.startswith("  side by side"))) + 1:]
    assert side[0].startswith("    first, up to 1 at once vs second, up to 1 at once: a turn ")
    assert side[1].startswith("    first, up to 4 at once vs second, up to 4 at once: a turn ")
    assert len(side) == 2
