"""`tossim bench server`: a real server under spectator load, and its figures.

`run_bench` starts the server (`tossim serve`) in a subprocess on loopback,
creates all-AI lobbies over HTTP and starts them, and connects websocket
spectators spread over the games (public, omniscient and player points of
view) from load-generator processes: `clients` of them (one per CPU by
default), each with its own event loop, the spectators dealt round robin, so
one process's receive loop is not the bottleneck. It measures what they
receive:

- events and messages delivered per second (summed over spectators) in the
  measuring window: for fast games from the first start until every spectator
  has seen its game end; for paced games a steady window (`duration`, 30 s by
  default) that opens once every spectator is connected;
- delivery latency: receive time minus the message's `published_at` (the
  actor's `time.time()` when it published the batch; one machine, one clock).
  The first events message of a connection is a catch-up of what happened
  before it connected and is not counted. A message's `published_at` is its
  newest batch's, so each event's latency from its own batch is also given
  (`event_latencies`, a lower bound);
- the load generator's own share of that: each process samples how late its
  event loop wakes (every `LAG_TICK` s) and its CPU time; a message that
  arrives while the loop is late is read that much later, so lag comparable
  to the latency means the figure measures the client, not the server;
- correctness: every spectator's event versions strictly increase, and its
  events equal those of a fresh `GET /api/games/{id}/replay?viewer=...` for the
  same viewer up to the last version it was sent (no event lost, duplicated,
  altered or leaked);
- the server process's CPU seconds, from /proc/<pid>/stat (psutil is not a
  dependency), and the whole machine's, from /proc/stat: on a shared machine
  the figures are only as good as its quiet.

While connected a spectator does as little as it can per message: it keeps
the bytes and the receive time, and looks for the game's end with a substring
test; every message is parsed, counted and checked after the run has stopped.
The load-generator processes run with their garbage collectors off (full
collections paused a generator that kept every parsed event for up to 0.5 s,
which showed as delivery latency). With TOSSIM_BENCH_PROFILE=FILE the server
runs under cProfile and writes its stats to FILE when it stops.

It is bounded: a fixed number of games and spectators, a measuring window
capped by `duration`, timeouts on every other step, and it stops the server
and the load generators before returning. It prints nothing; `report_lines`
formats results.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import gc
import json
import multiprocessing
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.extensions.permessage_deflate import PerMessageDeflate

PLAYERS = 15
# The viewers of a game's spectators, in turn: half public, a fifth
# omniscient, three tenths one player's point of view.
VIEWER_MIX = ("public", "omniscient", "player", "public", "player",
              "omniscient", "public", "player", "public", "public")
CONNECT_CONCURRENCY = 64  # websocket handshakes in flight at once
HTTP_CONCURRENCY = 8
SETUP_TIMEOUT = 120.0  # seconds for the server to start, and for lobbies and starts
CHECK_TIMEOUT = 300.0  # seconds for the replays of the correctness check
FAST_CAP = 300.0  # default measuring window cap for fast games (paced: 30 s)
PACED_CAP = 30.0
LAG_TICK = 0.01  # seconds between a load-generator process's event-loop lag samples


@dataclass
class BenchConfig:
    games: int = 100
    spectators: int = 1000
    speed: str = "paced"  # fast | paced
    pace: float = 0.2
    duration: float | None = None  # measuring window cap (None: 30 s paced, 300 s fast)
    db: str | None = None  # None: a SQLite file in a temporary folder
    redis: str | None = None
    port: int = 0  # 0: any free port
    compression: bool = True  # permessage-deflate, as browsers negotiate it
    seed: int = 1
    label: str = "run"
    clients: int | None = None  # load-generator processes (None: `default_clients`)

    @property
    def cap(self) -> float:
        if self.duration is not None:
            return self.duration
        return FAST_CAP if self.speed == "fast" else PACED_CAP


@dataclass
class BenchResult:
    label: str
    games: int
    spectators: int
    speed: str
    pace: float | None
    db_kind: str
    bus: str
    # seconds measured: fast, from the first game start to the last spectator's
    # end (or the cap); paced, from the last spectator's hello, for the cap
    window: float
    capped: bool  # the window ended at the cap, not because every game ended
    games_finished: int
    connected: int  # spectators that got their hello
    failed: int  # spectators refused, timed out or cut off with an error
    viewers: dict[str, int]
    events: int  # events delivered, summed over spectators
    messages: int  # websocket messages received, summed over spectators
    catchup_events: int  # events in each connection's first (catch-up) message, in all
    setup: float = 0.0  # seconds from the first start to the last spectator's hello
    connect_times: list[float] = field(repr=False, default_factory=list)  # handshake to hello
    # each event's latency from its own batch's publish time (a lower bound; see
    # event_latencies), in the window
    event_latencies: list[float] = field(repr=False, default_factory=list)
    started: float = 0.0  # seconds from the first start to the last
    latencies: list[float] = field(repr=False, default_factory=list)  # seconds, in the window
    # latencies before the window (paced runs: while spectators were connecting)
    setup_latencies: list[float] = field(repr=False, default_factory=list)
    # how far the games got in the window: the sum over games of the version
    # their spectators were sent at its end less that at its start
    window_versions: int = 0
    game_version: int = 0  # events the games made in all (the sum of their versions)
    game_commands: int = 0  # commands the games applied in all
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    altered: int = 0  # events whose content differs from the replay's
    unexpected: int = 0  # events the replay does not show this viewer (a leak)
    incomplete: int = 0  # spectators of a finished game that did not get its end
    checked: int = 0  # spectators compared with a replay
    replays: int = 0  # replays fetched
    server_cpu: float = 0.0  # server CPU seconds (user + system) during the window
    server_cpu_total: float = 0.0  # from server start to before it was stopped
    client_cpu: float = 0.0  # the load-generator processes' CPU seconds in the window, summed
    clients: int = 1  # load-generator processes
    client_busiest: float = 0.0  # the busiest one's CPU seconds per window second
    # the load generators' event-loop lag samples in the window: how late they
    # woke, every LAG_TICK s; what they show is delay on the client's side
    client_lags: list[float] = field(repr=False, default_factory=list)
    deflate: int = 0  # spectators whose server negotiated permessage-deflate
    server_rss_mb: float = 0.0  # the server's peak resident memory
    machine_busy: float = 0.0  # the fraction of all the machine's CPU time busy in the window
    errors: list[str] = field(default_factory=list)
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average before and after

    @property
    def events_per_s(self) -> float:
        return self.events / self.window if self.window > 0 else 0.0

    @property
    def messages_per_s(self) -> float:
        return self.messages / self.window if self.window > 0 else 0.0

    def latency_ms(self, q: float, setup: bool = False) -> float | None:
        """The q-quantile (nearest rank) of the delivery latency in the window
        (with `setup`: before it), in ms."""
        return _quantile_ms(self.setup_latencies if setup else self.latencies, q)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.out_of_order or self.altered
                    or self.unexpected or self.failed or self.checked < self.connected)


def viewer_for(j: int, games: int) -> tuple[int, str]:
    """Spectator j's game (round robin) and viewer, so that every game gets
    the whole mix of viewers."""
    g, r = j % games, j // games
    kind = VIEWER_MIX[(g + r) % len(VIEWER_MIX)]
    if kind == "player":
        return g, str(1 + (g + 7 * r) % PLAYERS)
    return g, kind


def raise_nofile(needed: int) -> int:
    """Raise this process's open-file limit (the server subprocess inherits
    it) to at least `needed` if the hard limit allows; returns the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        new = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        soft = new
    return soft


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads), from /proc."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) "
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of stat(5)
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def proc_peak_rss_mb(pid: int) -> float:
    """A process's peak resident memory (VmHWM) in MiB, from /proc."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU time of the whole machine so far, all CPUs, from /proc/stat."""
    try:
        first = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return 0.0, 0.0
    ticks = [float(x) for x in first[1:9]]  # user nice system idle iowait irq softirq steal
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


def self_cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def db_kind(url: str) -> str:
    return "PostgreSQL" if url.startswith("postgresql") else (
        "SQLite" if url.startswith("sqlite") else url.split(":", 1)[0])


class ServerProcess:
    """`tossim serve` in a subprocess, its log in a file."""

    def __init__(self, db: str, redis: str | None, port: int, pace: float,
                 log_path: Path) -> None:
        self.db, self.redis, self.port, self.pace = db, redis, port, pace
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        cmd = [sys.executable]
        profile = os.environ.get("TOSSIM_BENCH_PROFILE")  # cProfile the server into this file
        if profile:
            cmd += ["-m", "cProfile", "-o", profile]
        cmd += ["-m", "tossim.cli", "serve", "--host", "127.0.0.1", "--port", str(self.port),
                "--db", self.db, "--no-resume"]
        if self.redis:
            cmd += ["--redis", self.redis]
        # every bench client is on this machine: no per-address limits
        env = dict(os.environ, TOSSIM_PACE=str(self.pace), TOSSIM_DEMO="false",
                   TOSSIM_LOBBY_RATE_LIMIT="1000000", TOSSIM_MAX_CONNECTIONS_PER_CLIENT="0")
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                         stdin=subprocess.DEVNULL)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def cpu(self) -> float:
        return proc_cpu_seconds(self.pid) if self.proc is not None else 0.0

    async def wait_ready(self, client: httpx.AsyncClient, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}:\n"
                                   f"{self.log_tail()}")
            with contextlib.suppress(Exception):
                r = await client.get(f"{self.base}/api/health", timeout=2.0)
                if r.status_code == 200 and r.json().get("status") == "ok":
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not answer in {timeout:.0f} s:\n"
                                   f"{self.log_tail()}")
            await asyncio.sleep(0.1)

    def stop(self, timeout: float = 20.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)  # uvicorn shuts down gracefully
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class _Spectator:
    """One websocket spectator, in a load-generator process. While connected
    it only keeps each message's bytes and receive time (the cheapest honest
    record); they are parsed once the run has stopped (`parse`)."""

    index: int
    game: int
    game_id: str
    viewer: str
    raw: list[tuple[float, bytes]] = field(default_factory=list)
    hello: bool = False
    ended: bool = False
    deflate: bool = False  # the server accepted permessage-deflate
    error: str | None = None
    # filled in by `parse`
    events: list[dict[str, Any]] = field(default_factory=list)
    catchup: int = 0
    last_version: int = 0  # `version` of the last events message
    out_of_order: int = 0
    # (received, published_at, version, event v's) of each events message but
    # the catch-up, and whether it came in the window
    log: list[tuple[float, float, int, list[int], bool]] = field(default_factory=list)

    def parse(self, t0: float, t1: float, out: _Counts) -> None:
        """Parse what was received and count it: messages and events received
        in the window [t0, t1] (wall time), each message's latency (in the
        window or, before it, the setup latencies), the versions sent by t0
        and t1. The first events message is a catch-up of what happened
        before the connection and has no latency."""
        first_events = True
        last_v = 0
        for received, data in self.raw:
            counting = t0 <= received <= t1
            out.messages += counting
            msg = json.loads(data)
            if msg.get("type") != "events":
                continue
            events = msg["events"]
            for e in events:
                if e["v"] <= last_v:
                    self.out_of_order += 1
                last_v = max(last_v, e["v"])
            self.events.extend(events)
            version = int(msg["version"])
            self.last_version = max(self.last_version, version)
            if received <= t0:
                out.version0[self.game] = max(out.version0.get(self.game, 0), version)
            if received <= t1:
                out.version1[self.game] = max(out.version1.get(self.game, 0), version)
            if counting:
                out.events += len(events)
            if first_events:
                first_events = False
                self.catchup = len(events)
            elif msg.get("published_at") is not None and received <= t1:
                published = float(msg["published_at"])
                (out.latencies if counting else out.setup_latencies).append(received - published)
                self.log.append((received, published, version, [e["v"] for e in events],
                                 counting))
        self.raw = []


@dataclass
class _Counts:
    """What a load-generator process measured, merged over processes by the
    parent (`merge`)."""

    events: int = 0
    messages: int = 0
    latencies: list[float] = field(default_factory=list)
    setup_latencies: list[float] = field(default_factory=list)
    version0: dict[int, int] = field(default_factory=dict)  # game -> version sent by t0
    version1: dict[int, int] = field(default_factory=dict)  # ... and by t1
    connect_times: list[float] = field(default_factory=list)
    # (game, viewer, log) of each spectator: for `event_latencies`
    logs: list[tuple[int, str, list[tuple[float, float, int, list[int], bool]]]] = field(
        default_factory=list)
    diffs: Counter[str] = field(default_factory=Counter)
    checked: int = 0
    connected: int = 0
    failed: int = 0
    catchup: int = 0
    incomplete: int = 0
    deflate: int = 0  # spectators whose messages came compressed
    errors: list[str] = field(default_factory=list)
    cpu: float = 0.0  # the process's CPU seconds in the window
    cpu_fraction: float = 0.0  # ... as a fraction of the window
    lags: list[float] = field(default_factory=list)  # its event-loop lag samples in the window

    def merge(self, other: _Counts) -> None:
        self.events += other.events
        self.messages += other.messages
        self.latencies += other.latencies
        self.setup_latencies += other.setup_latencies
        for mine, theirs in ((self.version0, other.version0), (self.version1, other.version1)):
            for g, v in theirs.items():
                mine[g] = max(mine.get(g, 0), v)
        self.connect_times += other.connect_times
        self.logs += other.logs
        self.diffs.update(other.diffs)
        self.checked += other.checked
        self.connected += other.connected
        self.failed += other.failed
        self.catchup += other.catchup
        self.incomplete += other.incomplete
        self.deflate += other.deflate
        self.errors += other.errors
        self.cpu += other.cpu
        self.cpu_fraction = max(self.cpu_fraction, other.cpu_fraction)
        self.lags += other.lags


def _is_end(data: bytes) -> bool:
    """Whether an events message shows the game over. Most messages carry
    `"result":null` and no ended phase, and are not parsed at all."""
    if b'"result":null' in data and b'"phase":"ended"' not in data:
        return False
    msg = json.loads(data)
    state = msg.get("state") or {}
    return msg.get("type") == "events" and (
        state.get("result") is not None or state.get("phase") == "ended")


async def _spectate(ws_base: str, spec: _Spectator, gate: asyncio.Semaphore,
                    compression: bool, report: Callable[[tuple[Any, ...]], None]) -> None:
    """Follow one game as one spectator until it ends (or is cancelled), with
    the `websockets` client (control frames answered by it; no pings of our
    own; permessage-deflate offered when asked for). Per message: the bytes
    and their receive time kept, and a substring test for the game's end;
    nothing is parsed until the run is over (`_Spectator.parse`)."""
    url = f"{ws_base}/ws/games/{spec.game_id}/watch?viewer={spec.viewer}"
    ws: ClientConnection | None = None
    try:
        async with gate:
            began = time.monotonic()
            async with asyncio.timeout(60):
                ws = await connect(url, compression="deflate" if compression else None,
                                   max_size=None, ping_interval=None, open_timeout=None,
                                   close_timeout=5)
        spec.deflate = any(isinstance(x, PerMessageDeflate) for x in ws.protocol.extensions)
        raw = spec.raw
        while True:
            message = await ws.recv(decode=False)
            raw.append((time.time(), message))
            if not spec.hello:
                if message.startswith(b'{"type":"hello"'):
                    spec.hello = True
                    report(("hello", time.monotonic() - began))
            elif _is_end(message):
                spec.ended = True
                break
    except asyncio.CancelledError:
        raise
    except InvalidStatus as exc:
        spec.error = f"handshake refused: HTTP {exc.response.status_code}"
    except ConnectionClosed as exc:
        if not spec.ended and spec.error is None:
            code = exc.rcvd.code if exc.rcvd is not None else None
            if code is None:
                spec.error = "connection lost (closed)"
            elif code != 1000:
                spec.error = f"closed by the server: {code}"
    except Exception as exc:
        spec.error = f"{type(exc).__name__}: {exc}"
    finally:
        if ws is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(ws.close())
        report(("done", spec.hello))


def _worker_main(conn: Connection, ws_base: str, compression: bool, connect_gate: int) -> None:
    """A load-generator process: its own event loop (uvloop when installed)
    and garbage collector off (see the module's docstring)."""
    gc.disable()
    try:
        import uvloop
        factory: Callable[[], asyncio.AbstractEventLoop] | None = uvloop.new_event_loop
    except ImportError:  # pragma: no cover
        factory = None
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(_worker(conn, ws_base, compression, connect_gate))


async def _lag_monitor(samples: list[tuple[float, float, float]]) -> None:
    """Every LAG_TICK seconds: (wall time, how late the loop woke, this
    process's CPU seconds). A loop that wakes late delays every message it
    receives by as much: that part of the latency is the client's."""
    while True:  # (perf_counter: uvloop's own clock counts whole milliseconds)
        before = time.perf_counter()
        await asyncio.sleep(LAG_TICK)
        lag = max(0.0, time.perf_counter() - before - LAG_TICK)
        samples.append((time.time(), lag, self_cpu_seconds()))


async def _worker(conn: Connection, ws_base: str, compression: bool,
                  connect_gate: int) -> None:
    """Commands from the parent, on a pipe: ("spectate", [(index, game,
    game_id, viewer)]) connects spectators; ("stop",) ends them and answers
    the games whose end one of them saw; ("check", t0, t1, replay folder,
    capped) parses, compares with the replays and answers a `_Counts`."""
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[Any] = asyncio.Queue()

    def read() -> None:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):  # the parent is gone
                loop.call_soon_threadsafe(inbox.put_nowait, ("exit",))
                return
            loop.call_soon_threadsafe(inbox.put_nowait, msg)
            if msg[0] == "check":
                return

    threading.Thread(target=read, daemon=True).start()
    specs: list[_Spectator] = []
    tasks: list[asyncio.Task[None]] = []
    gate = asyncio.Semaphore(connect_gate)
    samples: list[tuple[float, float, float]] = []
    monitor = asyncio.create_task(_lag_monitor(samples))
    while True:
        msg = await inbox.get()
        if msg[0] == "spectate":
            for index, game, game_id, viewer in msg[1]:
                spec = _Spectator(index, game, game_id, viewer)
                specs.append(spec)
                tasks.append(asyncio.create_task(_spectate(
                    ws_base, spec, gate, compression, conn.send)))
        elif msg[0] == "stop":
            monitor.cancel()
            for t in tasks:
                t.cancel()
            await asyncio.gather(monitor, *tasks, return_exceptions=True)
            with contextlib.suppress(OSError):
                conn.send(("stopped", sorted({s.game_id for s in specs if s.ended})))
        elif msg[0] == "check":
            _, t0, t1, folder, capped = msg
            conn.send(("result", _check(specs, samples, t0, t1, Path(folder), capped)))
            return
        elif msg[0] == "exit":
            return


def _check(specs: list[_Spectator], samples: list[tuple[float, float, float]],
           t0: float, t1: float, folder: Path, capped: bool) -> _Counts:
    """Parse every spectator's messages, count them and compare its events
    with the fresh replay for its game and viewer (in `folder`)."""
    out = _Counts()
    replays: dict[tuple[str, str], dict[str, Any]] = {}
    for s in specs:
        s.parse(t0, t1, out)
        out.diffs["out_of_order"] += s.out_of_order
        out.connected += s.hello
        out.failed += s.error is not None
        out.catchup += s.catchup
        out.deflate += s.deflate
        if s.error:
            out.errors.append(f"spectator {s.index} ({s.game_id[:8]}, {s.viewer}): {s.error}")
        out.logs.append((s.game, s.viewer, s.log))
        if not s.hello:
            continue
        key = (s.game_id, s.viewer)
        if key not in replays:
            replays[key] = json.loads((folder / _replay_name(*key)).read_text())
        replay = replays[key]
        out.diffs.update(_compare(s, replay["events"]))
        out.checked += 1
        if replay["status"] == "finished" and not s.ended and not capped:
            out.incomplete += 1
    window = [x for x in samples if t0 <= x[0] <= t1]
    out.lags = [lag for _, lag, _ in window]
    if window:
        before = [x for x in samples if x[0] <= t0]
        cpu0 = before[-1][2] if before else window[0][2]
        out.cpu = window[-1][2] - cpu0
        out.cpu_fraction = out.cpu / max(t1 - t0, 1e-9)
    return out


def _replay_name(game_id: str, viewer: str) -> str:
    return f"{game_id}-{viewer}.json"


class _Generator:
    """The load generator: `processes` worker processes, each with its own
    event loop, the spectators dealt round robin among them (so one game's
    spectators are spread over all of them). Progress (hellos, spectators
    done) comes back on each worker's pipe, read by a thread."""

    def __init__(self, processes: int, ws_base: str, compression: bool,
                 spectators: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.loop = asyncio.get_running_loop()
        self.conns: list[Connection] = []
        self.procs: list[Any] = []
        self.hellos = 0
        self.connect_times: list[float] = []
        self.remaining = spectators
        self.all_connected = asyncio.Event()
        self.all_done = asyncio.Event()
        if spectators == 0:
            self.all_connected.set()
            self.all_done.set()
        self.spectators = spectators
        self.replies: list[asyncio.Queue[Any]] = []
        gate = max(1, CONNECT_CONCURRENCY // processes)
        for _ in range(processes):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker_main, args=(child, ws_base, compression, gate),
                               daemon=True)
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)
            replies: asyncio.Queue[Any] = asyncio.Queue()
            self.replies.append(replies)
            threading.Thread(target=self._read, args=(parent, replies), daemon=True).start()
        self.next = 0

    def _read(self, conn: Connection, replies: asyncio.Queue[Any]) -> None:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                self.loop.call_soon_threadsafe(replies.put_nowait, ("gone",))
                return
            if msg[0] in ("hello", "done"):
                self.loop.call_soon_threadsafe(self._progress, msg)
            else:
                self.loop.call_soon_threadsafe(replies.put_nowait, msg)

    def _progress(self, msg: tuple[Any, ...]) -> None:
        if msg[0] == "hello":
            self.hellos += 1
            self.connect_times.append(msg[1])
            if self.hellos == self.spectators:
                self.all_connected.set()
        else:
            self.remaining -= 1
            if self.remaining <= 0:
                self.all_done.set()
                self.all_connected.set()  # nobody left to connect

    def spectate(self, specs: list[tuple[int, int, str, str]]) -> None:
        """Deal these spectators to the workers, round robin."""
        share: list[list[tuple[int, int, str, str]]] = [[] for _ in self.conns]
        for spec in specs:
            share[self.next % len(self.conns)].append(spec)
            self.next += 1
        for conn, mine in zip(self.conns, share, strict=True):
            if mine:
                conn.send(("spectate", mine))

    async def _ask(self, msg: tuple[Any, ...], answer: str, timeout: float) -> list[Any]:
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.send(msg)
        out = []
        async with asyncio.timeout(timeout):
            for replies in self.replies:
                reply = await replies.get()
                if reply[0] != answer:
                    raise RuntimeError(f"a load-generator process answered {reply[0]!r}")
                out.append(reply[1])
        return out

    async def stop(self) -> set[str]:
        """End every spectator; the games whose end a spectator saw."""
        ended: set[str] = set()
        for games in await self._ask(("stop",), "stopped", SETUP_TIMEOUT):
            ended.update(games)
        return ended

    async def check(self, t0: float, t1: float, folder: Path, capped: bool) -> _Counts:
        out = _Counts()
        for counts in await self._ask(("check", t0, t1, str(folder), capped), "result",
                                      CHECK_TIMEOUT):
            out.merge(counts)
        return out

    def close(self) -> None:
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.close()
        for proc in self.procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join(5)


async def _first_of(*events: asyncio.Event, timeout: float) -> bool:
    """Wait until one of the events is set; False on timeout."""
    waits = [asyncio.create_task(e.wait()) for e in events]
    try:
        done, _ = await asyncio.wait(waits, timeout=max(timeout, 0.0),
                                     return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
    return bool(done)


def event_latencies(
        logs: list[tuple[int, str, list[tuple[float, float, int, list[int], bool]]]],
) -> list[float]:
    """Each event's delivery latency in the window: its receive time less the
    publish time of the batch it was stored in, where a message's
    `published_at` is only that of the newest batch it carries. The batches
    of a game are learnt from all its spectators' messages (a message's
    version ends a batch); where every spectator got a batch merged with a
    later one, the later one's time is used, so this is a lower bound.
    Versions count in each viewer's own sequence, so batches are learnt per
    game and viewer. `logs`: (game, viewer, log) of each spectator."""
    batches: dict[tuple[int, str], dict[int, float]] = {}
    for game, viewer, log in logs:
        known = batches.setdefault((game, viewer), {})
        for _received, published, version, _vs, _counted in log:
            known[version] = min(published, known.get(version, published))
    out: list[float] = []
    for game, viewer, log in logs:
        known = batches[(game, viewer)] if log else {}
        ends = sorted(known)
        for received, _published, _version, vs, counted in log:
            if not counted:
                continue
            for v in vs:
                i = bisect.bisect_left(ends, v)
                if i < len(ends):
                    out.append(received - known[ends[i]])
    return out


def _compare(spec: _Spectator, replay_events: list[dict[str, Any]]) -> dict[str, int]:
    """Lost, duplicated, altered and unexpected events of one spectator against
    the replay's events up to the last version it was sent."""
    expected = {e["v"]: e for e in replay_events if e["v"] <= spec.last_version}
    counts = Counter(e["v"] for e in spec.events)
    got = {e["v"]: e for e in spec.events}
    return {
        "lost": sum(1 for v in expected if v not in counts),
        "duplicated": sum(n - 1 for n in counts.values() if n > 1),
        "unexpected": sum(1 for v in counts if v not in expected),
        "altered": sum(1 for v, e in got.items() if v in expected and expected[v] != e),
    }


def default_clients(spectators: int) -> int:
    """Load-generator processes by default: one per CPU (at most 4), and no
    more than one per 100 spectators."""
    return max(1, min(os.cpu_count() or 1, 4, spectators // 100))


async def run_bench(cfg: BenchConfig) -> BenchResult:
    """One run: start a server, load it, check what the spectators got, stop it."""
    if cfg.speed not in ("fast", "paced"):
        raise ValueError("speed is fast or paced")
    if cfg.games < 1 or cfg.spectators < 0:
        raise ValueError("at least one game, and no negative number of spectators")
    if cfg.clients is not None and cfg.clients < 1:
        raise ValueError("at least one load-generator process")
    raise_nofile(2 * cfg.spectators + 1024)
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="tossim-bench-") as tmp:
        db = cfg.db or f"sqlite+aiosqlite:///{tmp}/bench.db"
        port = cfg.port or free_port()
        server = ServerProcess(db, cfg.redis, port, cfg.pace, Path(tmp) / "server.log")
        server.start()
        try:
            result = await _run(cfg, server, db, Path(tmp))
        finally:
            server.stop()
    result.load = (load0, os.getloadavg()[0])
    return result


async def _run(cfg: BenchConfig, server: ServerProcess, db: str, tmp: Path) -> BenchResult:
    limits = httpx.Limits(max_connections=HTTP_CONCURRENCY * 2)
    processes = cfg.clients or default_clients(cfg.spectators)
    gen = _Generator(processes, f"ws://127.0.0.1:{server.port}", cfg.compression,
                     cfg.spectators)
    try:
        async with httpx.AsyncClient(base_url=server.base, limits=limits,
                                     timeout=60.0) as http:
            return await _load(cfg, server, db, tmp, http, gen, processes)
    finally:
        gen.close()


async def _load(cfg: BenchConfig, server: ServerProcess, db: str, tmp: Path,
                http: httpx.AsyncClient, gen: _Generator, processes: int) -> BenchResult:
    await server.wait_ready(http, SETUP_TIMEOUT)
    bus = (await http.get("/api/health")).json().get("bus", "?")
    http_gate = asyncio.Semaphore(HTTP_CONCURRENCY)

    owners: dict[str, str] = {}  # game id -> its lobby's owner token

    async def create(i: int) -> str:
        async with http_gate:
            r = await http.post("/api/lobbies", json={
                "players": PLAYERS, "speed": cfg.speed, "seed": cfg.seed + i})
            r.raise_for_status()
            owners[str(r.json()["id"])] = str(r.json()["owner_token"])
            return str(r.json()["id"])

    async with asyncio.timeout(SETUP_TIMEOUT):
        game_ids = list(await asyncio.gather(*(create(i) for i in range(cfg.games))))

    specs: list[tuple[int, int, str, str]] = []  # (index, game, game id, viewer)
    for j in range(cfg.spectators):
        g, viewer = viewer_for(j, cfg.games)
        specs.append((j, g, game_ids[g], viewer))
    by_game: dict[int, list[tuple[int, int, str, str]]] = {}
    for s in specs:
        by_game.setdefault(s[1], []).append(s)

    # fast: measure from the first start until every spectator saw its game
    # end; paced: connect everyone first, then measure a steady window.
    from_start = cfg.speed == "fast"
    cpu0, t0, wall0 = server.cpu(), time.monotonic(), time.time()
    mach0 = machine_cpu()

    async def start(g: int) -> None:
        # each game's spectators connect as soon as it has started (a fast
        # game may otherwise be over before they connect)
        async with http_gate:
            r = await http.post(f"/api/lobbies/{game_ids[g]}/start", headers={
                "Authorization": f"Bearer {owners[game_ids[g]]}"})
            r.raise_for_status()
        gen.spectate(by_game.get(g, []))

    try:
        async with asyncio.timeout(SETUP_TIMEOUT):
            await asyncio.gather(*(start(g) for g in range(len(game_ids))))
        started = time.monotonic() - t0
        if from_start:
            await _first_of(gen.all_connected, timeout=cfg.cap - started)
            setup = time.monotonic() - t0
            capped = not await _first_of(gen.all_done,
                                         timeout=cfg.cap - (time.monotonic() - t0))
        else:
            await _first_of(gen.all_connected, timeout=SETUP_TIMEOUT - started)
            setup = time.monotonic() - t0
            cpu0, t0, wall0 = server.cpu(), time.monotonic(), time.time()
            mach0 = machine_cpu()
            capped = not await _first_of(gen.all_done, timeout=cfg.cap)
        window, wall1 = time.monotonic() - t0, time.time()
        cpu1, mach1 = server.cpu(), machine_cpu()
    finally:
        seen_end = await gen.stop()

    # The check: a fresh replay per (game, viewer), fetched after every
    # spectator has stopped, so it reaches at least as far as any of them,
    # and written to a file each load-generator process reads.
    replays: dict[tuple[str, str], dict[str, Any]] = {}

    async def fetch(key: tuple[str, str]) -> None:
        async with http_gate:
            r = await http.get(f"/api/games/{key[0]}/replay", params={"viewer": key[1]})
            r.raise_for_status()
            replays[key] = r.json()

    async with asyncio.timeout(CHECK_TIMEOUT):
        keys = sorted({(s[2], s[3]) for s in specs} | {(gid, "omniscient") for gid in game_ids})
        await asyncio.gather(*(fetch(k) for k in keys))
        # The actor marks a game finished just after publishing its end:
        # give games whose end a spectator saw a moment to get there.
        for _ in range(50):
            late = [gid for gid in game_ids if gid in seen_end
                    and replays[(gid, "omniscient")]["status"] != "finished"]
            if not late:
                break
            await asyncio.sleep(0.2)
            await asyncio.gather(*(fetch((gid, "omniscient")) for gid in late))
    folder = tmp / "replays"
    folder.mkdir()
    for key, replay in replays.items():
        (folder / _replay_name(*key)).write_text(json.dumps(replay))
    counts = await gen.check(wall0, wall1, folder, capped)

    result = BenchResult(
        label=cfg.label, games=cfg.games, spectators=cfg.spectators, speed=cfg.speed,
        pace=cfg.pace if cfg.speed == "paced" else None, db_kind=db_kind(db), bus=bus,
        window=window, capped=capped, games_finished=0,
        connected=counts.connected, failed=counts.failed,
        viewers=dict(Counter("player" if s[3].isdigit() else s[3] for s in specs)),
        events=counts.events, messages=counts.messages,
        catchup_events=counts.catchup, setup=setup, started=started,
        connect_times=gen.connect_times, event_latencies=event_latencies(counts.logs),
        latencies=counts.latencies, setup_latencies=counts.setup_latencies,
        out_of_order=counts.diffs["out_of_order"],
        server_cpu=cpu1 - cpu0, client_cpu=counts.cpu, clients=processes,
        client_busiest=counts.cpu_fraction, client_lags=counts.lags,
        machine_busy=(mach1[0] - mach0[0]) / max(mach1[1] - mach0[1], 1e-9),
        window_versions=sum(v - counts.version0.get(g, 0)
                            for g, v in counts.version1.items()))
    result.errors = counts.errors[:10]
    result.lost = counts.diffs["lost"]
    result.duplicated = counts.diffs["duplicated"]
    result.unexpected = counts.diffs["unexpected"]
    result.altered = counts.diffs["altered"]
    result.checked = counts.checked
    result.incomplete = counts.incomplete
    result.deflate = counts.deflate
    result.replays = len(replays)
    for gid in game_ids:
        omniscient = replays[(gid, "omniscient")]
        result.games_finished += omniscient["status"] == "finished"
        result.game_version += omniscient["events"][-1]["v"] if omniscient["events"] else 0
        result.game_commands += len(omniscient["commands"])
    result.server_cpu_total = server.cpu()
    result.server_rss_mb = proc_peak_rss_mb(server.pid)
    return result


def run(cfg: BenchConfig) -> BenchResult:
    """`run_bench` in a fresh event loop (uvloop when installed, as the server uses)."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        return asyncio.run(run_bench(cfg))
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(run_bench(cfg))


def _quantile_ms(xs: list[float], q: float) -> float | None:
    """The q-quantile (nearest rank) of seconds `xs`, in ms."""
    if not xs:
        return None
    ys = sorted(xs)
    return 1000.0 * ys[min(len(ys) - 1, int(q * len(ys)))]


def _fmt_ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def report_lines(results: list[BenchResult]) -> list[str]:
    """A compact table, one row per run, two lines of details per run, and
    the ratio of the last run to the first."""
    if not results:
        return []
    main = results[-1]
    pace = f", pace {main.pace:g} s" if main.pace is not None else ""
    mix = ", ".join(f"{n} {k}" for k, n in sorted(main.viewers.items()))
    window = ("from the first start until every spectator saw its game end" if main.speed ==
              "fast" else "once every spectator is connected")
    lines = [
        f"bench server: {main.speed}{pace}, {PLAYERS} AI seats a game, {main.db_kind}, "
        f"{main.bus} bus, {os.cpu_count()} CPUs",
        f"  spectators of the last run: {mix}; measured {window}",
        f"  {'run':<9}{'games':>6}{'specs':>6}{'window':>8}{'finished':>9}"
        f"{'events/s':>9}{'msgs/s':>8}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}"
        f"{'lost':>5}{'dup':>4}{'srv CPU':>8}{'cli CPU':>8}{'cli lag p99':>12}",
    ]
    for r in results:
        lines.append(
            f"  {r.label:<9}{r.games:>6}{r.spectators:>6}{r.window:>7.1f}s"
            f"{f'{r.games_finished}/{r.games}':>9}"
            f"{r.events_per_s:>9.0f}{r.messages_per_s:>8.0f}{_fmt_ms(r.latency_ms(0.50)):>8}"
            f"{_fmt_ms(r.latency_ms(0.99)):>8}{_fmt_ms(r.latency_ms(1.0)):>8}"
            f"{r.lost:>5}{r.duplicated:>4}{r.server_cpu:>7.1f}s{r.client_cpu:>7.1f}s"
            f"{_fmt_ms(_quantile_ms(r.client_lags, 0.99)):>9} ms")
    for r in results:
        setup = ""
        if r.speed == "paced":
            setup = (f"; before the window: latency p99/max "
                     f"{_fmt_ms(r.latency_ms(0.99, True))}/{_fmt_ms(r.latency_ms(1.0, True))} ms")
        lines.append(
            f"  {r.label}: games started in {r.started:.1f} s, {r.connected}/{r.spectators} "
            f"spectators connected in {r.setup:.1f} s (handshake to hello p50/max "
            f"{_fmt_ms(_quantile_ms(r.connect_times, 0.5))}/"
            f"{_fmt_ms(_quantile_ms(r.connect_times, 1.0))} ms), {r.failed} failed{setup}; "
            f"server CPU {100 * r.server_cpu / max(r.window, 1e-9):.0f}% of the window, "
            f"machine {100 * r.machine_busy:.0f}% busy ({os.cpu_count()} CPUs); server peak "
            f"RSS {r.server_rss_mb:.0f} MiB; "
            f"games advanced {r.window_versions / max(r.window, 1e-9) / r.games:.1f} "
            f"events/s each in it ({r.game_version} events, {r.game_commands} commands in all); "
            f"{'capped at the window' if r.capped else 'every spectator saw its game end'}; "
            f"load average {r.load[0]:.2f} before, {r.load[1]:.2f} after")
        lines.append(
            f"    load generator: {r.clients} process{'es' if r.clients > 1 else ''}, CPU "
            f"{r.client_cpu:.1f} s in the window ({100 * r.client_busiest:.0f}% of a CPU "
            f"for the busiest); event-loop lag p50/p99/max "
            f"{_fmt_ms(_quantile_ms(r.client_lags, 0.5))}/"
            f"{_fmt_ms(_quantile_ms(r.client_lags, 0.99))}/"
            f"{_fmt_ms(_quantile_ms(r.client_lags, 1.0))} ms (a message that arrives while "
            f"its loop is late waits that long: the client's share of the latency)")
        lines.append(
            f"    per event (from its own batch's publish, a lower bound): p50/p99/max "
            f"{_fmt_ms(_quantile_ms(r.event_latencies, 0.5))}/"
            f"{_fmt_ms(_quantile_ms(r.event_latencies, 0.99))}/"
            f"{_fmt_ms(_quantile_ms(r.event_latencies, 1.0))} ms over "
            f"{len(r.event_latencies)} events")
        lines.append(
            f"    check: {r.checked} spectators against {r.replays} fresh replays: lost {r.lost}, "
            f"duplicated {r.duplicated}, out of order {r.out_of_order}, altered {r.altered}, "
            f"unexpected {r.unexpected}, incomplete {r.incomplete}; {r.catchup_events} events "
            f"came in connection catch-ups; {r.deflate} spectators got permessage-deflate")
        lines.extend(f"    {e}" for e in r.errors)
    if len(results) > 1:
        base = results[0]

        def ratio(a: float | None, b: float | None) -> str:
            return f"{a / b:.2f}" if a is not None and b else "-"

        def per(x: float, n: float) -> float | None:
            return x / n if n else None

        speed = ratio(per(main.window_versions, main.window * main.games),
                      per(base.window_versions, base.window * base.games))
        cpu = ratio(per(main.server_cpu, main.events), per(base.server_cpu, base.events))
        each = ratio(per(main.events_per_s, main.spectators),
                     per(base.events_per_s, base.spectators))
        lines.append(
            f"  ratio {main.label}/{base.label}: events/s "
            f"{ratio(main.events_per_s, base.events_per_s)} with "
            f"{ratio(main.spectators, base.spectators)}x the spectators; per spectator "
            f"{each}; game speed {speed}; p99 "
            f"{ratio(main.latency_ms(0.99), base.latency_ms(0.99))}; "
            f"server CPU per delivered event {cpu}")
    return lines
