"""What a returning player meets (issue "The client a Town of Salem player
expects"): replays that keep the game's moment across points of view and
spoil nothing until asked, a removed player who is told and can join again,
one "Play again" lobby for every player of a finished game, and a clear page
for a link to a game that does not exist.

The servers, browser and page fixtures are test_web.py's (a server of this
module's own).
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

import pytest

from .support import DESKTOP, PHONE, layout_problems
from .test_web import (
    Page,
    Server,
    browser,
    finished_game,
    game_id_from_hash,
    log_versions,
    open_page,
    page,
    quick_server,
    server,
    shots,
    tid,
    wait_finished,
)

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api")
# test_web's fixtures, imported so that pytest finds them here by name
FIXTURES = (browser, page, quick_server, server, shots)


def shoot(pg: Any, shots: Path, name: str) -> dict[str, list[str]]:
    """A screenshot of the page at a phone's and a desktop's size, and what
    `layout_problems` finds at each (the viewport is put back after)."""
    before = pg.viewport_size
    found = {}
    for label, size in (("390", PHONE), ("1440", DESKTOP)):
        pg.set_viewport_size(size)
        pg.wait_for_timeout(100)  # a relayout
        pg.screenshot(path=str(shots / f"{name}-{label}.png"), full_page=True)
        found[label] = layout_problems(pg, touch=label == "390")
    if before:
        pg.set_viewport_size(before)
    return found


def position(pg: Any) -> str:
    return str(pg.text_content(tid("rp-position")))


def roster_roles(pg: Any) -> int:
    return len(pg.query_selector_all(f"{tid('roster')} [data-testid^=role-]"))


# ---- replays ------------------------------------------------------------------------

def test_replay_keeps_the_moment_spoils_nothing_and_lists_the_players(
        page: Page, server: Server, shots: Path) -> None:
    gid = finished_game(server, "fast")
    omni = server.get(f"/api/games/{gid}/replay?viewer=omniscient")["events"]
    public = server.get(f"/api/games/{gid}/replay?viewer=public")["events"]
    pg = page.page
    # the home page's Replay link opens the public view
    pg.goto(server.base + "/#/")
    assert pg.get_attribute(tid(f"watch-{gid}"), "href").endswith(f"/{gid}?viewer=public")
    pg.click(tid(f"watch-{gid}"))
    pg.wait_for_url(f"**/#/watch/{gid}?viewer=public")
    pg.wait_for_selector(tid("rp-range"))
    # at the start: every player listed, nothing else (no event, no mark, no role)
    pg.wait_for_function("() => document.querySelectorAll('[data-testid=roster] > li')"
                         ".length === 7")
    assert "0/" in position(pg) and log_versions(pg) == []
    assert pg.query_selector_all(".rp-mark") == [] and roster_roles(pg) == 0

    # the omniscient view without spoilers: public events only, roles of the
    # living hidden, no mark of what has not happened yet
    pg.select_option(tid("viewer-select"), "omniscient")
    pg.wait_for_url(f"**/#/watch/{gid}?viewer=omniscient&at=0")
    pg.wait_for_selector(tid("rp-range"))
    pg.click(tid("rp-jump-day-2"))
    n = int(re.search(r"event (\d+)/", position(pg)).group(1))  # type: ignore[union-attr]
    shown = set(log_versions(pg))
    assert shown == {e["v"] for e in omni[:n] if e["audience"] == "public"}
    assert not [e for e in omni[:n] if e["v"] in shown and e["audience"] != "public"]
    dead = len(pg.query_selector_all(f"{tid('roster')} > li.dead"))
    assert roster_roles(pg) == dead < 7 and pg.is_hidden(tid("role-card"))
    reached = [e for e in omni[:n] if e["key"] in ("dawn.death", "lynch.death", "trial.start")]
    assert len(pg.query_selector_all(".rp-mark")) == len(reached)
    assert pg.query_selector(tid("rp-mark-end")) is None and pg.is_hidden(tid("game-result"))
    found = shoot(pg, shots, "h25-replay-no-spoilers")
    assert not any(found.values()), found
    # spoilers on: every role, the night's secrets, every mark
    pg.check(tid("rp-spoilers"))
    assert roster_roles(pg) == 7 and set(log_versions(pg)) == {e["v"] for e in omni[:n]}
    assert pg.query_selector(tid("rp-mark-end")) is not None

    # the last night, a few events in: the public view opens at the same night
    night = max(e["day"] for e in omni if e["phase"] == "night")
    pg.click(tid(f"rp-jump-night-{night}"))
    start = int(re.search(r"event (\d+)/", position(pg)).group(1))  # type: ignore[union-attr]
    end = max(i for i, e in enumerate(omni) if e["phase"] == "night" and e["day"] == night)
    for _ in range(min(4, end + 1 - start)):
        pg.click(tid("rp-forward"))
    n = int(re.search(r"event (\d+)/", position(pg)).group(1))  # type: ignore[union-attr]
    assert f"Night {night}" in position(pg)
    moment = sum(1 for e in omni[:n] if e["audience"] == "public")
    pg.select_option(tid("viewer-select"), "public")
    pg.wait_for_url(f"**/#/watch/{gid}?viewer=public&at={moment}&spoilers=1")
    pg.wait_for_function("(m) => (document.querySelector('[data-testid=rp-position]')"
                         "?.textContent || '').includes(`event ${m}/`)", arg=moment)
    assert f"Night {night}" in position(pg), position(pg)
    assert log_versions(pg) == [e["v"] for e in public[:moment]]
    assert pg.is_checked(tid("rp-spoilers"))  # the switch goes along
    page.check_clean()


# ---- a removed player ---------------------------------------------------------------

def test_a_removed_player_is_told_and_takes_a_free_seat_again(
        browser: Any, server: Server, shots: Path) -> None:
    host, host_ctx = open_page(browser, server.base)
    guest, guest_ctx = open_page(browser, server.base, 390, 844)
    try:
        hp, gp = host.page, guest.page
        hp.goto(server.base + "/#/")
        hp.fill(tid("player-name"), "Hana")
        hp.dispatch_event(tid("player-name"), "change")
        hp.wait_for_selector(tid("create-seat-7"))
        hp.select_option(tid("create-seat-2"), "human")
        hp.select_option(tid("create-speed"), "standard")
        hp.click(tid("create-submit"))
        hp.wait_for_selector(tid("lobby-seat-row-2"))
        lobby_id = game_id_from_hash(hp)

        gp.goto(f"{server.base}/#/lobby/{lobby_id}")
        gp.fill(tid("join-name"), "Gus")
        gp.click(tid("lobby-join"))
        gp.wait_for_selector(f"{tid('leave-seat')}:not([hidden])")
        # the guest's page follows its seat over a socket (closed 4401 when freed)
        hp.click(tid("kick-2"), timeout=10000)

        gp.wait_for_selector(f"{tid('removed-notice')}:not([hidden])")
        text = gp.text_content(tid("removed-notice"))
        assert "You were removed from this lobby" in text, text
        assert "Connecting" not in gp.text_content("body")
        assert gp.is_hidden(tid("leave-seat"))
        found = shoot(gp, shots, "h25-removed")
        assert not any(found.values()), found
        # a free seat is offered: take it again
        gp.click(tid("rejoin-2"))
        gp.wait_for_selector(f"{tid('leave-seat')}:not([hidden])")
        assert gp.is_hidden(tid("removed-notice"))
        assert "You are Gus, seat 2" in gp.text_content(tid("lobby-note"))
        seats = server.get(f"/api/lobbies/{lobby_id}")["seats"]
        assert (seats[1]["name"], seats[1]["claimed"]) == ("Gus", True)
        # the new claim plays: the host starts, the guest's page is the seat's
        hp.click(tid("start-game"))
        gp.wait_for_url(f"**/#/play/{lobby_id}")
        gp.wait_for_selector(f"{tid('role-card')}:not([hidden])")
        assert "you" in (gp.get_attribute(tid("roster-2"), "class") or "").split()
        host.check_clean()
        guest.check_clean()
    finally:
        host_ctx.close()
        guest_ctx.close()


# ---- play again, for everyone ---------------------------------------------------------

def start_two_humans(ap: Any, bp: Any, base: str, bob: str, roles: str | None = None) -> str:
    """Alice creates a quick 7-seat lobby with seat 2 human, Bob (`bob`)
    joins it, Alice starts it; both pages are on the game. The game's id."""
    for pg in (ap, bp):
        pg.set_default_timeout(30000)
    ap.goto(base + "/#/")
    ap.fill(tid("player-name"), "Alice")
    ap.dispatch_event(tid("player-name"), "change")
    ap.wait_for_selector(tid("create-seat-7"))
    if roles is not None:
        ap.select_option(tid("create-mode"), "custom")
        ap.fill(tid("create-custom-roles"), roles)
    ap.select_option(tid("create-seat-2"), "human")
    ap.select_option(tid("create-speed"), "quick")
    ap.click(tid("create-submit"))
    ap.wait_for_selector(tid("lobby-seat-row-2"))
    gid = game_id_from_hash(ap)
    bp.goto(f"{base}/#/lobby/{gid}")
    bp.fill(tid("join-name"), bob)
    bp.click(tid("lobby-join"))
    bp.wait_for_selector(f"{tid('leave-seat')}:not([hidden])")
    ap.wait_for_selector(tid("kick-2"))
    ap.click(tid("start-game"))
    for pg in (ap, bp):
        pg.wait_for_url(f"**/#/play/{gid}")
        pg.wait_for_selector(f"{tid('role-card')}:not([hidden])")
    return gid


def test_play_again_offers_every_player_the_same_lobby(
        browser: Any, quick_server: Server, shots: Path) -> None:
    """Two humans play a quick game to its end; one clicks "Play again" and
    the other's end screen offers that same lobby, which seats them both. The
    replay names the humans as they chose, from its first render."""
    base = quick_server.base
    alice, alice_ctx = open_page(browser, base)
    bob, bob_ctx = open_page(browser, base, 390, 844)
    try:
        ap, bp = alice.page, bob.page
        # (a deal where nobody dies on Night 1: Bob is alive on the day he speaks)
        gid = start_two_humans(ap, bp, base, "Bob the Baker", roles=QUIET_FIRST_NIGHT)
        # Bob says something in public on a day's talk; a quick Day 1 lasts
        # under two seconds, and a line sent as it ends is refused: he says
        # it again in the next day's discussion
        line = "Bob here: I am just a baker."
        for _ in range(3):
            bp.wait_for_function("() => { const s = window.tossim.state; return s && "
                                 "s.you && s.you.alive && "
                                 "(s.legal || []).some(a => a.kind === 'chat') && "
                                 "['day1', 'discussion'].includes(s.phase); }")
            bp.fill(tid("chat-input"), line)
            bp.click(tid("chat-send"))
            with contextlib.suppress(sync_api.TimeoutError):
                bp.wait_for_function(
                    """(text) => [...document.querySelectorAll(
                         '[data-testid=event-log] > li .text')]
                         .some(el => el.textContent === text)""", arg=line, timeout=10000)
                break
        else:
            raise AssertionError("Bob's line never reached the game")

        for pg in (ap, bp):
            pg.wait_for_selector(f"{tid('end-panel')}:not([hidden])", timeout=240000)
        wait_finished(quick_server, gid, 30)
        ap.click(tid("play-again"))
        ap.wait_for_function("(id) => location.hash.startsWith('#/lobby/') && "
                             "!location.hash.endsWith(id)", arg=gid)
        nxt = game_id_from_hash(ap)
        ap.wait_for_selector(tid("start-game"))  # the first to ask owns it
        # Bob's end screen offers the same lobby, without a reload
        bp.wait_for_selector(tid("next-lobby"))
        assert "opened the next one" in bp.text_content(tid("next-offer"))
        assert bp.query_selector(tid("play-again")) is None  # one way in: the same lobby
        found = shoot(bp, shots, "h25-play-again-offer")
        assert not any(found.values()), found
        bp.click(tid("next-lobby"))
        bp.wait_for_url(f"**/#/lobby/{nxt}")
        bp.wait_for_selector(f"{tid('leave-seat')}:not([hidden])")
        assert "seat 2" in bp.text_content(tid("lobby-note"))
        lobby = quick_server.get(f"/api/lobbies/{nxt}")
        assert [(s["name"], s["claimed"]) for s in lobby["seats"][:2]] == [
            ("Alice", True), ("Bob the Baker", True)]
        assert quick_server.get(f"/api/games/{gid}")["next_lobby"] == nxt
        assert len([g for g in quick_server.get("/api/lobbies")
                    if g["seats"][0]["name"] == "Alice"]) == 1

        # the replay: Bob's line under his chosen name, from the first render on
        public = quick_server.get(f"/api/games/{gid}/replay?viewer=public")["events"]
        said = next(e for e in public if e["key"] == "chat.public" and e["data"]["text"] == line)
        bp.goto(f"{base}/#/watch/{gid}?viewer=public&v={said['v']}")
        bp.wait_for_function("(v) => [...document.querySelectorAll("
                             "'[data-testid=event-log] > li')].some(li => li.dataset.v == v)",
                             arg=said["v"])
        author = bp.text_content(f"{tid('event-log')} > li[data-v='{said['v']}'] .author")
        assert author == "Bob the Baker", author
        assert "Bob the Baker" in bp.text_content(tid("roster-2"))
        bp.click(tid("rp-start"))
        assert "Alice" in bp.text_content(tid("roster-1"))  # names from the start
        alice.check_clean()
        bob.check_clean()
    finally:
        alice_ctx.close()
        bob_ctx.close()


# ---- a link to nothing --------------------------------------------------------------

def test_a_bad_watch_link_says_so_and_leads_home(page: Page, server: Server,
                                                 shots: Path) -> None:
    pg = page.page
    for path, title in (("/#/watch/no-such-game?viewer=public", "No such game"),
                        ("/#/lobby/no-such-lobby", "No such lobby")):
        pg.goto(server.base + path)
        pg.wait_for_selector(tid("not-found"))
        assert title in pg.text_content(tid("not-found"))
        body = pg.text_content("body")
        assert "Connecting" not in body and pg.query_selector(tid("watch-page")) is None
        assert pg.query_selector(tid("lobby-page")) is None
        if "watch" in path:
            found = shoot(pg, shots, "h25-not-found")
            assert not any(found.values()), found
    pg.click(tid("not-found-home"))
    pg.wait_for_selector(tid("home"))
    # the 404 answers behind the message are the browser's console noise, not the page's
    page.errors = [e for e in page.errors if "status of 404" not in e]
    page.check_clean()


# ---- stand-ins for an absent player ------------------------------------------------------

# nobody can die on Night 1 with this list (the Jailor and Vigilante start on
# Night 2, the Werewolf on a full moon), so the absent player is alive for
# their stand-in
QUIET_FIRST_NIGHT = "Jailor, Vigilante, Doctor, Sheriff, Investigator, Lookout, Werewolf"


def test_an_absent_player_is_stood_in_for_and_told_on_return(
        browser: Any, quick_server: Server, shots: Path) -> None:
    base = quick_server.base
    alice, alice_ctx = open_page(browser, base)
    bob, bob_ctx = open_page(browser, base, 390, 844)
    try:
        ap, bp = alice.page, bob.page
        gid = start_two_humans(ap, bp, base, "Bob", roles=QUIET_FIRST_NIGHT)
        # Bob closes the game (his only socket) and stays away a whole phase
        bp.goto(base + "/#/")
        ap.wait_for_selector(tid("standin-2"), timeout=60000)
        assert ap.text_content(tid("standin-2")) == "(stand-in)"
        assert ap.query_selector(tid("standin-1")) is None
        found = shoot(ap, shots, "h25-standin-label")
        assert not any(found.values()), found
        # he comes back: his seat again at once, and he is told what happened
        bp.goto(f"{base}/#/play/{gid}")
        bp.wait_for_selector(f"{tid('standin-report')}:not([hidden])")
        report = bp.text_content(tid("standin-report"))
        assert "a stand-in (a scripted bot) played your seat from Day 2" in report, report
        ap.wait_for_selector(tid("standin-2"), state="detached")
        assert bp.query_selector(tid("standin-2")) is None
        found = shoot(bp, shots, "h25-standin-report")
        assert not any(found.values()), found
        bp.click(tid("standin-report-close"))
        assert bp.is_hidden(tid("standin-report"))
        alice.check_clean()
        bob.check_clean()
    finally:
        alice_ctx.close()
        bob_ctx.close()
