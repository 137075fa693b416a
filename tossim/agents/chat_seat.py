"""An AI seat played by a chat-API model (`inference/chat_backend.py`).

The seat plays the same tool loop as a token-ID seat (`loop.play_turn`, seed
003's interrupt-and-resume), over a `chat_transport.ChatTransport` in seed
001's JSON protocol (thought/action/args): the endpoint's constraint mode
(json_schema, tools or text) shapes each request, tool calls and fault
observations are the next messages, and the API's usage is counted as each
answer arrives. The tools, prompts, JSON parsing, fault observations, final
check and metrics type are the token-ID seat's; what differs is the
transport and three settings (`ChatConfig`, `TurnRules`): one tool call per
turn, a repeated call refused within the whole turn, and the guard's
second refusal ends the turn unseen. A turn ends in `wait` (abstains) when
corrections run out, the endpoint fails, or the deadline is near.

The seat keeps the same public interface as `LLMSeat` (`decide`,
`seat_metrics`, `turn_log`), so the server, matches and the arena seat it
wherever a model seat goes.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tossim.agents.chat_transport import ChatTransport, close_truncated
from tossim.agents.llm_seat import play_phase
from tossim.agents.loop import play_turn
from tossim.agents.memory import SeatMemory
from tossim.agents.metrics import AgentMetrics, SeatMetrics
from tossim.agents.personas import PERSONAS, Persona, persona_for
from tossim.agents.prompting import build_messages
from tossim.agents.seat import ModelSeat, StepHook
from tossim.agents.turn import Turn, TurnResult, TurnRules
from tossim.agents.turn_records import abstention
from tossim.engine.commands import Command
from tossim.engine.view import View
from tossim.inference.chat_backend import ChatBackend
from tossim.inference.seeds import derive_seed

# `close_truncated` is the transport's; kept importable here for its callers
__all__ = ["ChatConfig", "ChatSeat", "chat_seat_from_spec", "close_truncated"]


@dataclass(frozen=True)
class ChatConfig:
    max_tool_calls: int = 1
    max_corrections: int = 2  # outputs refused before the seat waits
    turn_seconds: float = 60.0  # the seat answers (or abstains) within this
    margin: float = 0.5  # seconds kept in hand before the deadline
    max_tokens: int | None = None  # per request (default: the entry's sampling)
    thought_chars: int = 300  # the schema's bound on a thought (tokens cost money)

    def rules(self) -> TurnRules:
        """The loop's rules for a chat turn: the conversation is one context,
        so a repeated call is refused within the turn, and the guard's
        second refusal ends the turn without another message."""
        return TurnRules(max_tool_calls=self.max_tool_calls, max_retries=self.max_corrections,
                         turn_tokens=None, moves=False, protocol="json", repeat_scope="turn",
                         second_refusal="silence")


class ChatSeat(ModelSeat):
    """One seat played through a chat API (see the module docstring)."""

    def __init__(self, slot: int, backend: ChatBackend, config: ChatConfig | None = None, *,
                 persona: Persona | str | None = None,
                 summaries: Mapping[int, str] | None = None, seed: int = 0) -> None:
        self.slot = slot
        self.backend = backend
        self.config = config or ChatConfig()
        self.persona = persona
        self.summaries: Mapping[int, str] = summaries if summaries is not None else {}
        self.seed = seed
        self.memory = SeatMemory(slot)
        self.metrics = AgentMetrics(chat=True, priced=backend.entry.priced)
        self.last: TurnResult | None = None
        self.turn_log: list[dict[str, Any]] = []
        # called with (slot, step) as each step of a turn happens, like LLMSeat's
        self.on_step: StepHook | None = None

    @property
    def entry_name(self) -> str:
        return self.backend.entry.name

    async def decide(self, obs: View, deadline: float | None = None) -> list[Command]:
        """This turn's commands, within the entry's turn time and before
        `deadline` (time.monotonic(), the server's turn deadline) if sooner."""
        self.memory.update(obs)
        if not self.memory.legal:
            self.memory.end_turn()
            return []
        return await play_phase(self.memory, lambda: self._played(deadline), self.metrics,
                                deadline=deadline)

    async def _played(self, deadline: float | None) -> Command | None:
        result = await self._turn(deadline)
        self.memory.end_turn()
        self.metrics.add(result)
        self.last = result
        return result.command

    def seat_metrics(self) -> SeatMetrics:
        return SeatMetrics(copy.deepcopy(self.metrics), entry=self.entry_name,
                           constraint=self.backend.mode)

    # ---- one turn ----------------------------------------------------------------------
    async def _turn(self, turn_deadline: float | None = None) -> TurnResult:
        """One turn through the loop; it ends at the entry's turn time, or at
        the server's `turn_deadline` if sooner (the requests' deadline: a
        chat turn is not a timed turn in the metrics)."""
        cfg, memory = self.config, self.memory
        t = Turn(memory, cfg.rules(), seed=derive_seed(self.seed, self.metrics.turns),
                 on_step=self._step)
        deadline = time.monotonic() + cfg.turn_seconds - cfg.margin
        if turn_deadline is not None:
            deadline = min(deadline, turn_deadline)
        messages: list[dict[str, Any]] = build_messages(memory, self.summaries, "json",
                                                        self.persona, seed=t.seed)
        log: dict[str, Any] = {"day": memory.day, "phase": memory.phase,
                               "phase_seq": memory.phase_seq, "version": memory.version,
                               "prompt": messages[-1]["content"]}
        transport = ChatTransport(self.backend, messages, self.metrics, deadline=deadline,
                                  seed=t.seed, max_tokens=cfg.max_tokens,
                                  thought_chars=cfg.thought_chars)
        result = await play_turn(transport, t, self.summaries)
        stats = result.stats
        log.update({"output": result.transcript, "steps": result.steps,
                    "action": result.action,
                    "tokens": {"prompt": stats.requested_tokens,
                               "completion": stats.generated_tokens,
                               "cached": stats.cached_tokens}})
        self.turn_log.append(log)
        kind = abstention(log)  # counted as the arena report counts the stored turn
        if kind is not None:
            self.metrics.abstained += 1
            kinds = self.metrics.abstained_kinds
            kinds[kind] = kinds.get(kind, 0) + 1
        return result

    def _step(self, step: dict[str, Any]) -> None:
        if self.on_step is not None:
            self.on_step(self.slot, step)


def chat_seat_from_spec(spec: Mapping[str, Any], slot: int, seed: int, backend: ChatBackend, *,
                        game_id: str = "", summaries: Mapping[int, str] | None = None,
                        turn_seconds: float | None = None) -> ChatSeat:
    """A lobby's chat seat: its persona (named, else drawn from the game's
    seed) and a per-seat sampling seed, as `llm_seat.seat_from_spec`."""
    name = spec.get("persona")
    persona = PERSONAS[name] if name in PERSONAS else persona_for(slot, seed)
    config = ChatConfig(turn_seconds=turn_seconds or backend.entry.turn_seconds,
                        thought_chars=backend.entry.thought_chars)
    return ChatSeat(slot, backend, config, persona=persona, summaries=summaries,
                    seed=derive_seed(seed, slot))
