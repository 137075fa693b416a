"""What the browser tests share: Debian's Chromium and Playwright (the module
is skipped where either is missing, outside CI), a free port, JSON over HTTP,
and writing into a server's store as its runner would.

Importing this module from a test module skips that module (allow_module_level)
when Chromium or Playwright is missing; in CI (CI=true) both must be there.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import socket
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("CI") == "true":  # CI installs both: a missing one is a failure
    import playwright.sync_api as sync_api
else:
    sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = os.environ.get("TOSSIM_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
REPO = Path(__file__).resolve().parents[2]

if not Path(CHROMIUM).exists():
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"{CHROMIUM} is missing: .ci/run should have installed chromium")
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "PHONE", "DESKTOP", "REPO", "free_port", "get_json",
           "layout_problems", "sync_api", "write_store"]

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}


def layout_problems(pg: Any, *, touch: bool) -> list[str]:
    """What a person would trip over on this page at its viewport size: a
    page wider than the screen (sideways scrolling), and on a touch screen
    any visible control smaller than 44 x 44 px (WCAG 2.5.5). Controls placed
    off-screen on purpose (the skip link until focused) and links inside a
    sentence (the standard's "inline" exception) do not count."""
    width = pg.evaluate("document.documentElement.scrollWidth")
    inner = pg.evaluate("window.innerWidth")
    problems = [f"page is {width}px wide on a {inner}px screen"] if width > inner else []
    if touch:
        small = pg.evaluate("""() => [...document.querySelectorAll(
            'a[href], button, select, input, textarea, summary, label:has(> input)')]
          .filter(e => e.offsetParent !== null && !e.disabled)
          // a link inside a sentence is exempt (WCAG 2.5.5 "inline")
          .filter(e => !(e.tagName === 'A' && getComputedStyle(e).display === 'inline'
                         && e.parentElement && e.parentElement.textContent.trim().length
                            > e.textContent.trim().length))
          .map(e => [e, e.getBoundingClientRect()])
          .filter(([e, r]) => r.right > 0 && r.bottom > 0 && r.width > 0
                  && !(e.closest('label') && e.closest('label') !== e
                       && e.closest('label').getBoundingClientRect().height >= 44))
          .filter(([e, r]) => r.width < 44 || r.height < 44)
          .map(([e, r]) => `${e.tagName.toLowerCase()} "${(e.textContent || e.getAttribute(
               'data-testid') || '').trim().slice(0, 24)}" ${Math.round(r.width)}x${Math.round(
               r.height)}`)""")
        problems += [f"small tap target: {x}" for x in small]
    return problems


def free_port() -> int:
    """A loopback port nobody listens on (never a fixed one: tests run side by side)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=5) as r:
        return json.loads(r.read())


def write_store(db: str, write: Callable[[Any], Awaitable[Any]]) -> None:
    """Write into a running server's store (`write(store)`), as its runner
    would: the SQLite file is in WAL mode, so this second writer waits its
    turn. Playwright's sync API keeps an event loop of its own, so ours runs
    in a thread."""
    from tossim.store import Store

    async def run() -> None:
        store = await Store.open(db, migrate=False)
        try:
            await write(store)
        finally:
            await store.close()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, run()).result(timeout=60)
