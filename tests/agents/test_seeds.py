"""Sampling seeds stay in the range every sampler accepts, whatever the
game's seed: a human lobby's fair deal is an HMAC near 2**63, and every model
turn used to crash on it (torch: "Overflow when unpacking long long")."""

from __future__ import annotations

import asyncio
import secrets

import pytest

from tossim.agents.llm_seat import seat_from_spec
from tossim.engine.view import Viewer, view
from tossim.inference.base import GenerationRequest
from tossim.inference.seeds import MAX_SEED, derive_seed
from tossim.server.service import fair_seed

from .fake_backend import ScriptedBackend
from .support import day3_investigator


def test_a_fair_deal_seed_gives_bounded_request_seeds() -> None:
    seed = fair_seed(secrets.token_bytes(32), secrets.token_hex(16), None)
    assert seed > MAX_SEED  # the real thing: far past what a sampler takes
    backend = ScriptedBackend(["<thinking>Player 4 lies.</thinking>", "<vote>Player 4</vote>"] * 2)
    seat = seat_from_spec({}, 7, seed, backend, game_id="g1")
    obs = view(day3_investigator().game, Viewer.player(7))
    for _ in range(2):
        assert asyncio.run(seat.decide(obs))
    seeds = [r.seed for r in backend.requests]
    assert len(seeds) == 4 and all(s is not None and 0 <= s <= MAX_SEED for s in seeds)
    assert len(set(seeds)) == 4  # every request its own stream


def test_the_same_place_gives_the_same_seed_and_neighbours_differ() -> None:
    big = 2**63 - 1
    assert derive_seed(big, 3, 1, 2) == derive_seed(big, 3, 1, 2)
    near = {derive_seed(big, seat, turn, step)
            for seat in range(4) for turn in range(4) for step in range(4)}
    assert len(near) == 64 and max(near) <= MAX_SEED


def test_a_request_refuses_a_seed_no_sampler_takes() -> None:
    with pytest.raises(ValueError, match="derive_seed"):
        GenerationRequest(prompt_ids=(1,), max_tokens=4, seed=2**40)
    with pytest.raises(ValueError):
        GenerationRequest(prompt_ids=(1,), max_tokens=4, seed=-1)
