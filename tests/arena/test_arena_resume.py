"""A `tossim arena` killed (SIGKILL) in the middle of its games and started
again: every planned game ends up played exactly once, and the games that
were live when it died resume from their stored log to the same end as an
uninterrupted run (scripted seats in fast games replay exactly)."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENTRIES = ["--entry", "a=scripted", "--entry", "b=scripted", "--entry", "c=scripted"]


def _arena(db: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "tossim.cli", "arena", *ENTRIES, "--games", "6",
            "--players", "11", "--seed", "4", "--parallel", "2", "--arena", "k",
            "--db", f"sqlite+aiosqlite:///{db}", *extra]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "120"}


def _statuses(db: Path) -> dict[str, str | None]:
    """planned game id -> its game's status (None: not made yet)."""
    with sqlite3.connect(db, timeout=10) as conn:
        rows = conn.execute("SELECT a.game_id, g.status FROM arena_games a "
                            "LEFT JOIN games g ON g.id = a.game_id ORDER BY a.idx").fetchall()
    return dict(rows)


def _logs(db: Path) -> list[tuple[list[tuple[int, str, str]], int, str]]:
    """Per planned game, in plan order: its commands, version and result."""
    out = []
    with sqlite3.connect(db, timeout=10) as conn:
        for (gid,) in conn.execute("SELECT game_id FROM arena_games ORDER BY idx").fetchall():
            cmds = conn.execute("SELECT seq, origin, data FROM commands WHERE game_id = ? "
                                "ORDER BY seq", (gid,)).fetchall()
            version, result = conn.execute("SELECT version, result FROM games WHERE id = ?",
                                           (gid,)).fetchone()
            out.append((cmds, version, result))
    return out


def test_killed_arena_resumes_without_losing_or_duplicating_a_game(tmp_path: Path) -> None:
    db = tmp_path / "killed.db"
    log = (tmp_path / "first.log").open("wb")
    proc = subprocess.Popen(_arena(db), stdout=log, stderr=subprocess.STDOUT, env=_env(),
                            cwd=tmp_path)
    live_at_kill: set[str] = set()
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            if not db.exists():
                continue
            try:
                st = _statuses(db)
            except sqlite3.OperationalError:  # tables not made yet
                continue
            done = sum(s == "finished" for s in st.values())
            live = {g for g, s in st.items() if s == "live"}
            if done >= 2 and live:
                proc.kill()  # SIGKILL: no clean-up at all
                live_at_kill = live
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
        log.close()
    assert live_at_kill, "the arena was not caught in the middle: " + \
        (tmp_path / "first.log").read_text(errors="replace")[-2000:]
    before = _statuses(db)
    assert sum(s == "finished" for s in before.values()) < 6

    # resumed by its id alone (the spec is stored)
    again = subprocess.run([sys.executable, "-m", "tossim.cli", "arena", "--arena", "k",
                            "--db", f"sqlite+aiosqlite:///{db}"], capture_output=True,
                           text=True, env=_env(), cwd=tmp_path, timeout=180)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "6/6 games finished" in again.stderr
    resumed = re.search(r"(\d+) resumed", again.stderr)
    assert resumed and int(resumed.group(1)) == len(live_at_kill)  # resumed, not restarted

    after = _statuses(db)
    assert list(after) == list(before)  # the same planned games, no new ones
    assert set(after.values()) == {"finished"}
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM games").fetchone()[0] == 6
        assert conn.execute("SELECT status FROM arenas WHERE id = 'k'").fetchone()[0] \
            == "finished"
    # every log is contiguous (nothing lost, nothing twice) and equals an
    # uninterrupted run of the same arena, game by game
    clean = tmp_path / "clean.db"
    subprocess.run(_arena(clean), capture_output=True, env=_env(), cwd=tmp_path,
                   timeout=180, check=True)
    killed_logs, clean_logs = _logs(db), _logs(clean)
    for (cmds, version, result), (ref, ref_version, ref_result) in zip(
            killed_logs, clean_logs, strict=True):
        assert [c[0] for c in cmds] == list(range(1, len(cmds) + 1))
        assert [(c[1], c[2]) for c in cmds] == [(c[1], c[2]) for c in ref]
        assert (version, result) == (ref_version, ref_result)
    # a finished arena run again plays nothing
    third = subprocess.run(_arena(db), capture_output=True, text=True, env=_env(),
                           cwd=tmp_path, timeout=60)
    assert third.returncode == 0 and "(0 this run, 0 resumed)" in third.stderr
