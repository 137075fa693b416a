"""The arena leaderboard page (web/leaderboard.html) in headless Chromium:
an arena played by `tossim arena`, then `tossim serve` on the same database;
the page lists the arena and shows its table and plots. Run with
`pytest -m browser tests/browser`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path

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
)

pytestmark = pytest.mark.browser

SCREENSHOT = Path("/tmp/tossim-leaderboard.png")

@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("tossim-leaderboard")
    db = f"sqlite+aiosqlite:///{tmp}/t.db"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    tossim = [sys.executable, "-m", "tossim.cli"]
    subprocess.run([*tossim, "arena", "--entry", "alpha=scripted", "--entry", "beta=scripted",
                    "--entry", "gamma=scripted", "--games", "6", "--players", "9",
                    "--arena", "lb1", "--db", db], check=True, env=env, cwd=tmp,
                   capture_output=True, timeout=180)
    port = free_port()
    log = tmp / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([*tossim, "serve", "--host", "127.0.0.1", "--port", str(port),
                                 "--db", db], stdout=out, stderr=subprocess.STDOUT,
                                env=env, cwd=tmp)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if get_json(url, "/api/health")["status"] == "ok":
                break
        except (urllib.error.URLError, OSError, ValueError):
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("tossim serve did not start:\n" + log.read_text(errors="replace"))
        time.sleep(0.2)
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_leaderboard_fits_the_screen(base: str, viewport: dict[str, int]) -> None:
    """The wide tables scroll inside their box; the page itself never
    scrolls sideways, and on a phone every control takes a finger."""
    touch = viewport is PHONE
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=viewport, has_touch=touch)
        page.goto(base + "/leaderboard.html")
        page.get_by_test_id("leaderboard-table").wait_for(timeout=15000)
        problems = layout_problems(page, touch=touch)
        page.screenshot(path=f"/tmp/tossim-leaderboard-{'phone' if touch else 'desktop'}.png",
                        full_page=True)
        browser.close()
    assert not problems, problems


def test_leaderboard_page_shows_the_arena(base: str) -> None:
    report = get_json(base, "/api/arenas/lb1/report")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 1400})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(base + "/leaderboard.html")
        table = page.get_by_test_id("leaderboard-table")
        table.wait_for(timeout=15000)
        rows = table.locator("tbody tr")
        assert rows.count() == 3
        # the page's order and figures are the report's
        for i, entry in enumerate(report["entries"]):
            cells = rows.nth(i).locator("td").all_inner_texts()
            assert cells[0] == str(entry["rank"])
            assert cells[1] == f"{entry['label']} ({entry['entry']})"
            assert cells[2] == f"{entry['rating']['ordinal']:.2f}"
            assert cells[6].startswith(f"{100 * entry['win']['rate']:.1f}%")
        assert "6 of 6 games finished" in page.get_by_test_id("arena-summary").inner_text()
        for plot in ("plot-win", "plot-rating", "plot-factions", "plot-votes"):
            svg = page.get_by_test_id(plot)
            assert svg.is_visible() and svg.locator("rect").count() >= 3
        assert page.get_by_test_id("factions-table").locator("tbody tr").count() >= 6
        assert page.get_by_test_id("roles-table").locator("tbody tr").count() >= 6
        assert page.get_by_test_id("reliability-table").locator("tbody tr").count() == 3
        options = page.get_by_test_id("arena-select").locator("option").all_inner_texts()
        assert options == ["lb1: alpha, beta, gamma (6/6)"]
        page.screenshot(path=str(SCREENSHOT), full_page=True)
        # an unknown arena in the address falls back to the newest one
        page.goto(base + "/leaderboard.html?arena=nope")
        page.get_by_test_id("leaderboard-table").wait_for(timeout=15000)
        assert not errors, errors
        browser.close()
