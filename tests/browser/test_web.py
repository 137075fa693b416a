"""The browser client (web/) against the real server, in headless Chromium.

The server runs in a subprocess (`tossim serve --demo`) on a free loopback
port with a throwaway SQLite file. Chromium is Debian's /usr/bin/chromium,
driven by Playwright's Python package (no `playwright install`). Run with
`pytest -m browser tests/browser`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .support import (
    CHROMIUM,
    CHROMIUM_ARGS,
    DESKTOP,
    PHONE,
    REPO,
    free_port,
    get_json,
    layout_problems,
    sync_api,
    write_store,
)

pytestmark = pytest.mark.browser

SCREENSHOT = Path("/tmp/tossim-watch.png")
XSS_CHAT = "<b>bold</b><script>alert(1)</script>"
XSS_IMG = '<img src=x onerror="window.__xss = 1">'
XSS_SUMMARY = "Day recap <img src=x onerror=alert(1)> <script>window.__xss = 1</script>"


# ---- the server --------------------------------------------------------------------

def _tossim_command() -> list[str]:
    for candidate in (Path(sys.executable).parent / "tossim", REPO / ".venv" / "bin" / "tossim"):
        if candidate.exists():
            return [str(candidate)]
    found = shutil.which("tossim")
    if found:
        return [found]
    return [sys.executable, "-m", "tossim.cli"]


class Server:
    def __init__(self, base: str, proc: subprocess.Popen[bytes], log: Path, db: str) -> None:
        self.base, self.proc, self.log, self.db = base, proc, log, db

    def get(self, path: str) -> Any:
        return get_json(self.base, path)

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # Standard-speed (human) games run on real timers; stretch them so a slow
    # machine still acts within Day 1 (15 s x 4). The demo is paced, not timed.
    yield from _serve(tmp_path_factory, time_scale="4", demo=True)


@pytest.fixture(scope="module")
def quick_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server whose timed games are short enough to play one to the end in a
    test (quick speed halves them again), with no demo using the CPU."""
    yield from _serve(tmp_path_factory, time_scale="0.25", demo=False)


def _serve(tmp_path_factory: pytest.TempPathFactory, *, time_scale: str,
           demo: bool, demo_backend: str = "scripted") -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("tossim-web")
    port = free_port()
    log = tmp / "server.log"
    env = dict(os.environ)
    env["TOSSIM_TIME_SCALE"] = time_scale
    # the demo's seats here are scripted bots, so the page tests see a game that
    # moves; the bundled-model demo: test_bundled_demo.py
    env["TOSSIM_DEMO_BACKEND"] = demo_backend
    env.pop("TOSSIM_SPECTATOR_DELAY", None)
    env["TOSSIM_LOBBY_RATE_LIMIT"] = "100000"  # the pages make many lobbies from one address
    db = f"sqlite+aiosqlite:///{tmp}/t.db"
    cmd = [*_tossim_command(), "serve", "--host", "127.0.0.1", "--port", str(port),
           "--db", db, *(["--demo"] if demo else [])]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env)
    base = f"http://127.0.0.1:{port}"
    srv = Server(base, proc, log, db)
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            pytest.fail(f"tossim serve exited with {proc.returncode}:\n{srv.log_tail()}")
        try:
            if srv.get("/api/health").get("status") == "ok":
                break
        except (urllib.error.URLError, OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"tossim serve did not answer /api/health:\n{srv.log_tail()}")
        time.sleep(0.2)
    yield srv
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def _post(base: str, path: str, body: dict[str, Any] | None = None,
          owner_token: str | None = None) -> Any:
    headers = {"Content-Type": "application/json"}
    if owner_token:
        headers["Authorization"] = f"Bearer {owner_token}"
    req = urllib.request.Request(base + path, data=json.dumps(body or {}).encode(),
                                 headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def new_ai_game(server: Server, players: int = 15, speed: str = "paced") -> str:
    """A fresh all-AI game of our own (the demo may end at any moment)."""
    lobby = _post(server.base, "/api/lobbies", {"players": players, "speed": speed})
    _post(server.base, f"/api/lobbies/{lobby['id']}/start", owner_token=lobby["owner_token"])
    return str(lobby["id"])


def finished_game(server: Server, speed: str = "fast", players: int = 7,
                  timeout: float = 90) -> str:
    """A fresh all-AI game of our own, played to the end."""
    gid = new_ai_game(server, players, speed)
    wait_finished(server, gid, timeout)
    return gid


def role_at(events: list[dict[str, Any]], slot: int, v: int) -> str:
    """The role a seat knew it had at version `v`, from its own events: the
    dealt role, or the last change up to then (a Mafia promotion, a Vampire
    Hunter turned Vigilante, an Executioner turned Jester). A Framer promoted
    on Night 3 is still a Framer on Day 2 (a CI run's deal: 'Framer' shown,
    the end's 'Mafioso' expected)."""
    role = ""
    for e in events:
        if e["v"] > v:
            break
        if e["key"] in ("game.role", "role.changed") or (
                e["key"] == "night.promoted" and e["data"]["player"] == slot):
            role = e["data"]["role"]
        elif e["key"] == "night.became_jester":
            role = "Jester"
    return role


def wait_finished(server: Server, gid: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        game = server.get(f"/api/games/{gid}")
        if game["status"] == "finished":
            assert isinstance(game, dict)
            return game
        time.sleep(0.3)
    pytest.fail(f"game {gid} did not finish in {timeout} s:\n{server.log_tail()}")


def add_summary(server: Server, game_id: str, day: int, text: str) -> None:
    """Write a summary row straight into the server's store, as the runner would."""
    write_store(server.db, lambda store: store.add_summary(game_id, day, text))


def add_turn(server: Server, game_id: str, slot: int, turn: dict[str, Any]) -> None:
    """Store a model seat's finished turn (Day 1), as the runner would: the
    browser tests' seats are scripted, so the server stores none itself."""
    write_store(server.db, lambda store: store.add_turn(game_id, slot, 1, 1, "day1", turn))


def demo_game_id(server: Server, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for g in server.get("/api/games?status=live"):
            if g.get("demo"):
                return str(g["id"])
        time.sleep(0.3)
    pytest.fail(f"no live demo game:\n{server.log_tail()}")


# ---- the browser ----------------------------------------------------------------------

def synthetic(pg: Any) -> tuple[Callable[..., None], Callable[[], list[dict[str, Any]]]]:
    """On the synthetic page: `show(phase, *legal, seq=5)` puts a state with
    these legal actions (and phase number) on it; `commands()` takes the
    commands the page sent since."""

    def show(phase: str, *legal: dict[str, Any], seq: int = 5) -> None:
        pg.evaluate(SYNTHETIC, {"phase": phase, "legal": list(legal), "seq": seq})

    def commands() -> list[dict[str, Any]]:
        out = pg.evaluate("window.__commands.splice(0)")
        assert isinstance(out, list)
        return out

    return show, commands


@pytest.mark.browser
def test_an_error_is_cleared_when_its_phase_ends(page: Page, server: Server) -> None:
    """Seen on a phone: "Choose a player first." from a night's Confirm still
    showed in the next day's discussion. An error stays for its phase and
    goes with it."""
    pg = page.page
    pg.goto(f"{server.base}/")
    show, commands = synthetic(pg)
    show("night", _legal("night", [2, 3], 1, "jail"), seq=7)
    pg.click(tid("night-submit"))
    assert "Choose a player first." in pg.text_content(tid("error"))
    show("night", _legal("night", [2, 3], 1, "jail"), seq=7)  # the same night goes on
    assert pg.is_visible(tid("error"))
    show("discussion", _legal("chat", options=["public"]), seq=8)
    assert pg.is_hidden(tid("error")) and commands() == []
    page.check_clean()


@pytest.mark.browser
def test_unsent_mafia_line_never_goes_to_everyone(page: Page, server: Server) -> None:
    """Text given back after an error, or typed and not sent, keeps the
    channel it was written for: kept while that channel is open, dropped once
    the composer offers others (the next day's "Everyone"), so Enter never
    posts a Mafia line publicly. (A synthetic state: no game needed.)"""
    pg = page.page
    pg.goto(server.base + "/#/synthetic")
    pg.wait_for_selector(tid("home"))
    line = "Framer: killing 4 (the Invest). Frame 7 please."

    show, commands = synthetic(pg)

    def refused() -> None:
        pg.evaluate("window.__view.serverError({type: 'error', version: 1, "
                    "error: 'too many chat messages from this seat'})")

    night = ("night", _legal("chat", options=["mafia"]))
    day = ("discussion", _legal("chat", options=["public"]))
    # sent at night, refused: the text comes back, still for the Mafia
    show(*night)
    pg.fill(tid("chat-input"), line)
    pg.press(tid("chat-input"), "Enter")
    assert commands() == [{"type": "chat", "text": line, "channel": "mafia"}]
    refused()
    assert pg.input_value(tid("chat-input")) == line
    show(*night)  # the same night goes on: kept
    assert pg.input_value(tid("chat-input")) == line
    # morning: the only channel is Everyone; the line is dropped, with a note
    show(*day)
    assert pg.input_value(tid("chat-input")) == ""
    assert "unsent message to Mafia chat was dropped" in pg.text_content(tid("error"))
    pg.press(tid("chat-input"), "Enter")
    assert commands() == []

    # an error that comes back after the morning drops it at once
    show(*night)
    pg.fill(tid("chat-input"), line)
    pg.press(tid("chat-input"), "Enter")
    assert commands() == [{"type": "chat", "text": line, "channel": "mafia"}]
    show(*day)
    refused()
    assert pg.input_value(tid("chat-input")) == ""
    pg.press(tid("chat-input"), "Enter")
    assert commands() == []

    # typed at night and never sent: the same
    show("night", _legal("chat", options=["mafia", "dead"]))
    pg.select_option(tid("chat-to"), "c:mafia")
    pg.fill(tid("chat-input"), line)
    show(*day)
    assert pg.input_value(tid("chat-input")) == ""
    # a line for Everyone that the server refused comes back for Everyone
    pg.fill(tid("chat-input"), "hello town")
    pg.press(tid("chat-input"), "Enter")
    refused()
    assert pg.input_value(tid("chat-input")) == "hello town"
    pg.press(tid("chat-input"), "Enter")
    assert commands() == [{"type": "chat", "text": "hello town", "channel": "public"}] * 2
    page.check_clean()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Page:
    """A page plus what went wrong on it: JS errors, console errors, dialogs
    (an `alert` would mean injected script ran), requests off the server."""

    def __init__(self, page: Any, base: str) -> None:
        self.page = page
        self.base = base
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.foreign: list[str] = []
        self.requests: list[str] = []
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        page.on("console", self._console)
        page.on("dialog", self._dialog)
        page.on("request", self._request)

    def _console(self, message: Any) -> None:
        if message.type != "error":
            return
        self.errors.append(f"console: {message.text}")

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _request(self, request: Any) -> None:
        url = request.url
        self.requests.append(url)
        host = self.base.split("://", 1)[1]
        if not (url.startswith(("data:", "blob:")) or f"://{host}" in url):
            self.foreign.append(url)

    def check_clean(self) -> None:
        assert not self.dialogs, f"a dialog opened (script ran): {self.dialogs}"
        assert not self.foreign, f"requests left the server: {self.foreign}"
        assert not self.errors, "\n".join(self.errors)


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    # Record the websockets the client opens and what they send and receive.
    context.add_init_script("""
      window.__sockets = [];
      const Native = window.WebSocket;
      window.WebSocket = class extends Native {
        constructor(url, protocols) {
          super(url, protocols);
          const rec = {url: String(url), sent: [], received: []};
          window.__sockets.push(rec);
          this.addEventListener('message', (e) => rec.received.push(String(e.data)));
          const send = this.send.bind(this);
          this.send = (data) => { rec.sent.push(String(data)); return send(data); };
        }
      };
    """)
    p = Page(context.new_page(), server.base)
    p.page.set_default_timeout(20000)
    yield p
    context.close()


def tid(name: str) -> str:
    return f'[data-testid="{name}"]'


def log_versions(pg: Any) -> list[int]:
    return [int(v) for v in pg.eval_on_selector_all(
        f'{tid("event-log")} > li', "els => els.map(e => e.dataset.v)")]


def fill_new_lobby(pg: Any, name: str) -> None:
    """On the home page: create a 7-player standard lobby whose one human
    seat (seat 1, the form's default) is claimed as `name`; return on the
    lobby page."""
    pg.fill(tid("player-name"), name)
    pg.dispatch_event(tid("player-name"), "change")
    pg.wait_for_selector(tid("create-seat-7"))
    pg.fill(tid("create-players"), "7")
    pg.select_option(tid("create-speed"), "standard")
    pg.click(tid("create-submit"))
    pg.wait_for_selector(tid("lobby-seat-row-1"))


def create_and_start(p: Page, name: str) -> None:
    """Home page: create a 7-player standard lobby with one human seat (seat 1,
    the form's default), which claims it as `name`; start it from the lobby
    page; return on Day 1."""
    pg = p.page
    pg.goto(p.base + "/#/")
    fill_new_lobby(pg, name)
    assert "seat 1" in pg.text_content(tid("lobby-note"))
    pg.click(tid("start-game"))
    pg.wait_for_selector(f"{tid('role-card')}:not([hidden])")
    pg.wait_for_function(
        "() => document.querySelector('[data-testid=phase]').dataset.phase === 'day1'")


# ---- tests -------------------------------------------------------------------------

@pytest.mark.browser
def test_demo_listed_and_watch_page_is_live(page: Page, server: Server) -> None:
    gid = demo_game_id(server)
    pg = page.page
    pg.goto(server.base + "/")
    card = pg.wait_for_selector(tid(f"game-{gid}"))
    assert "paced" in card.text_content()
    pg.click(tid(f"watch-{gid}"))
    pg.wait_for_url(f"**/#/watch/{gid}?viewer=public")
    pg.wait_for_selector(f"{tid('event-log')} > li")
    assert len(pg.query_selector_all(f"{tid('roster')} > li")) == 15
    assert pg.text_content(tid("connection")).endswith("Live")
    first_phase = pg.text_content(tid("phase"))
    first_count = len(log_versions(pg))
    # Events keep arriving and the header follows the phases.
    pg.wait_for_function(
        """([phase, count]) => document.querySelector('[data-testid=phase]').textContent !== phase
             && document.querySelectorAll('[data-testid=event-log] > li').length > count""",
        arg=[first_phase, first_count], timeout=90000)
    versions = log_versions(pg)
    assert versions == sorted(set(versions)), "events out of order or duplicated"
    page.check_clean()


@pytest.mark.browser
def test_play_a_seat_role_will_and_chat_is_text(page: Page, server: Server) -> None:
    pg = page.page
    create_and_start(page, "Alice")
    role = pg.text_content(tid("role-name")).strip()
    assert role and role != "?"
    # the role card shows the registry's attack and defense, as in the game
    card = pg.evaluate("fetch('/api/roles').then(r => r.json())")
    fact = next(r for r in card["roles"] if r["name"] == role)
    assert pg.text_content(tid("role-attack")) == fact["attack"]
    assert pg.text_content(tid("role-defense")) == fact["defense"]
    me = pg.wait_for_selector(tid("roster-1"))
    assert "you" in (me.get_attribute("class") or "").split()
    assert "Alice" in me.text_content() and role in me.text_content()
    assert len(pg.query_selector_all(f"{tid('roster')} > li")) == 7
    assert pg.is_hidden(tid("summaries"))  # Day 1: no summaries, no "Earlier days" panel

    # The action panel offers only what state.legal offers.
    legal = {a["kind"] for a in pg.evaluate("window.tossim.state.legal")}
    assert {"chat", "will"} <= legal
    assert pg.is_hidden(tid("vote-panel")) and pg.is_hidden(tid("judge-panel"))
    assert pg.is_hidden(tid("night-panel"))

    # Will: a counter, saved through the server, kept as text.
    will = "I am the <i>Sheriff</i>.\nN1: nothing yet"
    pg.fill(tid("will-input"), will)
    assert pg.text_content(tid("will-count")) == f"{len(will)}/400"
    pg.click(tid("will-save"))
    pg.wait_for_function(
        "() => document.querySelector('[data-testid=will-status]').textContent.includes('Saved')")
    pg.wait_for_function("(w) => window.tossim.state.you.will === w", arg=will)
    # Standard speed: a countdown (test_countdown_appears_without_any_event
    # checks that it comes without any event too).
    pg.wait_for_selector(f"{tid('countdown')}:not([hidden])", timeout=5000)

    # Chat that looks like HTML is shown as the literal text, and nothing runs.
    for text in (XSS_CHAT, XSS_IMG):
        pg.fill(tid("chat-input"), text)
        pg.click(tid("chat-send"))
    pg.wait_for_function(
        """(text) => [...document.querySelectorAll('[data-testid=event-log] > li .text')]
             .some(el => el.textContent === text)""", arg=XSS_IMG)
    texts = pg.eval_on_selector_all(f"{tid('event-log')} > li.k-chat .text",
                                    "els => els.map(e => e.textContent)")
    assert XSS_CHAT in texts and XSS_IMG in texts
    log = pg.query_selector(tid("event-log"))
    assert log.query_selector("b") is None
    assert log.query_selector("script") is None
    assert log.query_selector("img") is None
    pg.wait_for_timeout(300)
    assert pg.evaluate("window.__xss") is None
    assert pg.input_value(tid("chat-input")) == ""
    page.check_clean()


@pytest.mark.browser
def test_countdown_appears_without_any_event(page: Page, server: Server) -> None:
    """A standard game's phase deadline reaches the client on its own, even in
    a phase where nothing happens (the state after connecting may not have it
    yet; the server follows up with it)."""
    pg = page.page
    create_and_start(page, "Dana")
    version = pg.evaluate("window.tossim.version")
    try:
        pg.wait_for_selector(f"{tid('countdown')}:not([hidden])", timeout=5000)
    except sync_api.TimeoutError:
        pytest.fail("the phase deadline never reached the client: state.deadline stayed "
                    f"null on Day 1 while nothing happened (state: "
                    f"{pg.evaluate('JSON.stringify(window.tossim.state)')[:300]})")
    left = pg.evaluate("window.tossim.state.deadline - Date.now() / 1000")
    assert 0 < left <= 15 * 4 + 1  # Day 1: 15 s x TOSSIM_TIME_SCALE
    assert ":" in pg.text_content(tid("countdown"))
    assert pg.evaluate("window.tossim.state.phase") == "day1"
    assert pg.evaluate("window.tossim.version") >= version
    page.check_clean()


@pytest.mark.browser
def test_server_errors_are_shown(page: Page, server: Server) -> None:
    pg = page.page
    create_and_start(page, "Bob")
    assert pg.is_hidden(tid("error"))
    # No voting on Day 1: the page has no vote buttons, so send it raw.
    assert pg.query_selector(tid("vote-2")) is None
    pg.evaluate("window.tossim.send({type: 'vote', target: 2})")
    pg.wait_for_selector(f"{tid('error')}:not([hidden])")
    assert "cannot vote now" in pg.text_content(tid("error"))
    # An unknown message type is answered with an error too.
    pg.evaluate("window.tossim.sendRaw({type: 'bogus'})")
    pg.wait_for_function(
        "() => document.querySelector('[data-testid=error]').textContent.includes('bogus')")
    page.check_clean()


@pytest.mark.browser
def test_refused_view_is_explained(page: Page, server: Server) -> None:
    """docs/api.md: omniscient spectating of a live game with a human seat is
    refused with close code 4403; the page says so and offers the public view."""
    lobby = _post(server.base, "/api/lobbies",
                  {"players": 7, "speed": "standard", "seats": [{"slot": 1, "kind": "human"}]})
    _post(server.base, f"/api/lobbies/{lobby['id']}/join", {"name": "Carol"})
    _post(server.base, f"/api/lobbies/{lobby['id']}/start", owner_token=lobby["owner_token"])
    pg = page.page
    pg.goto(f"{server.base}/#/watch/{lobby['id']}?viewer=omniscient")
    pg.wait_for_selector(f"{tid('watch-notice')}:not([hidden])", timeout=10000)
    assert "not available" in pg.text_content(tid("watch-notice"))
    assert pg.text_content(tid("connection")).startswith("Disconnected")
    # the refused view never asks for the AI seats' stored turns (a 403 there)
    assert not [u for u in page.requests if "/turns" in u], page.requests
    pg.click(f"{tid('watch-notice')} a")
    pg.wait_for_url(f"**/#/watch/{lobby['id']}?viewer=public")
    pg.wait_for_selector(f"{tid('event-log')} > li")
    page.check_clean()


@pytest.mark.browser
def test_reconnect_resumes_without_gaps_or_duplicates(page: Page, server: Server) -> None:
    gid = new_ai_game(server)
    pg = page.page
    pg.goto(f"{server.base}/#/watch/{gid}?viewer=public")
    pg.wait_for_selector(f"{tid('event-log')} > li")
    before = pg.evaluate("window.tossim.version")
    # Drop the connection (as a network blip would) and stay away a moment.
    pg.evaluate("window.tossim.socket.ws.close()")
    status = "(s) => document.querySelector('[data-testid=connection]').dataset.status === s"
    pg.wait_for_function(status, arg="reconnecting")
    pg.wait_for_function(status, arg="live")
    pg.wait_for_function("(v) => window.tossim.version > v", arg=before, timeout=60000)
    sockets = pg.evaluate("window.__sockets")
    assert len(sockets) == 2
    assert "since=" not in sockets[0]["url"]
    since = int(sockets[1]["url"].rsplit("since=", 1)[1])
    assert since >= before
    # The first push after the reconnect is exactly the tail after `since`.
    pushes = [json.loads(m) for m in sockets[1]["received"]]
    first = next(m for m in pushes if m["type"] == "events")
    assert all(e["v"] > since for e in first["events"])
    pg.wait_for_timeout(500)
    # The log holds each public event exactly once, in order, with no gaps.
    shown = log_versions(pg)
    assert shown == sorted(set(shown)), "duplicated or unordered events"
    replay = server.get(f"/api/games/{gid}/replay?viewer=public")
    public = [e["v"] for e in replay["events"] if e["v"] <= shown[-1]]
    assert shown == public
    page.check_clean()


@pytest.mark.browser
def test_watch_page_screenshot(page: Page, server: Server) -> None:
    gid = demo_game_id(server)
    pg = page.page
    pg.goto(f"{server.base}/#/watch/{gid}?viewer=omniscient")
    pg.wait_for_selector(f"{tid('event-log')} > li")
    # Omniscient: every role is on the roster.
    pg.wait_for_function(
        "() => document.querySelectorAll('[data-testid=roster] .role').length === 15")
    # On a desktop the log scrolls inside the game and follows the newest
    # event, which stays on screen as the game and the AI thinking panel
    # below it grow (seen: the whole page grew to 7,000 px and a spectator
    # saw the role cards of the start while the game went on far below)
    newest_on_screen = """() => {
        const log = document.querySelector('[data-testid=event-log]');
        const last = log.lastElementChild.getBoundingClientRect();
        const box = log.getBoundingClientRect();
        return document.scrollingElement.scrollHeight <= innerHeight + 1
            && log.scrollHeight > log.clientHeight
            && last.bottom <= box.bottom + 1 && last.top >= box.top - 1
            && box.bottom <= innerHeight;
    }"""
    count = len(log_versions(pg))
    pg.wait_for_function(
        f"() => document.querySelectorAll('[data-testid=event-log] > li').length > {count}",
        timeout=60000)
    assert pg.evaluate(newest_on_screen), pg.evaluate(
        "() => [document.scrollingElement.scrollHeight, innerHeight]")
    assert pg.is_hidden(tid("jump-latest"))
    # the log's box shrinking while a scroll event of its own is pending (a
    # browser runs a frame's scroll events before its resize observers)
    # leaves it following (seen in the demo: the thinking panel loaded, and
    # the log stayed at a Judgement with "17 new" while the game was at night)
    pg.evaluate("""() => {
        const log = document.querySelector('[data-testid=event-log]');
        log.scrollTop = log.scrollHeight - log.clientHeight - 1;
        log.scrollTop = log.scrollHeight;
        log.style.maxHeight = (log.clientHeight - 200) + 'px';
    }""")
    count = len(log_versions(pg))
    pg.wait_for_function(
        f"() => document.querySelectorAll('[data-testid=event-log] > li').length > {count}",
        timeout=60000)
    distance = """() => {
        const log = document.querySelector('[data-testid=event-log]');
        return log.scrollHeight - log.scrollTop - log.clientHeight;
    }"""
    at_end = pg.evaluate(distance)
    assert at_end < 48 and pg.is_hidden(tid("jump-latest")), at_end
    pg.evaluate("() => { document.querySelector('[data-testid=event-log]').style.maxHeight = ''; }")
    # a reader who scrolls up stays where they are; new events are counted
    # on the jump button, which takes them back to the newest
    box = pg.locator(tid("event-log")).bounding_box()
    assert box is not None
    pg.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    pg.mouse.wheel(0, -600)
    pg.wait_for_selector(f"{tid('jump-latest')}:not([hidden])", timeout=60000)
    assert "new" in (pg.text_content(tid("jump-latest")) or "")
    assert pg.evaluate(distance) > 300
    pg.click(tid("jump-latest"))
    assert pg.evaluate(distance) < 48 and pg.is_hidden(tid("jump-latest"))
    # where the right column wraps under the game (a small laptop), the page
    # scrolls instead and the log keeps a reader's height (seen at 1024x768:
    # the graveyard and the thinking panel had left it 94 px)
    pg.set_viewport_size({"width": 1024, "height": 768})
    pg.wait_for_function(
        "() => document.querySelector('[data-testid=event-log]').clientHeight >= 0.5 * innerHeight")
    pg.set_viewport_size({"width": 1400, "height": 900})
    # Switch to one player's point of view with the selector.
    pg.select_option(tid("viewer-select"), "3")
    pg.wait_for_url(f"**/#/watch/{gid}?viewer=3")
    pg.wait_for_selector(f"{tid('role-card')}:not([hidden])")
    pg.wait_for_timeout(2500)  # let some of the game scroll by
    SCREENSHOT.unlink(missing_ok=True)
    pg.screenshot(path=str(SCREENSHOT))
    assert SCREENSHOT.stat().st_size > 10_000
    page.check_clean()


def test_api_docs_render_with_the_network_cut(page: Page, server: Server) -> None:
    """/docs (Swagger UI) loads its script and styles from this server, so it
    renders the API with every request off the server refused."""
    pg = page.page
    pg.route("**/*", lambda route: route.abort() if not route.request.url.startswith(
        server.base) else route.continue_())
    pg.goto(f"{server.base}/docs")
    pg.wait_for_selector(".swagger-ui .opblock-summary-path", timeout=20000)
    paths = pg.eval_on_selector_all(".opblock-summary-path", "els => els.map(e => e.textContent)")
    assert any("/api/lobbies" in p for p in paths)
    page.check_clean()


def test_roles_page_shows_a_players_card_for_every_role(page: Page, server: Server) -> None:
    """Alignment, goal, attack, defense and attributes for each role, from
    the registry (GET /api/roles), not the developers' reference table."""
    pg = page.page
    pg.goto(f"{server.base}/#/roles")
    pg.wait_for_selector(tid("roles-page"))
    facts = server.get("/api/roles")["roles"]
    assert len(pg.query_selector_all(f"{tid('roles-page')} article.role-card")) == len(facts)
    jailor = pg.text_content(tid("role-jailor"))
    assert "Town Killing" in jailor and "Unstoppable" in jailor and "Unique" in jailor
    assert "priority" not in pg.text_content(tid("roles-page")).lower()
    page.check_clean()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_pages_fit_the_screen_and_the_finger(browser: Any, quick_server: Server,
                                             size: str) -> None:
    """At 390 x 844 (a phone) and 1440 x 900: home, lobby, the game page of a
    living player in a day phase with a whisper open, a replay and the Roles
    page never scroll sideways, and on the phone every control is at least
    44 x 44 px."""
    touch = size == "phone"
    context = browser.new_context(viewport=PHONE if touch else DESKTOP, has_touch=touch)
    p = Page(context.new_page(), quick_server.base)
    pg = p.page
    pg.set_default_timeout(30000)
    seen: dict[str, list[str]] = {}
    try:
        # the deal is fair and fresh, so Alice may die on Night 1 (then she has
        # nobody to whisper to): another game, until she lives to Day 2
        for _ in range(4):
            pg.goto(quick_server.base + "/#/")
            pg.wait_for_selector(tid("create-submit"))
            seen.setdefault("home", layout_problems(pg, touch=touch))
            fill_new_lobby(pg, "Alice")
            seen.setdefault("lobby", layout_problems(pg, touch=touch))
            pg.click(tid("start-game"))
            pg.wait_for_function("() => window.tossim && window.tossim.state && "
                                 "window.tossim.state.phase === 'discussion'")
            if pg.evaluate("() => window.tossim.state.you.alive"):
                break
        else:
            pytest.fail("Alice died on Night 1 in 4 games in a row")
        pg.wait_for_function("() => [...document.querySelector('[data-testid=chat-to]')"
                             ".options].some(o => o.value.startsWith('w:'))")
        whisper = pg.eval_on_selector(tid("chat-to"), "s => [...s.options].map(o => o.value)"
                                      ".find(v => v.startsWith('w:'))")
        pg.select_option(tid("chat-to"), whisper)
        pg.fill(tid("chat-input"), "meet me tonight")
        seen["game, whisper open"] = layout_problems(pg, touch=touch)
        gid = finished_game(quick_server)
        pg.goto(f"{quick_server.base}/#/watch/{gid}")
        pg.wait_for_selector(tid("replay-bar"))
        pg.click(tid("rp-end"))  # the whole game on the page
        pg.wait_for_selector(f"{tid('event-log')} > li")
        seen["replay"] = layout_problems(pg, touch=touch)
        pg.goto(f"{quick_server.base}/#/roles")
        pg.wait_for_selector(tid("roles-page"))
        seen["roles"] = layout_problems(pg, touch=touch)
        pg.screenshot(path=f"/tmp/tossim-layout-{size}.png")
    finally:
        context.close()
    assert not any(seen.values()), {k: v for k, v in seen.items() if v}


def test_notepad_is_private_and_the_role_list_stays_in_view(page: Page, server: Server) -> None:
    """A player's notes survive a reload and never leave the browser; the
    game's role list is in view without opening anything."""
    pg = page.page
    create_and_start(page, "Nina")
    assert pg.is_visible(tid("role-list"))  # not folded away
    note = "P3 claimed Doctor on day 2; P5 voted P3"
    pg.fill(tid("notepad"), note)
    pg.wait_for_function("() => document.querySelector('[data-testid=notepad-status]')"
                         ".textContent.includes('Kept')")
    sent = [m for sock in pg.evaluate("window.__sockets") for m in sock["sent"]]
    assert not any("claimed Doctor" in m for m in sent)
    pg.reload()
    pg.wait_for_selector(f"{tid('role-card')}:not([hidden])")
    assert pg.input_value(tid("notepad")) == note
    sent = [m for sock in pg.evaluate("window.__sockets") for m in sock["sent"]]
    assert not any("claimed Doctor" in m for m in sent)
    page.check_clean()


def test_an_invited_player_picks_their_name(page: Page, server: Server) -> None:
    """Following an invite link, a player types the name the others will see
    before joining (not an invented "Guest1234")."""
    lobby = _post(server.base, "/api/lobbies", {
        "players": 7, "speed": "standard", "name": "Alice",
        "seats": [{"slot": 1, "kind": "human"}, {"slot": 2, "kind": "human"}]})
    pg = page.page
    pg.goto(f"{server.base}/#/lobby/{lobby['id']}")
    pg.wait_for_selector(f"{tid('lobby-join')}:not([hidden])")
    pg.fill(tid("join-name"), "Bob the Baker")
    pg.click(tid("lobby-join"))
    pg.wait_for_selector(f"{tid('leave-seat')}:not([hidden])")
    seats = server.get(f"/api/lobbies/{lobby['id']}")["seats"]
    assert [s.get("name") for s in seats if s["kind"] == "human"] == ["Alice", "Bob the Baker"]
    page.check_clean()


def summary_rows(pg: Any) -> list[list[str]]:
    """The "Earlier days" panel: [day label, text] per row, top to bottom."""
    rows = pg.eval_on_selector_all(
        f"{tid('day-summaries')} > li",
        """els => els.map(e => [e.querySelector('.day').textContent,
                                e.querySelector('.text').textContent])""")
    assert isinstance(rows, list)
    return rows


def expected_rows(summaries: list[dict[str, Any]]) -> list[list[str]]:
    return [[f"Day {s['day']}: ", s["text"].strip()] for s in summaries]


def count_fetches(p: Page, gid: str) -> list[str]:
    """The page's requests for the game's summary (GET /api/games/{gid})."""
    seen: list[str] = []
    p.page.on("request", lambda r: r.url.split("?")[0].endswith(f"/api/games/{gid}")
              and seen.append(r.url))
    return seen


@pytest.mark.browser
def test_watch_page_shows_day_summaries_as_text(page: Page, server: Server) -> None:
    """A finished game's watch page lists each day's summary ("Day N: text",
    newest last); a summary is model-written, so markup in it is literal text."""
    gid = finished_game(server, "fast")
    add_summary(server, gid, 1, XSS_SUMMARY)
    summaries = server.get(f"/api/games/{gid}")["summaries"]
    assert len(summaries) >= 2 and XSS_SUMMARY in [s["text"] for s in summaries]
    pg = page.page
    fetches = count_fetches(page, gid)
    pg.goto(f"{server.base}/#/watch/{gid}?viewer=public")
    # a replay opens at the start: no day has ended, no summary; at the end, all
    pg.wait_for_selector(tid("replay-bar"))
    assert pg.is_hidden(tid("summaries"))
    pg.click(tid("rp-end"))
    pg.wait_for_selector(f"{tid('summaries')}:not([hidden])")
    assert pg.text_content(f"{tid('summaries')} h3") == "Earlier days"
    pg.wait_for_function("(n) => document.querySelectorAll('[data-testid=day-summaries] > li')"
                         ".length === n", arg=len(summaries))
    rows = summary_rows(pg)
    assert rows == expected_rows(summaries)
    days = [int(r[0].split()[1].rstrip(":")) for r in rows]
    assert days == sorted(days) and days[-1] == pg.evaluate("window.tossim.state.day")
    # The markup is shown as it was written, and none of it became elements.
    assert ["Day 1: ", XSS_SUMMARY] in rows
    panel = pg.query_selector(tid("summaries"))
    assert panel.query_selector("img") is None and panel.query_selector("script") is None
    pg.wait_for_timeout(2500)
    assert pg.evaluate("window.__xss") is None
    # A finished game changes no more: fetched once, when the page opened; no polling.
    assert len(fetches) == 1, fetches
    page.check_clean()


@pytest.mark.browser
def test_day_summaries_follow_a_live_game(page: Page, server: Server) -> None:
    """No summaries, no panel; each nightfall (and the end) brings that day's
    summary, fetched on phase changes only."""
    gid = new_ai_game(server, 7)  # paced: a few seconds a day
    pg = page.page
    fetches = count_fetches(page, gid)
    pg.goto(f"{server.base}/#/watch/{gid}?viewer=public")
    pg.wait_for_selector(f"{tid('event-log')} > li")
    state = pg.evaluate("window.tossim.state")
    if state["phase"] == "day1":
        assert pg.is_hidden(tid("summaries"))
    pg.wait_for_selector(f'{tid("day-summaries")} > li[data-day="1"]', timeout=60000)
    assert pg.is_visible(tid("summaries"))
    # Never a day the page has not seen end.
    state = pg.evaluate("window.tossim.state")
    last = state["day"] if state["phase"] in ("night", "ended") else state["day"] - 1
    assert all(int(d) <= last for d in pg.eval_on_selector_all(
        f"{tid('day-summaries')} > li", "els => els.map(e => e.dataset.day)"))
    pg.wait_for_function("() => window.tossim.state.phase === 'ended'", timeout=120000)
    summaries = wait_finished(server, gid)["summaries"]
    pg.wait_for_function("(n) => document.querySelectorAll('[data-testid=day-summaries] > li')"
                         ".length === n", arg=len(summaries), timeout=15000)
    assert summary_rows(pg) == expected_rows(summaries)
    # One fetch when the page opened, then at most one per phase change (plus
    # a few retries for a day whose summary was not written yet); none after.
    pushes = [json.loads(m) for sock in pg.evaluate("window.__sockets") for m in sock["received"]]
    changes = len({(m["state"]["day"], m["state"]["phase"])
                   for m in pushes if m.get("type") == "events" and m.get("state")})
    assert len(fetches) <= 1 + changes + 3, (len(fetches), changes)
    done = len(fetches)
    pg.wait_for_timeout(3000)
    assert len(fetches) == done, "the page kept fetching after the game ended"
    page.check_clean()


SYNTHETIC = """
async (legal) => {
  const { GameView } = await import('/render.js');
  let root = document.getElementById('synthetic');
  if (!root) {
    root = document.createElement('div');
    root.id = 'synthetic';
    document.body.replaceChildren(root);
    window.__commands = [];
    const send = (c) => (window.__commands.push(c), true);
    window.__view = new GameView(root, {mode: 'play', send});
  }
  const roster = [1, 2, 3, 4, 5, 6, 7].map((s) => ({
    slot: s, name: s === 3 ? '<b>Eve</b>' : `P${s}`, alive: s !== 7,
    role: s === 1 ? 'Jailor' : (s === 7 ? 'Doctor' : null), revealed_mayor: false,
    ...(s === 7 ? {death: {day: 1, at_night: true, causes: ['mafia'], will: '<i>w</i>',
                           death_notes: []}} : {}),
  }));
  window.__view.update([], {
    day: 2, phase: legal.phase, phase_seq: legal.seq, deadline: Date.now() / 1000 + 30, roster,
    you: {slot: 1, name: 'P1', role: 'Jailor', faction: 'town', alignment: 'Town Killing',
          summary: 's', goal: 'g', alive: true, uses: {executions: 3}, will: '', death_note: '',
          jailed: false, night_action: [], vote: null, verdict: null, jail_choice: null},
    legal: legal.legal, trial: {trials_today: 0, accused: 3, votes: {'3': 2}, needed: 4},
    result: null, winners: [],
  });
}
"""


def _legal(kind: str, targets: list[int] | None = None, n: int = 0, ability: str = "",
           options: list[str] | None = None) -> dict[str, Any]:
    return {"kind": kind, "targets": targets or [], "n_targets": n, "ability": ability,
            "options": options or []}


@pytest.mark.browser
def test_action_panel_is_built_from_legal_only(page: Page, server: Server) -> None:
    """The seat's controls exist exactly when state.legal offers them, and send
    the command shapes of docs/api.md. (A synthetic state: no game needed.)"""
    pg = page.page
    pg.goto(server.base + "/#/synthetic")
    pg.wait_for_selector(tid("home"))

    show, commands = synthetic(pg)

    # Voting: one button per legal target, the tally, cancel.
    show("voting", _legal("vote", [2, 3, 4], 1), _legal("chat", options=["public"]))
    assert pg.is_visible(tid("vote-panel"))
    assert [b.get_attribute("data-testid") for b in pg.query_selector_all(
        f"{tid('vote-buttons')} button")] == ["vote-2", "vote-3", "vote-4"]
    assert pg.query_selector(tid("vote-5")) is None
    assert pg.text_content(tid("vote-3")).endswith("2")  # the tally
    assert "<b>Eve</b>" in pg.text_content(tid("vote-3"))  # names are text too
    assert pg.query_selector(f"{tid('vote-3')} b") is None
    pg.click(tid("vote-3"))
    assert commands() == [{"type": "vote", "target": 3}]
    for hidden in ("judge-panel", "night-panel", "jail-panel", "seance-panel", "reveal-panel",
                   "will-panel", "death-note-panel"):
        assert pg.is_hidden(tid(hidden)), hidden
    assert pg.is_hidden(tid("chat-to"))  # a single channel: no selector

    # Judgement.
    show("judgement", _legal("judge", options=["guilty", "innocent", "abstain"]))
    assert pg.is_hidden(tid("vote-panel")) and pg.is_visible(tid("judge-panel"))
    assert "<b>Eve</b>" in pg.text_content(tid("judge-hint"))
    pg.click(tid("judge-guilty"))
    pg.click(tid("judge-innocent"))
    assert commands() == [{"type": "judge", "verdict": "guilty"},
                          {"type": "judge", "verdict": "innocent"}]
    assert pg.is_disabled(tid("chat-input"))  # no chat in the legal list

    # Night, two targets (Transporter), channels + whispers in the composer.
    show("night", _legal("night", [1, 2, 3], 2, "transport"),
         _legal("chat", options=["mafia", "dead"]), _legal("whisper", [2, 4], 1))
    assert pg.is_visible(tid("night-target")) and pg.is_visible(tid("night-target-2"))
    pg.click(tid("night-submit"))
    assert pg.is_visible(tid("error")) and commands() == []  # nothing chosen yet
    pg.select_option(tid("night-target"), "2")
    pg.select_option(tid("night-target-2"), "3")
    pg.click(tid("night-submit"))
    assert commands() == [{"type": "night", "targets": [2, 3]}]
    assert pg.is_disabled(tid("night-cancel"))  # you.night_action is empty: nothing to cancel
    values = pg.eval_on_selector_all(f"{tid('chat-to')} option", "os => os.map(o => o.value)")
    assert values == ["c:mafia", "c:dead", "w:2", "w:4"]
    pg.select_option(tid("chat-to"), "c:dead")
    pg.fill(tid("chat-input"), "hello")
    pg.click(tid("chat-send"))
    pg.select_option(tid("chat-to"), "w:4")
    pg.fill(tid("chat-input"), "psst")
    pg.press(tid("chat-input"), "Enter")
    assert commands() == [{"type": "chat", "text": "hello", "channel": "dead"},
                          {"type": "whisper", "target": 4, "text": "psst"}]

    # Self-targeted night ability (n_targets 0): one button, names the actor.
    show("night", _legal("night", [1], 0, "alert"))
    assert pg.is_hidden(tid("night-target"))
    pg.click(tid("night-submit"))
    assert commands() == [{"type": "night", "targets": [1]}]

    # Day abilities: jail, reveal (two clicks), will and death note with counters.
    show("day1", _legal("jail", [2, 3], 1, "jail"), _legal("reveal", ability="reveal"),
         _legal("will"), _legal("death_note"))
    pg.select_option(tid("jail-target"), "2")
    pg.click(tid("jail-submit"))
    pg.click(tid("jail-cancel"))
    pg.click(tid("reveal"))
    assert commands() == [{"type": "day", "ability": "jail", "target": 2},
                          {"type": "day", "ability": "jail", "target": None}]
    pg.click(tid("reveal"))
    assert commands() == [{"type": "day", "ability": "reveal"}]
    assert pg.get_attribute(tid("will-input"), "maxlength") == "400"
    pg.fill(tid("death-note-input"), "x" * 400)
    assert pg.text_content(tid("death-note-count")) == "400/400"
    pg.click(tid("death-note-save"))
    assert commands() == [{"type": "death_note", "text": "x" * 400}]

    # The graveyard shows the will as text; the role card is there.
    assert pg.text_content(tid("grave-will-7")) == "<i>w</i>"
    assert pg.is_visible(tid("role-card"))

    # Nothing legal: nothing to press.
    show("night")
    assert pg.is_visible(tid("no-actions"))
    assert pg.is_disabled(tid("chat-input")) and pg.is_disabled(tid("chat-send"))
    page.check_clean()


# ---- lobbies, a whole game through the page, replays, phones (issue 13) -------------

# A game with a human seat is dealt from the server's secret (a fair deal), so
# the test cannot choose the human's role: it plays a custom list in which
# every role acts on Night 1.
NIGHT_ROLES = "Godfather, Mafioso, Doctor, Sheriff, Investigator, Lookout, Escort"


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the screenshots go (TOSSIM_SCREENSHOTS, e.g. out/screenshots, or a tmp dir)."""
    where = os.environ.get("TOSSIM_SCREENSHOTS")
    path = Path(where) if where else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def open_page(browser: Any, base: str, width: int = 1400, height: int = 900
              ) -> tuple[Page, Any]:
    """A page in a browser context of its own (another browser, as far as the
    server and localStorage are concerned)."""
    context = browser.new_context(viewport={"width": width, "height": height},
                                  accept_downloads=True)
    p = Page(context.new_page(), base)
    p.page.set_default_timeout(20000)
    return p, context


def no_overflow(pg: Any, what: str) -> None:
    sizes = pg.evaluate("[document.documentElement.scrollWidth, "
                        "document.documentElement.clientWidth]")
    assert sizes[0] <= sizes[1], f"{what}: {sizes[0]} px wide in a {sizes[1]} px window"


def game_id_from_hash(pg: Any) -> str:
    return str(pg.evaluate("location.hash").split("?")[0].split("/")[-1])


READ_VOTING = """() => {
  const s = window.tossim.state;
  const hint = document.querySelector('[data-testid=vote-hint]').textContent;
  const needed = Number((hint.match(/^(\\d+) votes put a player on trial/) || [])[1] || 0);
  const buttons = [...document.querySelectorAll('[data-testid=vote-buttons] button')].map(b => ({
    slot: Number(b.dataset.slot),
    name: b.querySelector('.label').textContent.replace(/^\\d+\\. /, ''),
    count: Number(b.querySelector('.count').textContent || 0)}));
  return {needed, buttons, seq: s && s.phase_seq};
}"""


# games the whole-game test plays at most (through "play again") until the
# seat's vote decides a trial: a game gives no chance when the seat dies
# early or the AI votes never leave anyone one vote short
MAX_GAMES = 5


def vote_from_the_tally(pg: Any, did: dict[str, Any], day: int, shots: Path) -> bool:
    """Voting, as a player reading the page: the vote hint says how many votes
    put a player on trial and each button shows its tally. With someone one
    vote short (the AI votes that would complete it are held while a human
    has time to vote), the seat's vote is the deciding one: it votes, and the
    page must show that player's trial at once (Defense, "On trial: name").
    Otherwise it does not vote: an early or lone vote cannot be the deciding
    one (the AI votes after it would complete the trial) and, with no reason
    given, draws suspicion on the seat. True once it has voted."""
    seen = pg.evaluate(READ_VOTING)
    needed, buttons = seen["needed"], seen["buttons"]
    short = [b for b in buttons if needed and b["count"] == needed - 1]
    if short:
        target = short[0]
        pg.click(tid(f"vote-{target['slot']}"), timeout=2000)
        did["vote"].append((day, target["slot"]))
        try:
            pg.wait_for_function(
                """(name) => document.querySelector('[data-testid=phase]').dataset.phase
                     === 'defense' && document.querySelector('[data-testid=trial-info]')
                     .textContent === `On trial: ${name}`""", arg=target["name"], timeout=5000)
            if not did["deciding"]:
                pg.screenshot(path=str(shots / "03b-trial-from-my-vote.png"), full_page=True)
            did["deciding"].append((day, target["slot"]))
        except sync_api.TimeoutError:  # the window closed first
            shown = pg.evaluate("() => [document.querySelector('[data-testid=phase]')"
                                ".dataset.phase, document.querySelector("
                                "'[data-testid=trial-info]').textContent]")
            did["late"].append((day, target["slot"], *shown))
        return True
    return False


def play_until_the_end(pg: Any, deadline_s: float, shots: Path) -> dict[str, Any]:
    """Act through the page whenever the seat can: a will on the first chance,
    a chat line and a vote each day (the deciding one when it can be, see
    `vote_from_the_tally`), a guilty verdict at each trial, a night action
    each night; until the game is over. Returns what it did."""
    did: dict[str, Any] = {"will": 0, "chat": 0, "vote": [], "judge": 0, "night": 0,
                           "vote_panels": 0, "deciding": [], "late": []}
    done: set[tuple[Any, ...]] = set()
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        st = pg.evaluate("""() => { const s = window.tossim.state; return s && {
            phase: s.phase, day: s.day, seq: s.phase_seq,
            legal: (s.legal || []).map(a => a.kind), alive: s.you && s.you.alive}; }""")
        if st and st["phase"] == "ended":
            return did
        if not st:
            pg.wait_for_timeout(100)
            continue
        legal, day, seq = set(st["legal"]), st["day"], st["seq"]
        try:
            if "will" in legal and not did["will"]:
                pg.fill(tid("will-input"), "Godfather? No: I am the Sheriff.\nN1: Player 3 is sus")
                pg.click(tid("will-save"), timeout=2000)
                did["will"] += 1
            if "vote" in legal and ("vote", seq) not in done:
                if ("panel", seq) not in done:
                    done.add(("panel", seq))
                    did["vote_panels"] += 1
                if vote_from_the_tally(pg, did, day, shots):
                    done.add(("vote", seq))
            if "chat" in legal and ("chat", day) not in done and \
                    pg.is_enabled(tid("chat-input")) and st["phase"] in ("day1", "discussion"):
                done.add(("chat", day))
                pg.fill(tid("chat-input"), f"Day {day}: I trust Player 2, watch Player 3.",
                        timeout=2000)
                pg.click(tid("chat-send"), timeout=2000)
                did["chat"] += 1
            if "judge" in legal and ("judge", seq) not in done:
                done.add(("judge", seq))
                pg.click(tid("judge-guilty"), timeout=2000)
                did["judge"] += 1
            if "night" in legal and ("night", day) not in done:
                done.add(("night", day))
                options = pg.eval_on_selector_all(f"{tid('night-target')} option",
                                                  "os => os.map(o => o.value).filter(Boolean)")
                if options:
                    pg.select_option(tid("night-target"), options[0], timeout=2000)
                pg.click(tid("night-submit"), timeout=2000)
                did["night"] += 1
        except sync_api.Error:
            pass  # the phase ended under the click: the next round sees the new one
        pg.wait_for_timeout(40)
    pytest.fail(f"the game did not end in {deadline_s} s; did {did}")


def check_deciding_votes(server: Server, gid: str, did: dict[str, Any]) -> str:
    """Each trial the page showed right after the seat's deciding vote is, in
    the game's public record, a trial whose last vote before it is the seat's,
    for the accused; and the seat judged there (its judge command is stored)."""
    public = server.get(f"/api/games/{gid}/replay?viewer=public")["events"]
    last_vote: dict[str, Any] = {}
    decided = []
    record = []  # the days' votes and trials, printed (why no vote decided, if none)
    for e in public:
        if e["key"] in ("vote.cast", "vote.changed"):
            last_vote = e["data"]
            record.append(f"{e['data']['voter']}>{e['data']['target']}")
        elif e["key"] in ("phase.voting", "lynch.death", "dawn.death"):
            record.append(f"| D{e['day']} {e['key']} {e['data'].get('player', '')}")
        elif e["key"] == "trial.start":
            record.append(f"TRIAL {e['data']['accused']}")
            if last_vote == {"voter": 1, "target": e["data"]["accused"]}:
                decided.append((e["day"], e["data"]["accused"]))
            last_vote = {}
    assert set(did["deciding"]) <= set(decided), (did, decided)
    if did["deciding"]:
        omni = server.get(f"/api/games/{gid}/replay?viewer=omniscient")
        assert did["judge"] and any(c.get("actor") == 1 and c["type"] == "judge"
                                    for c in omni["commands"]), did
    return " ".join(record)


@pytest.mark.browser
def test_lobby_owner_a_whole_game_spectated_and_play_again(
        browser: Any, quick_server: Server, shots: Path) -> None:
    base = quick_server.base
    owner, owner_ctx = open_page(browser, base)
    guest, guest_ctx = open_page(browser, base, 390, 844)
    pg, gp = owner.page, guest.page
    try:
        # -- the owner creates a lobby: mode, seats (one more human, AI per seat), speed
        pg.goto(base + "/#/")
        pg.fill(tid("player-name"), "Alice")
        pg.dispatch_event(tid("player-name"), "change")
        pg.wait_for_selector(tid("create-seat-7"))
        modes = quick_server.get("/api/modes")
        assert pg.eval_on_selector_all(f"{tid('create-mode')} option",
                                       "os => os.map(o => o.value)") == [
            m["key"] for m in modes["modes"]]
        pg.select_option(tid("create-mode"), "custom")
        pg.fill(tid("create-custom-roles"), NIGHT_ROLES)
        assert pg.input_value(tid("create-players")) == "7"
        pg.select_option(tid("create-seat-2"), "human")
        for slot in range(3, 8):
            pg.select_option(tid(f"create-seat-{slot}"), "b:scripted")
        pg.select_option(tid("create-speed"), "quick")
        pg.fill(tid("create-seed"), "4")  # asked for; the server mixes in its secret
        assert "Sheriff" in pg.text_content(tid("create-roles"))
        pg.screenshot(path=str(shots / "01-home-create.png"), full_page=True)
        pg.click(tid("create-submit"))
        pg.wait_for_selector(tid("start-game"))
        gid = game_id_from_hash(pg)
        lobby = quick_server.get(f"/api/lobbies/{gid}")
        assert lobby["speed"] == "quick" and lobby["mode"] == "custom"
        assert lobby["roles"] == [r.strip() for r in NIGHT_ROLES.split(",")]
        assert [(s["kind"], s["claimed"], s["name"]) for s in lobby["seats"][:2]] == [
            ("human", True, "Alice"), ("human", False, "Player 2")]
        assert all(s["kind"] == "ai" and s["backend"] == "scripted" for s in lobby["seats"][2:])
        invite = pg.input_value(tid("invite-link"))
        assert invite.endswith(f"#/lobby/{gid}")

        # -- a second browser opens the invite: it may join and leave, never start
        gp.goto(invite)
        gp.wait_for_selector(tid("lobby-seat-row-7"))
        assert gp.is_hidden(tid("owner-controls")) and gp.query_selector(tid("kick-1")) is None
        gp.click(tid("lobby-join"))
        gp.wait_for_selector(f"{tid('leave-seat')}:not([hidden])")
        pg.wait_for_selector(tid("kick-2"))  # the owner sees the guest and may remove them
        gp.screenshot(path=str(shots / "02-lobby-guest-390.png"), full_page=True)
        no_overflow(gp, "lobby page")
        status = gp.evaluate("(id) => fetch(`/api/lobbies/${id}/start`, {method: 'POST'})"
                             ".then(r => r.status)", gid)
        assert status == 403
        guest.errors.remove("console: Failed to load resource: the server responded with a "
                            "status of 403 (Forbidden)")  # the refusal asked for above
        gp.click(tid("leave-seat"))
        gp.wait_for_selector(f"{tid('lobby-join')}:not([hidden])")
        assert quick_server.get(f"/api/lobbies/{gid}")["status"] == "lobby"
        pg.wait_for_function("() => !document.querySelector('[data-testid=kick-2]')")
        pg.screenshot(path=str(shots / "03-lobby-owner.png"), full_page=True)

        # -- the owner starts; the guest's page follows as a spectator
        pg.click(tid("start-game"))
        pg.wait_for_url(f"**/#/play/{gid}")
        pg.wait_for_selector(f"{tid('role-card')}:not([hidden])")
        role = pg.text_content(tid("role-name")).strip()
        assert role in NIGHT_ROLES.split(", ")
        gp.wait_for_url(f"**/#/watch/{gid}?viewer=public")
        gp.wait_for_selector(f"{tid('event-log')} > li >> nth=2")
        # the spectator jumps back in time, then returns to live
        gp.click(tid("rp-back"))
        assert "Earlier moment" in gp.text_content(tid("connection"))
        gp.click(tid("rp-live"))
        gp.wait_for_function("() => ['● Live', 'Game over'].includes("
                             "document.querySelector('[data-testid=connection]').textContent)")

        # -- the seat belongs to the browser: a reload and a second tab play it
        pg.reload()
        pg.wait_for_selector(f"{tid('role-card')}:not([hidden])")
        assert pg.text_content(tid("role-name")).strip() == role
        tab = owner_ctx.new_page()
        tab.goto(f"{base}/#/play/{gid}")
        tab.wait_for_selector(f"{tid('role-card')}:not([hidden])")
        assert tab.text_content(tid("role-name")).strip() == role
        assert "you" in (tab.get_attribute(tid("roster-1"), "class") or "").split()
        assert "AI · scripted" in tab.text_content(tid("roster-3"))
        tab.close()

        # -- the human plays the whole game through the page
        did = play_until_the_end(pg, 300, shots)
        pg.wait_for_selector(f"{tid('end-panel')}:not([hidden])")
        pg.screenshot(path=str(shots / "04-play-game-over.png"), full_page=True)
        assert pg.text_content(tid("connection")) == "Game over"
        assert did["will"] and did["chat"] and did["night"], did
        omni = quick_server.get(f"/api/games/{gid}/replay?viewer=omniscient")
        mine = [c for c in omni["commands"] if c.get("actor") == 1]
        kinds = {c["type"] for c in mine}
        assert {"will", "chat", "night"} <= kinds, (did, kinds)
        public = quick_server.get(f"/api/games/{gid}/replay?viewer=public")["events"]
        trials = [e for e in public if e["key"] == "trial.start"]
        if did["vote"]:
            assert "vote" in kinds, did  # the seat's votes reached the game
        record = check_deciding_votes(quick_server, gid, did)
        print(f"human seat: {did}; trials: {len(trials)}; votes: {record}")

        # -- the spectator saw the same public events, in order; the seat saw them too
        gp.wait_for_function("() => document.querySelector('[data-testid=connection]')"
                             ".textContent === 'Game over'")
        assert log_versions(gp) == [e["v"] for e in public]
        assert {e["v"] for e in public} <= set(log_versions(pg))
        gp.screenshot(path=str(shots / "05-spectator-390.png"), full_page=True)
        no_overflow(gp, "watch page (live game)")

        # -- play again: a new lobby with the same settings, this browser its owner
        pg.click(tid("play-again"))
        pg.wait_for_function("(id) => location.hash.startsWith('#/lobby/') && "
                             "!location.hash.endsWith(id)", arg=gid)
        again = game_id_from_hash(pg)
        pg.wait_for_selector(tid("start-game"))
        lobby2 = quick_server.get(f"/api/lobbies/{again}")
        assert (lobby2["speed"], lobby2["players"], lobby2["mode"]) == ("quick", 7, "custom")
        assert lobby2["roles"] == lobby["roles"]
        assert [s["kind"] for s in lobby2["seats"]] == [s["kind"] for s in lobby["seats"]]
        assert lobby2["seats"][0]["name"] == "Alice" and lobby2["seats"][0]["claimed"]

        # -- the seat's vote decided a trial. A seat killed early, or a game
        #    whose days never had anyone one vote short, cannot: then the
        #    seat plays the next game too (at most MAX_GAMES in all).
        deciding, games = did["deciding"], 1
        while not deciding and games < MAX_GAMES:
            pg.click(tid("start-game"))
            pg.wait_for_url(f"**/#/play/{again}")
            pg.wait_for_selector(f"{tid('role-card')}:not([hidden])")
            pg.wait_for_function("() => window.tossim.state && "
                                 "window.tossim.state.phase !== 'ended'")  # the new game's
            more = play_until_the_end(pg, 300, shots)
            wait_finished(quick_server, again, 30)  # the store's row follows the last event
            record = check_deciding_votes(quick_server, again, more)
            print(f"human seat, game {games + 1}: {more}; votes: {record}")
            deciding, games = more["deciding"], games + 1
            if not deciding and games < MAX_GAMES:
                pg.wait_for_selector(f"{tid('end-panel')}:not([hidden])")
                pg.click(tid("play-again"))
                pg.wait_for_function("(id) => location.hash.startsWith('#/lobby/') && "
                                     "!location.hash.endsWith(id)", arg=again)
                again = game_id_from_hash(pg)
                pg.wait_for_selector(tid("start-game"))
        assert deciding, f"in {games} games the seat's vote never decided a trial"
        owner.check_clean()
        guest.check_clean()
    finally:
        owner_ctx.close()
        guest_ctx.close()


@pytest.mark.browser
def test_replay_viewer_steps_jumps_spoilers_moment_link_export(
        page: Page, server: Server, shots: Path) -> None:
    gid = finished_game(server, "fast")
    public = server.get(f"/api/games/{gid}/replay?viewer=public")
    events = public["events"]
    versions = [e["v"] for e in events]
    pg = page.page
    # the finished games list links to the replay, public view (no spoilers)
    pg.goto(server.base + "/#/")
    pg.click(tid(f"watch-{gid}"))
    pg.wait_for_url(f"**/#/watch/{gid}?viewer=public")
    pg.wait_for_selector(tid("replay-bar"))
    pg.wait_for_selector(tid("rp-range"))
    # it opens at the start: no events, no result (spoilers), no "Live"
    pg.wait_for_function("() => document.querySelector('[data-testid=rp-position]')"
                         ".textContent.includes('0/')")
    assert log_versions(pg) == [] and pg.is_hidden(tid("game-result"))
    assert "Live" not in pg.text_content(tid("connection"))
    for _ in range(3):
        pg.click(tid("rp-forward"))
    assert log_versions(pg) == versions[:3]
    pg.click(tid("rp-back"))
    assert log_versions(pg) == versions[:2]
    # keyboard: End, Home, the arrows, space
    pg.focus("#app")
    pg.keyboard.press("End")
    assert log_versions(pg) == versions
    assert pg.is_visible(tid("game-result"))  # the end: the result
    # its graveyard says when each player died as the live view does: a death
    # found at dawn of Day N was on Night N-1 (seen: "Night 2" for a player
    # the Mafia killed on Night 1)
    when: dict[int, str] = {}
    for e in events:
        if e["key"] in ("dawn.death", "lynch.death"):
            night = e["key"] == "dawn.death"
            when[e["data"]["player"]] = f"Night {e['day'] - 1}" if night else f"Day {e['day']}"
        elif e["key"] == "dawn.revived":
            when.pop(e["data"]["player"], None)
    for slot, w in when.items():
        meta = pg.text_content(f"{tid(f'grave-{slot}')} .grave-meta") or ""
        assert meta.startswith(w + " "), (slot, meta, w)
    # (and whatever this deal held: a Night 1 kill found at dawn of Day 2)
    death = pg.evaluate("""async () => {
      const { derive } = await import('/replay.js');
      const events = [
        {v: 1, day: 1, phase: 'day1', key: 'game.start', audience: 'public',
         data: {players: [{slot: 1, name: 'Ann'}, {slot: 2, name: 'Bob'}]}},
        {v: 2, day: 2, phase: 'discussion', key: 'phase.discussion', audience: 'public', data: {}},
        {v: 3, day: 2, phase: 'discussion', key: 'dawn.death', audience: 'public',
         data: {player: 2, causes: ['mafia']}}];
      return derive(events, events.length).roster[1].death;
    }""")
    assert (death["day"], death["at_night"]) == (1, True)
    pg.keyboard.press("Home")
    assert log_versions(pg) == []
    pg.keyboard.press("ArrowRight")
    assert log_versions(pg) == versions[:1]
    pg.select_option(tid("rp-speed"), "16")
    pg.focus("#app")  # a focused select keeps its keys
    pg.keyboard.press(" ")
    pg.wait_for_function("() => document.querySelectorAll('[data-testid=event-log] > li')"
                         ".length >= 4")
    pg.keyboard.press(" ")  # pause
    # the timeline marks deaths and trials, once reached (spoilers off)
    pg.keyboard.press("End")
    assert pg.query_selector_all(tid("rp-mark-death"))
    # jump to Day 2: only the roles revealed by then, no result; spoilers show them all
    pg.click(tid("rp-jump-day-2"))
    assert "Day 2" in pg.text_content(tid("phase"))
    day2 = versions.index(next(e["v"] for e in events if e["day"] == 2)) + 1
    assert log_versions(pg) == versions[:day2]
    dead = len(pg.query_selector_all(f"{tid('roster')} > li.dead"))
    roles = len(pg.query_selector_all(f"{tid('roster')} [data-testid^=role-]"))
    assert roles == dead and pg.is_hidden(tid("game-result"))
    pg.check(tid("rp-spoilers"))
    assert len(pg.query_selector_all(f"{tid('roster')} [data-testid^=role-]")) == 7
    assert pg.is_visible(tid("game-result"))
    assert log_versions(pg) == versions[:day2]  # spoilers change what is known, not when
    pg.screenshot(path=str(shots / "06-replay-day2-spoilers.png"), full_page=True)
    # a moment link opens the replay there
    link = pg.get_attribute(tid("rp-link"), "href")
    assert link and link.endswith(f"&v={versions[day2 - 1]}")
    pg.goto(server.base + "/" + link)
    pg.reload()
    pg.wait_for_function("(n) => document.querySelectorAll('[data-testid=event-log] > li')"
                         ".length === n", arg=day2)
    assert log_versions(pg) == versions[:day2]
    # export: the game as this view's JSON
    with pg.expect_download() as download:
        pg.click(tid("rp-export"))
    data = json.loads(Path(download.value.path()).read_text())
    assert data["events"] == events and data["viewer"] == "public"
    # a player's point of view, at the same moment, spoilers on: that seat's role card
    pg.check(tid("rp-spoilers"))
    pg.select_option(tid("viewer-select"), "3")
    pg.wait_for_url(f"**/#/watch/{gid}?viewer=3&at={day2}&spoilers=1")
    pg.wait_for_selector(f"{tid('role-card')}:not([hidden])")
    assert pg.text_content(tid("role-name")).strip() == role_at(
        server.get(f"/api/games/{gid}/replay?viewer=3")["events"], 3, versions[day2 - 1])
    pg.set_viewport_size({"width": 390, "height": 844})
    pg.wait_for_timeout(200)
    pg.screenshot(path=str(shots / "07-replay-390.png"), full_page=True)
    no_overflow(pg, "replay")
    page.check_clean()


@pytest.mark.browser
def test_ai_thinking_folded_streamed_and_kept(page: Page, server: Server, shots: Path) -> None:
    """The omniscient view of an all-AI game shows model seats' turns, folded,
    as text: the stored ones (GET /api/games/{id}/turns, asked for once the
    socket's hello has accepted the view) and the streamed ones (the
    websocket's `thinking` messages). A prompt is stored but never served."""
    gid = new_ai_game(server, 7, "paced")
    add_turn(server, gid, 3, {
        "prompt": "<system>never shown</system>", "output": "...", "action": {"type": "chat"},
        "steps": [{"kind": "thinking", "text": "Player 5 <b>claimed</b> Sheriff."},
                  {"kind": "tool", "name": "read_log", "args": {"day": 1},
                   "observation": "Day 1 begins."},
                  {"kind": "action", "text": "chat: hello"}]})
    pg = page.page
    pg.goto(f"{server.base}/#/watch/{gid}?viewer=omniscient")
    pg.wait_for_selector(f"{tid('event-log')} > li")
    stored = pg.locator(tid("thinking-3"))
    stored.wait_for()
    # a streamed step (the websocket message's shape) joins the panel
    pg.evaluate("""() => window.tossim.socket.handle({type: 'thinking', slot: 4, day: 1,
        phase: 'day1', step: {kind: 'thinking', text: 'I will <img src=x> claim Doctor.'}})""")
    streamed = pg.locator(tid("thinking-4"))
    streamed.wait_for()
    for seat in (stored, streamed):
        assert seat.get_attribute("open") is None  # folded by default
    assert not streamed.locator("ol.turns").is_visible()
    streamed.locator("summary").click()
    pg.wait_for_function("() => document.querySelector('[data-testid=thinking-4]').open")
    assert "I will <img src=x> claim Doctor." in streamed.inner_text()
    stored.locator("summary").click()
    pg.wait_for_function("() => document.querySelector('[data-testid=thinking-3]').open")
    text = stored.inner_text()
    assert "Player 5 <b>claimed</b> Sheriff." in text and "read_log(" in text, text
    assert "Day 1 begins." in text and "chat: hello" in text
    # a later step keeps the reader's place: the seats stay open
    pg.evaluate("""() => window.tossim.socket.handle({type: 'thinking', slot: 4, day: 1,
        phase: 'day1', step: {kind: 'action', text: 'chat: I am the Doctor.'}})""")
    pg.wait_for_function("() => document.querySelector('[data-testid=thinking-4]')"
                         ".textContent.includes('I am the Doctor.')")
    assert stored.get_attribute("open") is not None and streamed.get_attribute("open") is not None
    assert "never shown" not in pg.content()  # prompts are stored, never served
    assert pg.query_selector(f"{tid('thinking')} img") is None
    assert pg.query_selector(f"{tid('thinking')} b") is None
    turns_requests = [u for u in page.requests if u.endswith(f"/api/games/{gid}/turns")]
    assert len(turns_requests) == 1, turns_requests
    pg.screenshot(path=str(shots / "08-thinking.png"), full_page=True)
    page.check_clean()


@pytest.mark.browser
def test_every_page_fits_a_phone(browser: Any, server: Server, shots: Path) -> None:
    p, context = open_page(browser, server.base, 390, 844)
    pg = p.page
    try:
        gid = demo_game_id(server)
        lobby = _post(server.base, "/api/lobbies", {
            "players": 7, "seats": [{"slot": 1, "kind": "human"}, {"slot": 2, "kind": "human"}]})
        pages = {"home": "/#/", "rules": "/#/rules", "roles": "/#/roles",
                 "lobby": f"/#/lobby/{lobby['id']}", "watch": f"/#/watch/{gid}?viewer=public",
                 "no-seat": f"/#/play/{gid}"}
        ready = {"home": tid("create-seat-7"), "rules": "[data-testid=doc-rules] h1",
                 "roles": tid("roles-page"), "lobby": tid("lobby-seat-row-7"),
                 "watch": f"{tid('event-log')} > li", "no-seat": tid("no-seat")}
        for name, path in pages.items():
            pg.goto(server.base + path)
            pg.wait_for_selector(ready[name])
            pg.wait_for_timeout(150)
            pg.screenshot(path=str(shots / f"09-{name}-390.png"), full_page=True)
            no_overflow(pg, name)
        # the demo is a labelled card on the home page
        pg.goto(server.base + "/#/")
        pg.wait_for_function("() => document.querySelector('[data-testid=demo-card]')"
                             ".getAttribute('href').includes('/watch/')")
        assert "Live demo" in pg.text_content(tid("demo-card"))
        # keyboard: every control can be reached with Tab and shows a focus ring
        pg.keyboard.press("Tab")
        pg.keyboard.press("Tab")
        outline = pg.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        assert outline not in ("none", ""), outline
        p.check_clean()
    finally:
        context.close()


@pytest.mark.browser
def test_custom_role_list_from_the_form(page: Page, server: Server, shots: Path) -> None:
    """Mode "custom": the form takes a role list (one slot per player); a list
    that cannot be dealt is refused naming the slot, and nothing is created;
    a good one makes a lobby whose page shows the list."""
    pg = page.page
    pg.goto(page.base + "/#/")
    pg.fill(tid("player-name"), "Cora")
    pg.dispatch_event(tid("player-name"), "change")
    pg.wait_for_selector(tid("create-seat-7"))
    pg.select_option(tid("create-mode"), "custom")
    assert pg.is_visible(tid("create-custom-roles"))
    before = len(get_json(server.base, "/api/lobbies"))
    pg.fill(tid("create-custom-roles"),
            "Jailor, Sheriff, Jailor, Doctor, Godfather, Random Mafia, Neutral Killing")
    assert pg.input_value(tid("create-players")) == "7"
    pg.click(tid("create-submit"))
    pg.wait_for_selector(f"{tid('home-error')}:not([hidden])")
    assert "slot 3" in pg.text_content(tid("home-error"))
    assert len(get_json(server.base, "/api/lobbies")) == before
    slots = ("Jailor, Town Investigative, Town Protective, Random Town, Godfather, Any, "
             "Survivor, Any")
    pg.fill(tid("create-custom-roles"), slots)
    assert pg.input_value(tid("create-players")) == "8"
    pg.click(tid("create-submit"))
    pg.wait_for_selector(tid("lobby-seat-row-8"))
    assert "Town Investigative" in pg.text_content(tid("lobby-roles"))
    pg.screenshot(path=str(shots / "custom-role-list-lobby.png"), full_page=True)
    page.errors = [e for e in page.errors if "status of 422" not in e]  # the refused list
    page.check_clean()
