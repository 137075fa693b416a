"""The server's embedded model, loaded before the first game asks for it.

Why: a model seat's backend is made (the GGUF read, re-quantised the first
time on a machine, a llama.cpp context allocated) when the first game with a
model seat starts, inside its game actor's constructor on the event loop.
Those seconds stall every websocket of the process, and the first lobby's
Day 1 turns pay for them (seen on a slow machine: a server started without
the demo, whose first lobby's three model seats said nothing on Day 1).
`tossim serve` (Settings.preload_models) makes the backend in a thread at
start-up instead and runs one token through it, so llama.cpp's threads and
compute buffers are ready too. A game started meanwhile is started once
the load is done (ActorHub.models_ready), off the event loop, and plays on
that backend (registry.shared_backend), never a second copy.
"""

from __future__ import annotations

import asyncio
import logging
import time

from tossim.agents.entry_seat import entry_engine
from tossim.inference.base import Backend, GenerationRequest
from tossim.server.runner import entry_for_spec
from tossim.server.service import backend_unavailable
from tossim.server.settings import Settings

log = logging.getLogger(__name__)

# the backend a lobby's model seat plays when its spec names no entry: the
# embedded default, the one model this process loads itself
PRELOADED = "local"


async def preload_models(settings: Settings) -> Backend | None:
    """Make the process's embedded-model backend and run one token through
    it; None (and a log line saying why) where this server does not run it:
    model seats on workers, or the backend cannot run here."""
    if settings.inference != "local":
        return None
    why = backend_unavailable(PRELOADED, settings)
    if why is not None:
        log.info("preload: no %s model to load (%s)", PRELOADED, why)
        return None
    started = time.perf_counter()
    entry = entry_for_spec({"kind": "ai", "backend": PRELOADED}, settings)
    try:
        backend = await asyncio.to_thread(entry_engine, entry, openai_url=settings.openai_url,
                                          model_dir=settings.model)
        prompt = tuple(backend.tokenizer.encode("Town of Salem"))
        await backend.generate([GenerationRequest(prompt_ids=prompt, max_tokens=1,
                                                  temperature=0.0, key="preload")])
    except Exception as exc:  # the first game's seats will say it again, to their lobby
        log.warning("preload: the %s model could not be loaded: %s", PRELOADED, exc)
        return None
    log.info("preload: %s model ready in %.1f s", PRELOADED, time.perf_counter() - started)
    return backend
