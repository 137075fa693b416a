"""The demo with the bundled model, as a visitor meets it: the omniscient
watch page of `tossim serve --demo` whose model seats are SmolLM2 on
llama.cpp. Each model seat says a public line and its thinking shows; every
line, will, death note and day summary the page shows from a model seat
passes the text guard (docs/agents.md, "The text guard"). Slow: minutes on
two CPU cores."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tossim.agents.guard import degenerate
from tossim.inference.registry import unavailable_reason

from .support import CHROMIUM, CHROMIUM_ARGS
from .test_web import Server, _serve, demo_game_id, tid

if os.environ.get("CI") != "true" and unavailable_reason("local") is not None:
    pytest.skip(f"bundled model: {unavailable_reason('local')}", allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.model, pytest.mark.slow]
sync_api = pytest.importorskip("playwright.sync_api")

SPOKE_WITHIN_S = 600  # the "within 10 minutes": every model seat has spoken


@pytest.fixture(scope="module")
def model_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _serve(tmp_path_factory, time_scale="1", demo=True, demo_backend="local")


def model_slots(server: Server, gid: str) -> list[int]:
    game = server.get(f"/api/games/{gid}")
    return [s["slot"] for s in game["seats"] if s.get("backend") == "local"]


def test_demo_model_seats_speak_think_and_never_show_garbage(model_demo: Server) -> None:
    gid = demo_game_id(model_demo)
    models = model_slots(model_demo, gid)
    assert len(models) == 4, models
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            pg = browser.new_page(viewport={"width": 1400, "height": 900})
            pg.goto(f"{model_demo.base}/#/watch/{gid}?viewer=omniscient")
            pg.wait_for_selector(f"{tid('event-log')} > li")
            # every model seat has said something in public (a move rendered
            # as a sentence or free text): its name opens a line of the log.
            # The demo's deal is random: a seat the Mafia killed on Night 1
            # had only Day 1 to speak, and is excused if it is in the
            # graveyard as dead on Night 1 without a line
            started = time.monotonic()
            pg.wait_for_function(
                """(slots) => {
                     const lines = [...document.querySelectorAll('[data-testid=event-log] > li')]
                       .map((li) => li.textContent);
                     const spoke = (s) => lines.some((t) => t.startsWith(`Player ${s}:`));
                     const nightOne = (s) => /^Night 1\b/.test(document.querySelector(
                       `[data-testid=grave-${s}] .grave-meta`)?.textContent || '');
                     return slots.every((s) => spoke(s) || nightOne(s));
                   }""",
                arg=models, timeout=SPOKE_WITHIN_S * 1000)
            print(f"every model seat spoke within {time.monotonic() - started:.0f} s")
            # a model seat's thinking is shown to this omniscient viewer
            pg.wait_for_selector(f"{tid('thinking')}:not([hidden])", timeout=120_000)
            assert any(pg.query_selector(tid(f"thinking-{s}")) for s in models)
            # Day 1's summary (the extractive one: the small model writes none)
            pg.wait_for_selector(f"{tid('day-summaries')} > li", timeout=SPOKE_WITHIN_S * 1000)
            texts = page_texts(pg, models)
        finally:
            browser.close()
    names = [f"Player {n}" for n in range(1, 16)]
    speakers = texts.pop("speakers")
    assert texts["lines"] and texts["summaries"], texts
    assert len(speakers) >= 2, speakers  # Night 1 kills two players at most
    bad = [(where, text, reason) for where, items in texts.items() for text in items
           if (reason := degenerate(text, player_names=names)) is not None]
    assert not bad, bad


def page_texts(pg: Any, models: list[int]) -> dict[str, list[str]]:
    """What the page shows from model seats: their public lines (author
    prefix removed), the wills and death notes in the graveyard of model
    seats, and every day summary."""
    lines, speakers = [], set()
    prefixes = tuple(f"Player {s}: " for s in models)
    for text in pg.eval_on_selector_all(f"{tid('event-log')} > li",
                                        "els => els.map(e => e.textContent)"):
        if text.startswith(prefixes):
            who, line = text.split(": ", 1)
            lines.append(line)
            speakers.add(who)
    graves = pg.eval_on_selector_all(f"{tid('graveyard')} > li",
                                     "els => els.map(e => e.textContent)")
    model_graves = [g for g in graves
                    if re.match(rf"^\s*Player ({'|'.join(map(str, models))})\b", g)]
    summaries = pg.eval_on_selector_all(f"{tid('day-summaries')} > li",
                                        "els => els.map(e => e.textContent)")
    # an extractive summary quotes the day's lines (two players may say the
    # same): each quoted line is checked as the line it is
    quoted = []
    for text in summaries:
        text = re.sub(r"^Day \d+:\s*", "", text)
        parts = re.findall(r'Player \d+: "([^"]*)"', text)
        quoted += parts or [text]
    return {"lines": lines, "graves": model_graves, "summaries": quoted,
            "speakers": sorted(speakers)}
