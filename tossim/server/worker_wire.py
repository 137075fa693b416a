"""The inference workers' websocket (`/ws/workers`) as types: what a worker
sends (`WorkerMessage`) and what the server sends it (`ToWorker`), each a
union discriminated on `type` (docs/api.md, "Inference workers"; its message
table is generated from these models by `tossim docs`).

The server reads the worker's `hello` with `WorkerHello` and builds its own
small frames (`welcome`, `cancel`, `forget`) from these models; a worker's
answers are read field by field where they are used (tossim.server.workers),
since a bad answer fails only its one request. `tossim.worker` (a layer
beside the server, which cannot import it) builds the same frames as dicts.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter

from tossim.server.wire import ServerModel


class WorkerModel(ServerModel):
    """A frame of the worker protocol; unknown fields are ignored (a newer
    worker or server may send more)."""

    model_config = ConfigDict(extra="ignore")


# ---- worker -> server --------------------------------------------------------------------


class WorkerHello(WorkerModel):
    """The worker's first frame, within 10 s: the token (never in the URL)
    and the backends it runs."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "hello", "token": "…", "backends": ["vllm"], "name": "gpu-1"},
    ]})
    type: Literal["hello"] = "hello"
    token: Annotated[str | None, Field(description="TOSSIM_WORKER_TOKEN; none on one "
                                                   "machine without a token.")] = None
    backends: list[str] = Field(description="Model backends this worker runs.")
    name: Annotated[str | None, Field(description="For logs and the fleet list.")] = None


class Step(WorkerModel):
    """One step of a seat's turn while the worker decides (only after a
    `welcome` with `steps`): the step dicts of `LLMSeat.on_step`, no prompt."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "step", "id": "3f2a…-7", "index": 0,
         "step": {"kind": "thinking", "text": "Player 9 claimed Doctor twice…"}},
    ]})
    type: Literal["step"] = "step"
    id: str
    index: int
    step: dict[str, Any]


class Decided(WorkerModel):
    """A `decide`'s answer: the seat's commands, the turn's metrics, and
    every turn of the decision as the server stores them (two when a will,
    note or speech came before the phase's action; a lone `record` is also
    read)."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "decided", "id": "3f2a…-7",
         "commands": [{"type": "vote", "actor": 4, "target": 2}],
         "turn": {"turns": 1, "tool_calls": 1, "generated_tokens": 61},
         "records": [{"day": 2, "phase": "voting", "phase_seq": 5, "version": 212,
                      "prompt": "…", "output": "…", "steps": [], "action": {}, "move": None,
                      "tokens": {"prompt": 900, "generated": 61, "cached": 850}}]},
    ]})
    type: Literal["decided"] = "decided"
    id: str
    commands: list[dict[str, Any]]
    turn: dict[str, Any] | None = None
    records: list[dict[str, Any]] | None = None
    record: dict[str, Any] | None = None


class WorkerSummary(WorkerModel):
    """A `summarize`'s answer; `fallback`: the model failed and this is the
    extractive text."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "summary", "id": "…", "text": "Player 3 claimed Sheriff …",
         "fallback": False},
    ]})
    type: Literal["summary"] = "summary"
    id: str
    text: str
    fallback: bool = False


class Failed(WorkerModel):
    """A request the worker could not answer."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "failed", "id": "…", "error": "…"},
    ]})
    type: Literal["failed"] = "failed"
    id: str
    error: str


# ---- server -> worker --------------------------------------------------------------------


class Welcome(WorkerModel):
    """The answer to `hello`: the worker's id; `steps`: this server takes
    `step` frames (a worker streams only then)."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "welcome", "worker": "3f2a9c1d0b7e", "steps": True},
    ]})
    type: Literal["welcome"] = "welcome"
    worker: str
    steps: bool


class Decide(WorkerModel):
    """Play a seat's turn from its view (`View.to_dict()`, the projection a
    browser gets) within `seconds`; `fresh`: this worker has not played the
    seat yet, so `view.events` holds everything the seat has seen and
    `history` its turns so far."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "decide", "id": "3f2a…-7", "game": "…", "slot": 4, "seed": 42,
         "spec": {"backend": "vllm", "persona": None, "protocol": "xml", "speech": "free",
                  "entry": "qwen-cold", "sampling": {"temperature": 0.3}},
         "fresh": True, "view": {}, "summaries": {"1": "…"}, "seconds": 11.5,
         "history": [{"day": 1, "phase": "day1", "phase_seq": 1, "version": 40,
                      "steps": [], "action": {}, "tokens": {}}]},
    ]})
    type: Literal["decide"] = "decide"
    id: str
    game: str
    slot: int
    seed: int
    spec: dict[str, Any]
    fresh: bool
    view: dict[str, Any]
    summaries: dict[str, str]
    seconds: float | None = None
    history: list[dict[str, Any]] | None = None


class Summarize(WorkerModel):
    """Write day `day`'s summary from the public view of that day."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "summarize", "id": "…", "game": "…", "backend": "vllm", "day": 2,
         "seed": 44, "view": {}},
    ]})
    type: Literal["summarize"] = "summarize"
    id: str
    game: str
    backend: str
    day: int
    seed: int
    view: dict[str, Any]


class Cancel(WorkerModel):
    """The server stopped waiting for that request (the phase is over)."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "cancel", "id": "3f2a…-7"},
    ]})
    type: Literal["cancel"] = "cancel"
    id: str


class Forget(WorkerModel):
    """The game ended: drop its seats."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"type": "forget", "game": "…"},
    ]})
    type: Literal["forget"] = "forget"
    game: str


WORKER_MODELS: tuple[type[ServerModel], ...] = (WorkerHello, Step, Decided, WorkerSummary,
                                                 Failed)
TO_WORKER_MODELS: tuple[type[ServerModel], ...] = (Welcome, Decide, Summarize, Cancel,
                                                    Forget)
WorkerMessage = Annotated[WorkerHello | Step | Decided | WorkerSummary | Failed,
                          Field(discriminator="type")]
ToWorker = Annotated[Welcome | Decide | Summarize | Cancel | Forget,
                     Field(discriminator="type")]
WORKER = TypeAdapter(WorkerMessage)
TO_WORKER = TypeAdapter(ToWorker)
