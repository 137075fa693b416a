"""`tossim bench server`, small: a real server in a subprocess, two fast all-AI
games, four websocket spectators (public, omniscient and a player's view) in
two load-generator processes. No timing assertions: only that the bench ran,
the games finished, and every spectator's events equal a fresh replay's
(nothing lost, duplicated, altered or leaked), merged over both processes."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tossim.cli import app
from tossim.tools.bench_server import BenchConfig, report_lines, run_bench


async def test_bench_server_smoke() -> None:
    result = await run_bench(BenchConfig(games=2, spectators=4, speed="fast", duration=120,
                                         clients=2))
    assert result.games_finished == 2
    assert result.clients == 2 and result.client_lags  # both processes sampled their loops
    assert not result.capped
    assert result.connected == result.checked == 4
    assert set(result.viewers) == {"public", "omniscient", "player"}
    assert result.failed == 0, result.errors
    assert result.lost == result.duplicated == result.out_of_order == 0
    assert result.altered == result.unexpected == result.incomplete == 0
    assert result.events > 0 and result.messages > 0 and result.latencies
    assert result.ok
    lines = report_lines([result])
    assert any("lost 0, duplicated 0" in line for line in lines)
    assert any("load generator: 2 processes" in line for line in lines)


async def test_bench_server_compressed(monkeypatch: pytest.MonkeyPatch) -> None:
    """With compression on in the server, the load generator's spectators
    inflate what they receive and the check still holds."""
    monkeypatch.setenv("TOSSIM_WS_COMPRESSION", "true")
    result = await run_bench(BenchConfig(games=1, spectators=3, speed="fast", duration=120,
                                         clients=1))
    assert result.deflate == result.connected == result.checked == 3
    assert result.lost == result.duplicated == result.altered == result.unexpected == 0
    assert result.ok, result.errors


def test_bench_server_command_rejects_bad_speed() -> None:
    out = CliRunner().invoke(app, ["bench", "server", "--speed", "warp"])
    assert out.exit_code != 0
