"""Model seats played by an inference worker think aloud like the server's own:
while a worker decides, it streams the seat's steps, which reach the game's
omniscient spectators (never public ones), and the finished turn is stored
(`GET /api/games/{id}/turns`). With several server processes on one bus the
steps travel from the worker's process to the game's. A worker cannot flood:
steps past the per-request bounds are dropped and counted, and a step for a
request that is not open is ignored.

The worker is the real `Worker` client; only its seats are fakes with the
`LLMSeat` contract (`on_step`, `turn_log`, `metrics`, `last`) that play like
scripted bots, so the tests need no model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, cast

import pytest
from agents.fake_backend import ScriptedBackend  # tests/ is on sys.path under pytest
from agents.support import day3_investigator

from tossim.agents.metrics import AgentMetrics
from tossim.agents.scripted import ScriptedBot
from tossim.engine import Command, View
from tossim.server import runner
from tossim.server.bus import MemoryBus
from tossim.server.settings import Settings
from tossim.server.workers import (
    MAX_STEP_CHARS,
    MAX_STEPS,
    RemoteSeat,
    RemoteWorker,
    WorkerHub,
    WorkerLink,
)
from tossim.worker.client import Worker

from .support import ServerFactory, create_game, read_to_end, running_worker, watch_thinking

SECRET_PROMPT = "SYSTEM PROMPT: you are a seat; never show this"
MODEL_SEATS = (1, 2, 3)


class ThinkingSeat:
    """Plays like a scripted bot; reports its steps and logs its turns as `LLMSeat`."""

    def __init__(self, slot: int, seed: int, gate: asyncio.Event, flood: bool) -> None:
        self.slot = slot
        self.bot = ScriptedBot(slot, seed)
        self.gate = gate
        self.flood = flood
        self.metrics = AgentMetrics()
        self.last = None
        self.turn_log: list[dict[str, Any]] = []
        self.on_step: Any = None

    def _step(self, step: dict[str, Any], steps: list[dict[str, Any]]) -> None:
        steps.append({k: v for k, v in step.items() if k != "prompt"})
        if self.on_step is not None:
            self.on_step(self.slot, step)

    async def decide(self, obs: View, deadline: float | None = None) -> list[Command]:
        await self.gate.wait()
        steps: list[dict[str, Any]] = []
        self._step({"kind": "thinking", "text": f"Day {obs.day}: who is lying?",
                    "prompt": SECRET_PROMPT}, steps)
        self._step({"kind": "tool", "name": "graveyard", "args": {},
                    "observation": f"{len(obs.roster)} players"}, steps)
        if self.flood:  # one huge step, then far more steps than a request may send
            self._step({"kind": "thinking", "text": "x" * (MAX_STEP_CHARS + 1)}, steps)
            for i in range(MAX_STEPS + 20):
                self._step({"kind": "thinking", "text": f"again {i}"}, steps)
        cmds = self.bot.decide(obs)
        action = cmds[0].to_dict() if cmds else None
        self._step({"kind": "action", "text": type(cmds[0]).__name__ if cmds else "wait"},
                   steps)
        self.turn_log.append({"day": obs.day, "phase": obs.phase, "prompt": SECRET_PROMPT,
                              "output": "<thinking>...</thinking>", "steps": steps,
                              "action": action, "tokens": {"prompt": 10, "generated": 5,
                                                           "cached": 0}})
        return cmds


class ThinkingWorker(Worker):
    """The real worker client, with `ThinkingSeat`s instead of model seats."""

    def __init__(self, server: str, gate: asyncio.Event, *, flood: bool = False) -> None:
        super().__init__(server, "local", cast(Any, None), name="thinker")
        self.gate = gate
        self.flood = flood
        self.made: dict[tuple[str, int], ThinkingSeat] = {}

    def make_seat(self, message: dict[str, Any], summaries: dict[int, str]) -> Any:
        seat = ThinkingSeat(int(message["slot"]), int(message["seed"]), self.gate, self.flood)
        self.made[(str(message["game"]), seat.slot)] = seat
        return seat

    async def summarize(self, message: dict[str, Any]) -> dict[str, Any]:
        self.summarized += 1
        return {"type": "summary", "text": f"Day {message['day']}, as the worker saw it."}


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_a_worker_s_seats_think_for_omniscient_spectators_and_store_their_turns(
        server_factory: ServerFactory) -> None:
    server = await server_factory(inference="workers", model_deadline=60)
    gate = asyncio.Event()
    worker = ThinkingWorker(server.base_url, gate)
    async with running_worker(worker):
        seats = [{"slot": s, "backend": "local"} for s in MODEL_SEATS]
        game_id = await create_game(server.client, players=7, speed="fast", seed=5,
                                    seats=seats)
        seen_omni, seen_public = await watch_thinking(server, game_id, gate)
    made = {slot: seat for (g, slot), seat in worker.made.items() if g == game_id}
    assert set(made) == set(MODEL_SEATS)

    thinking = [m for m in seen_omni if m["type"] == "thinking"]
    assert {m["slot"] for m in thinking} == set(MODEL_SEATS)
    assert {m["step"]["kind"] for m in thinking} == {"thinking", "tool", "action"}
    tool = next(m for m in thinking if m["step"]["kind"] == "tool")
    assert tool["step"]["name"] == "graveyard" and "players" in tool["step"]["observation"]
    assert all(isinstance(m["day"], int) and m["phase"] for m in thinking)
    assert not [m for m in seen_public if m["type"] == "thinking"]
    assert SECRET_PROMPT not in json.dumps(seen_omni)  # a step's prompt never travels

    # every turn the worker's seats played is stored, and served without its prompt
    r = await server.client.get(f"/api/games/{game_id}/turns")
    assert r.status_code == 200, r.text
    turns = r.json()["turns"]
    assert len(turns) == sum(len(s.turn_log) for s in made.values()) > 0
    assert {t["slot"] for t in turns} == set(MODEL_SEATS)
    first = [t for t in turns if t["slot"] == 1]
    assert [t["seq"] for t in first] == list(range(1, len(first) + 1))
    assert [s["kind"] for s in first[0]["steps"]] == ["thinking", "tool", "action"]
    assert SECRET_PROMPT not in r.text
    stored = await server.store.turns(game_id, 1)
    assert stored[0]["prompt"] == SECRET_PROMPT  # kept for replays, not sent
    assert stored[0]["action"] == made[1].turn_log[0]["action"]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_a_flooding_worker_is_cut_to_the_bounds(server_factory: ServerFactory) -> None:
    server = await server_factory(inference="workers", model_deadline=60)
    gate = asyncio.Event()
    async with running_worker(ThinkingWorker(server.base_url, gate, flood=True)):
        game_id = await create_game(server.client, players=7, speed="fast", seed=7,
                                    seats=[{"slot": 1, "backend": "local"}])
        async with server.ws_connect(f"/ws/games/{game_id}/watch?viewer=omniscient") as omni:
            assert (await omni.recv())["type"] == "hello"
            await asyncio.sleep(0.2)
            gate.set()
            seen = await read_to_end(omni)
    thinking = [m["step"] for m in seen if m["type"] == "thinking"]
    assert (await server.client.get(f"/api/games/{game_id}/turns")).json()["turns"]
    # a turn's stream: its first MAX_STEPS steps that fit, never the huge one
    per_turn: list[list[dict[str, Any]]] = []
    for step in thinking:
        if step.get("text", "").startswith("Day "):
            per_turn.append([])
        per_turn[-1].append(step)
    assert per_turn and max(len(t) for t in per_turn) == MAX_STEPS
    assert all(len(s.get("text", "")) <= MAX_STEP_CHARS for s in thinking)
    assert not [s for s in thinking if s["kind"] == "action"]  # past the bound
    # dropped, per full turn: the huge step, 20 extra and the action
    full = sum(1 for t in per_turn if len(t) == MAX_STEPS)
    assert server.app.state.workers.steps_dropped >= 22 * full


# --- two processes on one bus: steps from a worker of B reach the game on A ----------


class FakeSocket:
    def __init__(self) -> None:
        self.frames: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def send_text(self, text: str) -> None:
        self.frames.put_nowait(json.loads(text))


async def test_steps_of_a_worker_at_another_process_reach_the_game_s_process() -> None:
    bus = MemoryBus()
    a, b = WorkerHub(bus, "proc-a"), WorkerHub(bus, "proc-b")
    await a.start()
    await b.start()
    sock = FakeSocket()
    link = WorkerLink(cast(Any, sock), {"local"}, "w1", b)
    await b.add(link)
    try:
        route = await asyncio.wait_for(a.link_for("g1", "local"), 5)
        assert isinstance(route, RemoteWorker)
        got: list[dict[str, Any]] = []
        asking = asyncio.create_task(route.request(
            {"type": "decide", "game": "g1", "slot": 3}, got.append))
        frame = await asyncio.wait_for(sock.frames.get(), 5)
        rid = frame["id"]
        link.answer({"type": "step", "id": "no-such-request", "index": 0,
                     "step": {"kind": "thinking", "text": "not mine"}})
        for i in range(MAX_STEPS + 3):
            link.answer({"type": "step", "id": rid, "index": i,
                         "step": {"kind": "thinking", "text": f"step {i}"}})
        link.answer({"type": "step", "id": rid, "index": 99, "step": "not an object"})
        link.answer({"type": "decided", "id": rid, "commands": [],
                     "record": {"steps": [], "action": None}})
        reply = await asyncio.wait_for(asking, 5)
        # every step came before the answer, in order, within the bound
        assert [s["text"] for s in got] == [f"step {i}" for i in range(MAX_STEPS)]
        assert reply["record"] == {"steps": [], "action": None}
        assert b.steps_dropped == 4
        link.answer({"type": "step", "id": rid, "index": 100,  # the request is closed
                     "step": {"kind": "thinking", "text": "late"}})
        await asyncio.sleep(0.1)
        assert len(got) == MAX_STEPS

        # a cancelled request's steps go nowhere
        got2: list[dict[str, Any]] = []
        asking = asyncio.create_task(route.request(
            {"type": "decide", "game": "g1", "slot": 4}, got2.append))
        frame = await asyncio.wait_for(sock.frames.get(), 5)
        asking.cancel()
        assert (await asyncio.wait_for(sock.frames.get(), 5))["type"] == "cancel"
        link.answer({"type": "step", "id": frame["id"], "index": 0,
                     "step": {"kind": "thinking", "text": "too late"}})
        await asyncio.sleep(0.1)
        assert not got2
    finally:
        await a.close()
        await b.close()


# --- a catalogue entry's sampling reaches a worker's seat ----------------------------


def test_a_worker_seat_plays_with_its_catalogue_entry_s_sampling(tmp_path: Path) -> None:
    """The server sends the seat's entry (name, protocol, sampling) with each
    decide; the worker's seat sends every request with those settings, as a
    seat of that entry the server played itself would."""
    path = tmp_path / "models.toml"
    path.write_text('[models.smol-cold]\nbackend = "local"\nprotocol = "xml"\n'
                    '[models.smol-cold.sampling]\ntemperature = 0.25\ntop_p = 0.8\n'
                    'max_tokens = 40\n')
    settings = Settings(models=str(path), inference="workers")
    seat = runner.make_ai_seat({"slot": 7, "model": "smol-cold"}, 7, 1, game_id="g",
                               settings=settings, workers=WorkerHub())
    assert isinstance(seat, RemoteSeat)
    assert seat.spec["entry"] == "smol-cold"
    assert seat.spec["sampling"] == {"temperature": 0.25, "top_p": 0.8, "max_tokens": 40}

    backend = ScriptedBackend(["<thinking>Player 4 lies.</thinking>", "<vote>Player 4</vote>"])
    worker = Worker("http://127.0.0.1:9", "local", backend)
    played = worker.make_seat({"game": "g", "slot": 7, "seed": 1, "spec": seat.spec}, {})
    memory = day3_investigator().memories[7]
    result = asyncio.run(played.loop.run_turn(memory, key="g:7", seed=1))
    assert result.action == "vote" and len(backend.requests) == 2
    for r in backend.requests:
        assert (r.temperature, r.top_p) == (0.25, 0.8) and r.max_tokens <= 40

    # a seat without an entry plays with the worker's own settings
    plain = ScriptedBackend(["<thinking>Hm.</thinking>", "<vote>Player 4</vote>"])
    worker = Worker("http://127.0.0.1:9", "local", plain)
    played = worker.make_seat({"game": "g", "slot": 7, "seed": 1,
                               "spec": {"backend": "local"}}, {})
    asyncio.run(played.loop.run_turn(day3_investigator().memories[7], key="g:7", seed=1))
    assert plain.requests[0].top_p == 1.0 and plain.requests[0].max_tokens == 128
    # sampling the catalogue would refuse fails the decision, not the worker
    with pytest.raises(ValueError):
        worker.make_seat({"game": "g", "slot": 7, "seed": 1,
                          "spec": {"backend": "local", "sampling": {"heat": 9}}}, {})
