"""The chat backend against a fake OpenAI-compatible provider
(tests/inference/fake_chat_provider.py): every error path leaves the game
running, reaches the engine with legal commands only, and is counted in the
seat's metrics. Plus the model catalogue's validation."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tossim.agents.entry_match import play_entry_match
from tossim.agents.entry_seat import make_seat_for_entry
from tossim.engine.state import GameConfig
from tossim.inference import chat_backend
from tossim.inference.catalogue import (
    CatalogueError,
    ModelEntry,
    backend_entry,
    load_catalogue,
    parse_catalogue,
)
from tossim.inference.chat_backend import ChatBackend, ChatError, retry_after

from .fake_chat_provider import fake_provider

pytest.importorskip("openai")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fresh_backends() -> Iterator[None]:
    chat_backend.forget_shared()
    yield
    chat_backend.forget_shared()


# ---- the catalogue -----------------------------------------------------------------------
def test_example_catalogue_loads_with_builtins_first() -> None:
    cat = load_catalogue(ROOT / "models.example.toml")
    assert cat.names()[:2] == ["scripted", "smollm2"]
    gpt = cat.get("gpt-4o-mini")
    assert gpt.backend == "chat" and gpt.protocol == "json"
    assert gpt.base_url == "https://api.openai.com/v1"  # the default for chat entries
    assert gpt.cost(1_000_000, 1_000_000) == pytest.approx(0.75)
    with pytest.raises(KeyError, match="known: scripted, smollm2, gpt-4o-mini"):
        cat.get("gpt-9")


@pytest.mark.parametrize(("fields", "message"), [
    ({"backend": "chat"}, "needs `model`"),
    ({"backend": "chat", "model": "m", "base_url": "https://u:pw@host/v1"}, "credentials"),
    ({"backend": "chat", "model": "m", "base_url": "https://h/v1?key=abc"}, "query"),
    ({"backend": "chat", "model": "m", "api_key": "sk-123"}, "api_key"),
    ({"backend": "chat", "model": "m", "api_key_env": "has space"}, "api_key_env"),
    ({"backend": "gpt", "model": "m"}, "backend"),
    ({"backend": "chat", "model": "m", "sampling": {"temprature": 1}}, "temprature"),
    ({"backend": "local", "base_url": "http://h"}, "in-process"),
    ({"backend": "chat", "model": "m", "price_prompt": -1}, "price_prompt"),
])
def test_bad_entries_are_refused_with_the_entry_and_the_field(fields: dict[str, Any],
                                                              message: str) -> None:
    with pytest.raises(CatalogueError, match=message) as err:
        parse_catalogue({"models": {"mine": fields}})
    assert "[models.mine]" in str(err.value)


def test_catalogue_file_errors_are_clear(tmp_path: Path) -> None:
    bad = tmp_path / "models.toml"
    bad.write_text("[models.x\nbackend = 'chat'\n")
    with pytest.raises(CatalogueError, match="not valid TOML"):
        load_catalogue(bad)
    with pytest.raises(CatalogueError, match="cannot read"):
        load_catalogue(tmp_path / "missing.toml")
    bad.write_text("[models.smollm2]\nbackend = 'local'\n")
    with pytest.raises(CatalogueError, match="built-in"):
        load_catalogue(bad)


def test_public_view_and_backend_entries_hold_no_secret(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    monkeypatch.setenv("TOSSIM_TEST_KEY", "sk-secret-123")
    e = ModelEntry(name="hosted", backend="chat", model="m", base_url="https://h.example/v1",
                   api_key_env="TOSSIM_TEST_KEY")
    text = repr(e.public()) + repr(e.capabilities())
    assert "h.example" not in text and "sk-secret" not in text
    assert e.api_key() == "sk-secret-123" and e.unavailable_reason() is None
    monkeypatch.delenv("TOSSIM_TEST_KEY")
    assert "TOSSIM_TEST_KEY" in (e.unavailable_reason() or "")
    assert backend_entry("local").name == "smollm2"
    assert backend_entry("scripted").backend == "scripted"


def test_retry_after_reads_seconds_and_milliseconds() -> None:
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None


# ---- the fake provider's paths -----------------------------------------------------------
def _entry(url: str, model: str, **kw: Any) -> ModelEntry:
    return ModelEntry(name=f"fake-{model}", backend="chat", model=model, base_url=url,
                      price_prompt=1.0, price_completion=2.0, **kw)


async def _play(url: str, model: str, *, seats: int = 3, days: int = 2, seed: int = 4,
                **kw: Any) -> Any:
    entry = _entry(url, model, **kw)
    match = await play_entry_match(GameConfig(players=7, seed=seed), entry,
                                   model_seats=range(1, seats + 1), turns={}, max_days=days)
    return match


def _sum(match: Any, key: str) -> Any:
    return sum(seat.seat_metrics().to_dict()[key] for seat in match.seats.values())


def _errors(match: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for seat in match.seats.values():
        for k, n in seat.seat_metrics().to_dict()["errors"].items():
            out[k] = out.get(k, 0) + n
    return out


def _game_went_on(match: Any) -> None:
    """The game moved past day 1 (or ended), and no chat seat's command was
    refused by the engine."""
    result = match.result
    assert result.game.ended or result.game.day >= 2
    assert all(result.faults.get(s, 0) == 0 for s in match.seats), result.fault_reasons
    assert all(result.errors.get(s, 0) == 0 for s in match.seats)
    assert _sum(match, "turns") >= 3


async def test_good_provider_plays_legal_actions_with_tokens_and_cost() -> None:
    async with fake_provider() as (provider, url):
        match = await _play(url, "good")
    _game_went_on(match)
    seat = match.seats[1]
    assert seat.backend.mode == "json_schema"
    m = seat.seat_metrics().to_dict()
    assert m["requests"] >= m["turns"] > 0 and m["forced"] == 0 and m["errors"] == {}
    assert m["prompt_tokens"] > 0 and m["completion_tokens"] > 0 and m["cached_tokens"] > 0
    expected = (m["requested_tokens"] * 1.0 + m["completion_tokens"] * 2.0) / 1e6
    assert m["cost_usd"] == pytest.approx(expected, abs=1e-6)
    assert m["entry"] == "fake-good" and m["constraint"] == "json_schema"
    acts = {a for s in match.seats.values() for a in s.seat_metrics().to_dict()["actions"]}
    assert acts - {"wait"}, acts  # the seats acted, not only waited
    # the day summaries are the chat model's own (plain text, no schema), not the fallback
    assert match.summary_stats.model >= 1 and match.summary_stats.fallback == 0
    assert "accused Player 3" in match.result.summaries[1]
    assert match.metrics()["summary_stats"]["fallback_rate"] == 0.0
    log = seat.turn_log[0]
    assert set(log) >= {"day", "phase", "prompt", "output", "steps", "action", "tokens"}
    assert log["steps"][-1]["kind"] == "action" and log["tokens"]["prompt"] > 0
    sent = provider.requests[-1]["body"]
    assert sent["response_format"]["type"] == "json_schema" and sent["model"] == "good"


async def test_rate_limits_are_retried_after_retry_after() -> None:
    async with fake_provider() as (provider, url):
        started = time.monotonic()
        match = await _play(url, "ratelimit", seats=2)
        took = time.monotonic() - started
    _game_went_on(match)
    errors = _errors(match)
    assert errors.get("rate_limit", 0) >= 2
    assert _sum(match, "abstained") == 0  # every 429 was retried in time
    assert took >= 0.2 * errors["rate_limit"] * 0.9  # Retry-After was waited out


async def test_server_errors_are_retried_and_counted() -> None:
    async with fake_provider() as (_, url):
        match = await _play(url, "flaky", seats=2)
    _game_went_on(match)
    assert _errors(match).get("server", 0) >= 2 and _sum(match, "abstained") == 0


async def test_an_outage_makes_the_seats_abstain_before_their_deadline() -> None:
    async with fake_provider() as (_, url):
        started = time.monotonic()
        match = await _play(url, "down", seats=2, days=2, turn_seconds=1.5)
        took = time.monotonic() - started
    _game_went_on(match)
    turns = _sum(match, "turns")
    assert _sum(match, "abstained") == turns and _errors(match).get("server", 0) >= turns
    assert _sum(match, "forced") == turns
    # seats ask together: each round of turns waits at most one deadline
    assert took < 1.6 * turns


async def test_slow_answers_time_out_and_the_seat_abstains() -> None:
    async with fake_provider(slow_seconds=3.0) as (_, url):
        match = await _play(url, "slow", seats=2, days=1, turn_seconds=1.0,
                            constraint="json_schema")
    assert match.result.game.day >= 1
    assert all(match.result.faults.get(s, 0) == 0 for s in match.seats)
    assert _errors(match).get("timeout", 0) >= _sum(match, "turns") > 0
    assert _sum(match, "abstained") == _sum(match, "turns")


async def test_truncated_json_is_a_fault_and_corrected() -> None:
    async with fake_provider() as (_, url):
        match = await _play(url, "truncated")
    _game_went_on(match)
    assert _sum(match, "truncated") >= 1 and _sum(match, "malformed") >= 1
    assert _sum(match, "forced") == 0  # the correction after the fault observation worked
    steps = [s for seat in match.seats.values() for t in seat.turn_log for s in t["steps"]]
    assert any(s["kind"] == "fault" and s["fault"] == "expression" for s in steps)


async def test_a_model_that_ignores_the_schema_waits_after_bounded_corrections() -> None:
    async with fake_provider() as (provider, url):
        match = await _play(url, "ignore-schema", seats=2)
    _game_went_on(match)
    turns = _sum(match, "turns")
    assert _sum(match, "forced") == turns  # every turn ended in the safe default
    assert _sum(match, "malformed") == 3 * turns  # max_corrections=2: three tries a turn
    assert set(_sum_actions(match)) == {"wait"}


def _sum_actions(match: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for seat in match.seats.values():
        for k, n in seat.seat_metrics().to_dict()["actions"].items():
            out[k] = out.get(k, 0) + n
    return out


async def test_refused_response_format_falls_back_to_tool_calls() -> None:
    async with fake_provider() as (provider, url):
        match = await _play(url, "no-rf")
    _game_went_on(match)
    backend = match.seats[1].backend
    assert backend.mode == "tools" and backend.probe_report["json_schema"].startswith(
        "rejected")
    assert _sum(match, "forced") == 0
    played = [r["body"] for r in provider.requests
              if r["body"].get("tools") and r["body"]["tools"][0]["function"]["name"] == "act"]
    assert played and all(b["tool_choice"]["function"]["name"] == "act" for b in played)
    assert _errors(match) == {}  # the probe's refusal is the probe's, not a seat's


async def test_no_constraints_at_all_falls_back_to_free_text() -> None:
    async with fake_provider() as (_, url):
        match = await _play(url, "no-constraints")
    _game_went_on(match)
    assert match.seats[1].backend.mode == "text"
    assert _sum(match, "malformed") == 0  # the fenced JSON was found in the prose


async def test_refusal_during_play_moves_the_entry_down_a_mode() -> None:
    async with fake_provider() as (_, url):
        # the entry claims json_schema (no probe); the server refuses it in play
        match = await _play(url, "no-rf", constraint="json_schema")
    _game_went_on(match)
    assert match.seats[1].backend.mode == "tools"
    assert _errors(match).get("rejected", 0) >= 1


async def test_an_action_on_a_dead_player_is_a_fault_and_never_reaches_the_engine() -> None:
    async with fake_provider() as (_, url):
        match = await _play(url, "dead-target", seats=4, days=3)
    _game_went_on(match)
    faults: dict[str, int] = {}
    for seat in match.seats.values():
        for k, n in seat.seat_metrics().to_dict()["faults"].items():
            faults[k] = faults.get(k, 0) + n
    assert faults.get("premise", 0) + faults.get("expression", 0) >= 1, faults
    assert _sum(match, "forced") == 0


async def test_unreachable_endpoint_counts_transport_errors() -> None:
    entry = ModelEntry(name="nowhere", backend="chat", model="m",
                       base_url="http://127.0.0.1:9/v1", turn_seconds=1.0)
    backend = ChatBackend(entry)
    errors: dict[str, int] = {}
    with pytest.raises(ChatError) as err:
        await backend.complete([{"role": "user", "content": "hi"}], mode="text",
                               deadline=time.monotonic() + 1.0, errors=errors)
    assert err.value.kind in ("transport", "timeout")
    assert errors.get("transport", 0) >= 1
    await backend.close()


async def test_rpm_spaces_requests() -> None:
    async with fake_provider() as (provider, url):
        entry = _entry(url, "good", rpm=120, constraint="text")  # one each 0.5 s
        seat = make_seat_for_entry(entry, 1, 1)
        backend = seat.backend  # type: ignore[union-attr]
        # four requests asked at once: the provider gets them one per 0.5 s
        await asyncio.gather(*(backend.complete([{"role": "user", "content": "hi"}],
                                                mode="text", deadline=time.monotonic() + 10)
                               for _ in range(4)))
        times = sorted(r["at"] for r in provider.requests)
        assert len(times) == 4
        # 1.5 s from the first to the last (less a margin for a loaded event
        # loop, which the provider shares: an arrival may be late a moment)
        assert times[-1] - times[0] >= 1.0
        await backend.close()


# ---- tossim play --model-entry -------------------------------------------------------------
def test_play_model_entry_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from tossim.cli import app

    runner = CliRunner()
    r = runner.invoke(app, ["play", "--model-entry", "scripted", "--players", "7", "--quiet",
                            "--json"])
    assert r.exit_code == 0, r.output
    assert '"result"' in r.output
    r = runner.invoke(app, ["play", "--model-entry", "gpt-9", "--quiet"])
    assert r.exit_code == 2 and "gpt-9" in r.output and "smollm2" in r.output
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    r = runner.invoke(app, ["play", "--models", str(ROOT / "models.example.toml"),
                            "--model-entry", "gpt-4o-mini", "--quiet"])
    assert r.exit_code == 2 and "OPENAI_API_KEY" in r.output


def test_a_step_cut_off_inside_its_text_is_closed_at_a_word() -> None:
    from tossim.agents.chat_seat import close_truncated

    p = close_truncated('{"thought": "Go.", "action": "speak", "args": {"text": "I trust Play')
    assert p is not None and p.name == "speak" and p.args == {"text": "I trust"}
    p = close_truncated('{"thought": "x", "action": "night", "args": {"targets": ["Player 2')
    assert p is not None and p.args == {"targets": ["Player 2"]}
    assert close_truncated('{"thought": "I suspect Pla') is None  # no action: still a fault


async def test_a_refused_key_is_counted_and_never_repeated(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    key = "sk-tossim-ECHOCHECK-55aa0c"
    monkeypatch.setenv("TOSSIM_TEST_ECHO_KEY", key)
    caplog.set_level("DEBUG")
    async with fake_provider() as (provider, url):
        match = await _play(url, "echo-key", seats=2, days=1, api_key_env="TOSSIM_TEST_ECHO_KEY")
        backend = ChatBackend(_entry(url, "echo-key", api_key_env="TOSSIM_TEST_ECHO_KEY"))
        with pytest.raises(ChatError) as err:
            await backend.complete([{"role": "user", "content": "hi"}], mode="text",
                                   deadline=time.monotonic() + 5)
        await backend.close()
    assert err.value.kind == "client" and "Incorrect API key provided: ***" in str(err.value)
    assert provider.requests[0]["headers"]["authorization"] == f"Bearer {key}"
    turns = _sum(match, "turns")
    assert _errors(match).get("client", 0) >= turns > 0 and _sum(match, "abstained") == turns
    seen = caplog.text + str(err.value) + repr([s.turn_log for s in match.seats.values()]) + repr(
        match.metrics())
    assert key not in seen


async def test_a_local_entry_seats_the_token_loop(tiny_model_dir: Path) -> None:
    """make_seat_for_entry builds an LLMSeat for local entries (the same seat
    the server and the arena use), with the entry's protocol."""
    pytest.importorskip("outlines_core")
    from tossim.agents.llm_seat import LLMSeat

    local = ModelEntry(name="tiny", backend="local", model=str(tiny_model_dir), protocol="json")
    match = await play_entry_match(GameConfig(players=7, seed=2), local, model_seats=(1,),
                                   turns={}, max_days=1)
    seat = match.seats[1]
    assert isinstance(seat, LLMSeat) and seat.loop.config.protocol == "json"
    assert seat.metrics.turns > 0 and match.result.faults[1] == 0


def test_a_keyed_completions_entry_sends_its_key(tiny_model_dir: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOSSIM_TEST_COMPLETIONS_KEY", "sk-completions-1")
    e = ModelEntry(name="fleet", backend="openai", base_url="http://127.0.0.1:9",
                   model=str(tiny_model_dir), api_key_env="TOSSIM_TEST_COMPLETIONS_KEY")
    seat = make_seat_for_entry(e, 1, 1)
    backend = seat.loop.backend  # type: ignore[union-attr]
    assert backend._client.headers["authorization"] == "Bearer sk-completions-1"
    assert make_seat_for_entry(e, 2, 1).loop.backend is backend  # type: ignore[union-attr]


async def test_a_chat_seat_reports_each_step_as_it_happens() -> None:
    """`on_step` (what the server streams to omniscient spectators) sees the
    turn's steps as they happen, the same steps its turn_log then keeps."""
    from tossim.agents.chat_seat import ChatSeat
    from tossim.engine import new_game
    from tossim.engine.view import Viewer, view
    from tossim.inference.chat_backend import ChatBackend

    async with fake_provider() as (_, url):
        seat = ChatSeat(1, ChatBackend(_entry(url, "good")), seed=3)
        seen: list[tuple[int, dict[str, Any]]] = []
        seat.on_step = lambda slot, step: seen.append((slot, step))
        game = new_game(GameConfig(players=7, seed=4))
        await seat.decide(view(game, Viewer.player(1)))
    assert seen and all(slot == 1 for slot, _ in seen)
    assert [step for _, step in seen] == seat.turn_log[0]["steps"]
    assert seen[-1][1]["kind"] == "action"
