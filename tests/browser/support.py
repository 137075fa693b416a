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

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "REPO", "free_port", "get_json", "sync_api",
           "write_store"]


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
