"""A person's journey with the bundled model: a human lobby (a freshly
generated deal secret, so the server's real fair-deal seeds) with SmolLM2 in
two seats, played in short timed phases from Day 1 to Day 3 while the human
seat idles. No seat fails, each model seat takes its turns, every phase ends on time
whatever the model is doing (its turns have deadlines:
docs/agents.md#deadlines), and no day's summary is empty. Slow: minutes on
two CPU cores."""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tossim.agents import claims as cv
from tossim.agents.moves import DEFEND_WORDINGS, VOTE_PLAN_WORDINGS
from tossim.agents.turn_records import abstention
from tossim.inference.registry import unavailable_reason

from .support import Server, ServerFactory, create_game, owner

if os.environ.get("CI") != "true" and unavailable_reason("local") is not None:
    pytest.skip(f"bundled model: {unavailable_reason('local')}", allow_module_level=True)

pytestmark = [pytest.mark.model, pytest.mark.slow]

HUMAN, MODELS = 1, (2, 3)
ON_TIME_S = 2.0  # a phase ends within this of its deadline


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the model is the point
async def test_bundled_model_seats_play_three_days_of_a_human_lobby_on_time(
        server_factory: ServerFactory, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    # phases at 0.4 of their length: Day 1 6 s, discussions 18 s, nights 14.8 s
    server = await server_factory(time_scale=0.4, secret_file=str(tmp_path / "secret"),
                                  preload_models=True)  # as `tossim serve`
    seats = [{"slot": s, "kind": "ai", "backend": "local"} for s in MODELS]
    game_id, token = await lobby_game(server, seats)
    row = await server.store.get_game(game_id)
    assert row.config["seed"] >= 2**31  # an HMAC deal: far beyond what a sampler takes

    phases: list[tuple[int, str, float, float]] = []  # day, phase, deadline, ended at
    current: dict[str, Any] | None = None
    async with server.seat_connect(game_id, token) as ws:
        while True:
            msg = await ws.recv(timeout=300)
            state = msg.get("state") if msg["type"] == "events" else None
            if not state:
                continue
            if current is not None and state["phase_seq"] != current["phase_seq"]:
                phases.append((current["day"], current["phase"], current["deadline"],
                               time.time()))
            if current is None or state["phase_seq"] != current["phase_seq"]:
                current = dict(state)
            current["deadline"] = state["deadline"] or current.get("deadline")
            if (state["day"] == 3 and state["phase"] != "discussion") or state["result"]:
                break
        events = ws.events()

    # every phase ended on time (or early: a trial cuts Voting short),
    # whatever the model seats were doing
    assert len(phases) >= 6, phases
    late = [(d, p, round(end - deadline, 2)) for d, p, deadline, end in phases
            if deadline is None or end - deadline > ON_TIME_S]
    assert not late, late
    # no seat failed (a turn that ran out of time abstains and is counted as a
    # miss, docs/agents.md#deadlines: on a slow machine some will, and the
    # game goes on on time all the same)
    problems = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert not problems, problems
    misses = [r.getMessage() for r in caplog.records if "did not answer" in r.getMessage()]
    print(f"{len(misses)} model turns abstained on time")
    # each model seat took turns, and each turn ended in what the seat chose
    # (an action, or a wait: a seat killed on Night 1 whose role has no first
    # night may only ever choose to wait); every action it chose was applied as
    # a command of that seat's; what they said is printed
    said = [(e["data"]["author"], e["data"]["text"]) for e in events
            if e["key"] == "chat.public" and e["data"]["author"] in MODELS]
    print(f"model seats' public lines: {said}")
    # and they play as they speak: a vote goes to the player the seat said it
    # would vote for, never to one it spoke up for that day, and a role is
    # claimed once a day (seen in lobbies: a plan for Player 4 and a vote for
    # Player 5; "Time to claim. I am the Doctor." twice on one day)
    assert not broken_words(events), broken_words(events)
    origins = {origin for _, origin, _ in await server.store.commands(game_id)}
    for slot in MODELS:
        turns = await server.store.turns(game_id, slot)
        actions = [t.get("action") for t in turns]
        print(f"seat {slot}: {len(turns)} turns, actions {actions}")
        assert turns, f"model seat {slot} took no turn"
        assert all(abstention(t) != "error" for t in turns), turns
        # (an action decided after its deadline is dropped: the turn says
        # missed; a line that no longer held is withdrawn: a "stale" step)
        if any(a not in (None, "wait") and not (t.get("time") or {}).get("missed")
               and not any(s.get("fault") == "stale" for s in t.get("steps") or ())
               for t, a in zip(turns, actions, strict=True)):
            assert f"ai:{slot}" in origins, (slot, actions, origins)
    assert origins & {f"ai:{s}" for s in MODELS}, origins
    # the days that ended have a summary with words in it
    summary = (await server.client.get(f"/api/games/{game_id}")).json()
    texts = {s["day"]: s["text"] for s in summary["summaries"]}
    assert {1, 2} <= set(texts), texts
    assert all(len(t.split()) >= 3 for t in texts.values()), texts


def broken_words(events: list[dict[str, Any]]) -> list[str]:
    """What the model seats did against their own public words, in order:
    a vote for another player than the plan (or call to vote) the seat said
    that day, a call to vote another player than the one it voted against
    that day, a vote for a player it defended that day, a defence of a
    player it voted against or called to vote that day (seen in the demo:
    "Leave Player 12 alone: they claimed Bodyguard." right after its vote
    against Player 12), a guilty verdict on a player it defended in that
    trial, and a role claimed twice in one day."""
    names = {1: "Alice", **{s: f"Player {s}" for s in range(2, 8)}}
    slot_of = {n: s for s, n in names.items()}
    who = "(?P<who>" + "|".join(re.escape(n) for n in names.values()) + ")"

    def pattern(wording: str) -> re.Pattern[str]:
        rx = re.escape(wording)
        for field in ("name", "who"):
            rx = rx.replace(re.escape("{" + field + "}"), who)
        return re.compile(rx.replace(re.escape("{why}"), ".*").replace(re.escape("{Why}"), ".*"))

    plans = [pattern(w) for w in (*VOTE_PLAN_WORDINGS, cv.say_accuse("{name}"))]
    defences = [pattern(w) for w in DEFEND_WORDINGS]
    vocab = cv.vocabulary(tuple(names[s] for s in sorted(names)))
    plan: dict[tuple[int, int], int] = {}
    trusted: dict[tuple[int, int], set[int]] = {}
    claimed: dict[tuple[int, int], int] = {}
    voted: dict[tuple[int, int], int] = {}
    accused: int | None = None  # the player on trial now
    spoke_for: dict[int, set[int]] = {}  # this trial: seat -> players it defended
    out = []
    for e in events:
        d, key = e["data"], (e["data"].get("author") or e["data"].get("voter"), e["day"])
        if e["key"] == "trial.start":
            accused, spoke_for = d["accused"], {}
        elif e["key"] == "chat.public" and key[0] in MODELS:
            text = d["text"]
            for rx in plans:
                if (m := rx.search(text)):
                    plan[key] = slot_of[m["who"]]
                    if key in voted and plan[key] != voted[key]:
                        out.append(f"Player {key[0]} voted {names[voted[key]]} and then "
                                   f"called to vote {m['who']} on Day {key[1]}: {text!r}")
            for rx in defences:
                if (m := rx.search(text)):
                    trusted.setdefault(key, set()).add(slot_of[m["who"]])
                    if slot_of[m["who"]] in (voted.get(key), plan.get(key)):
                        out.append(f"Player {key[0]} voted or called to vote {m['who']} "
                                   f"and then spoke up for them on Day {key[1]}: {text!r}")
                    if e["phase"] == "judgement":
                        spoke_for.setdefault(key[0], set()).add(slot_of[m["who"]])
            claims = sum(c.kind == cv.ROLE for c in vocab.parse(text))
            claimed[key] = claimed.get(key, 0) + claims
            if claims and claimed[key] > 1:
                out.append(f"Player {key[0]} claimed again on Day {key[1]}: {text!r}")
        elif e["key"] == "judge.vote" and key[0] in MODELS and d["verdict"] == "guilty" \
                and accused is not None and accused in spoke_for.get(key[0], ()):
            out.append(f"Player {key[0]} defended {names[accused]} in their trial "
                       f"and voted guilty on Day {key[1]}")
        elif e["key"] == "vote.cast" and key[0] in MODELS:
            voted[key] = d["target"]
            if key in plan and d["target"] != plan[key]:
                out.append(f"Player {key[0]} said it would vote {names[plan[key]]} "
                           f"and voted {names[d['target']]} on Day {key[1]}")
            if d["target"] in trusted.get(key, ()):
                out.append(f"Player {key[0]} defended {names[d['target']]} "
                           f"and voted them on Day {key[1]}")
    return out


async def lobby_game(server: Server, seats: list[dict[str, Any]]) -> tuple[str, str]:
    """A started 7-player standard lobby: the human seat joined, `seats` AI."""
    c = server.client
    game_id = await create_game(c, start=False, players=7,
                                seats=[{"slot": HUMAN, "kind": "human"}, *seats])
    r = await c.post(f"/api/lobbies/{game_id}/join", json={"name": "Alice", "slot": HUMAN})
    assert r.status_code == 200, r.text
    r2 = await c.post(f"/api/lobbies/{game_id}/start", headers=owner(game_id))
    assert r2.status_code == 200, r2.text
    return game_id, str(r.json()["token"])
