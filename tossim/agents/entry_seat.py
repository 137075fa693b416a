"""The seat a model-catalogue entry plays: the one place seats are built from
`ModelEntry`s (the server's make_ai_seat, `tossim play --model-entry` and the
arena). The entries themselves are data in `tossim.inference.catalogue`, below
the seats (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tossim.inference.catalogue import ModelEntry

if TYPE_CHECKING:
    from tossim.agents.chat_seat import ChatSeat
    from tossim.agents.llm_seat import LLMSeat
    from tossim.agents.loop import LoopConfig
    from tossim.agents.seat import ScriptedSeat
    from tossim.inference.base import Backend

_keyed: dict[str, Any] = {}  # openai-completions backends of entries with a key


def make_seat_for_entry(entry: ModelEntry, slot: int, seed: int, *, game_id: str = "",
                        summaries: Mapping[int, str] | None = None,
                        persona: str | None = None, protocol: str | None = None,
                        openai_url: str | None = None, model_dir: str | None = None,
                        deadline: float | None = None, speech: str | None = None,
                        backend: Backend | None = None, loop_config: LoopConfig | None = None,
                        background: bool = False) -> ScriptedSeat | LLMSeat | ChatSeat:
    """The seat that plays `entry` at `slot` (the one place seats are built
    from entries: the server's make_ai_seat, `tossim play` and the arena).
    Model backends are shared by the process (one model load, one client and
    one rate limit per entry). `deadline`: seconds a chat seat may take per
    turn (it abstains before; default the entry's `turn_seconds`). `speech`
    overrides the entry's (a lobby seat's or `tossim play --speech`).
    `backend` (with `loop_config`): a model seat plays on this backend, not
    the process's shared one (`tossim play --ai`, benchmarks, tests' fakes).
    `background`: the seat's requests wait for every other game's (the
    server's demo: GenerationRequest.background)."""
    if speech is not None and speech not in ("free", "moves"):
        raise ValueError(f"speech is free or moves, not {speech!r}")
    if entry.backend == "chat" and speech == "moves":
        raise ValueError(f"entry {entry.name!r} is a chat entry: it writes free text")
    if entry.backend == "scripted":
        from tossim.agents.seat import ScriptedSeat
        return ScriptedSeat(slot, seed)
    spec: dict[str, Any] = {"persona": persona,
                            "protocol": protocol or entry.protocol,
                            "speech": speech or entry.speech}
    if entry.backend == "chat":
        from tossim.agents.chat_seat import chat_seat_from_spec
        from tossim.inference.chat_backend import shared_chat_backend
        chat = shared_chat_backend(entry)
        turn = min(entry.turn_seconds, deadline) if deadline else entry.turn_seconds
        return chat_seat_from_spec(spec, slot, seed, chat, game_id=game_id,
                                   summaries=summaries, turn_seconds=turn)
    from tossim.agents.llm_seat import seat_from_spec
    from tossim.inference.registry import for_entry
    if backend is not None:
        return seat_from_spec(spec, slot, seed, for_entry(backend, background=background),
                              game_id=game_id, summaries=summaries, loop_config=loop_config)
    engine = entry_engine(entry, openai_url=openai_url, model_dir=model_dir)
    # the entry's sampling (temperature, top_p, max_tokens per request, ...) and
    # rpm on every request its seats send; the model itself stays shared
    wrapped = for_entry(engine, entry.sampling, entry.rpm, entry.model_dump_json(), background)
    return seat_from_spec(spec, slot, seed, wrapped, game_id=game_id, summaries=summaries)


def entry_engine(entry: ModelEntry, *, openai_url: str | None = None,
                 model_dir: str | None = None) -> Backend:
    """The process's backend for a model entry (made, and its model loaded,
    on first use; the server preloads its default one at start-up:
    tossim.server.preload). A keyed completions server gets one backend per
    entry, its key read now; every other entry shares the backend of its
    name, model and URL."""
    from tossim.inference.registry import make_backend, shared_backend
    url = entry.base_url or openai_url
    if entry.backend == "openai" and entry.api_key_env:
        key = entry.model_dump_json()
        if key not in _keyed:
            _keyed[key] = make_backend("openai", model=entry.model or model_dir, url=url,
                                       api_key=entry.api_key())
        return _keyed[key]
    return shared_backend(entry.backend, entry.model or model_dir, url)
