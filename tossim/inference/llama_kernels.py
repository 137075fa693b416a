"""Which of llama.cpp's CPU kernels this process runs.

Why: a llama.cpp build compiled for one CPU's instructions dies with SIGILL
(the whole server, not one request) on a CPU without them: an AVX-512 build
ran on the Intel machines it was built on and crashed on an AMD EPYC with
AVX2 only. `scripts/llama-cpp-wheel` therefore builds llama-cpp-python with
`GGML_BACKEND_DL` and `GGML_CPU_ALL_VARIANTS`: the CPU backend ships as one
shared library per instruction-set level (`libggml-cpu-haswell.so`,
`-skylakex`, `-zen4`, ...; the wheel installs them under `bin/` beside the
`llama_cpp` package, and its file list says where), and the process loads
the best one its CPU runs (docs/agents.md, "Building llama-cpp-python").

llama-cpp-python does not load those libraries itself (its model load then
fails with "no backends are loaded"), so `load_cpu_kernels` does it before
the first model: it asks each variant's `ggml_backend_score` (0: this CPU
lacks an instruction it needs; higher: a newer level) and registers the best
with `ggml_backend_load`, as llama.cpp's own `ggml_backend_load_best` does,
except that variants using AMX are never chosen: AMX kernels segfaulted on
their first evaluation on this project's AMX machines. A build with the CPU
backend linked in (no variant libraries) is left as it is.
"""

from __future__ import annotations

import ctypes
import re
import threading
from pathlib import Path

from tossim.inference.base import BackendUnavailable

# variants whose kernels use AMX tiles (see the module docstring)
AMX_VARIANTS = frozenset({"sapphirerapids"})
PREFIX = "libggml-cpu-"

_lock = threading.Lock()
_loaded: list[str] = []  # the variant registered in this process (at most one)


def variant_name(path: Path) -> str:
    """`libggml-cpu-haswell.so` -> "haswell"."""
    return path.name.removeprefix(PREFIX).split(".so")[0]


def _ggml_in_use() -> ctypes.CDLL:
    """The ggml library libllama itself links (`libggml.so.N` in llama_cpp's
    lib folder). Not `llama_cpp._ggml.libggml`: that opens `libggml.so`, which
    the wheel holds as a separate copy of the file, so the process has two
    ggml instances, and a backend registered with that one is never seen by
    the model load ("no backends are loaded"). Opening the very file libllama
    loaded returns libllama's instance."""
    import llama_cpp.llama_cpp  # loads libllama, which loads its ggml

    lib_dir = Path(llama_cpp.llama_cpp.__file__).parent / "lib"
    names = sorted(p for p in lib_dir.glob("libggml.so.*")
                   if re.fullmatch(r"libggml\.so\.\d+", p.name))
    if not names:
        raise BackendUnavailable(f"no libggml.so.N beside libllama in {lib_dir}")
    return ctypes.CDLL(str(names[0]))


def installed_variants() -> list[Path]:
    """The CPU-variant libraries the installed llama-cpp-python wheel holds
    (none for a build with the CPU backend linked in), from its file list."""
    from importlib import metadata

    try:
        files = metadata.files("llama_cpp_python") or []
    except metadata.PackageNotFoundError:
        return []
    listed = [Path(str(f.locate())) for f in files
              if f.name.startswith(PREFIX) and f.name.endswith(".so")]
    found = sorted(p for p in listed if p.is_file())
    if listed and not found:
        # seen with `pip install --target`: the wheel's `bin/` files land
        # where its file list does not say, and the model load then failed
        # with only "Failed to load model from file"
        raise BackendUnavailable(
            f"llama-cpp-python lists its CPU kernels ({listed[0].name}, ...) but none is "
            f"at {listed[0].parent}; install it into a virtual environment "
            "(docs/agents.md, \"Building llama-cpp-python\")")
    return found


def score(path: Path) -> int:
    """The variant's own score of this CPU (0: it cannot run here). Its
    feature check is compiled without the variant's instruction flags, so
    asking is safe on any x86-64 CPU. The variants link against ggml's base
    library by its soname, found once llama_cpp has loaded it."""
    _ggml_in_use()  # loads libggml-base

    lib = ctypes.CDLL(str(path))
    fn = lib.ggml_backend_score
    fn.restype = ctypes.c_int
    fn.argtypes = []
    return int(fn())


def best_variant(paths: list[Path]) -> Path | None:
    """The highest-scoring of these variants that this CPU runs, AMX variants
    excepted; None when there are none (a build without variants)."""
    found = [p for p in paths if variant_name(p) not in AMX_VARIANTS]
    if not found:
        return None
    scored = [(score(p), p.name, p) for p in found]
    best = max(scored)
    if best[0] <= 0:
        raise BackendUnavailable(
            "none of llama.cpp's CPU kernels runs on this CPU (variants: "
            + ", ".join(variant_name(p) for p in found) + ")")
    return best[2]


def load_cpu_kernels() -> str | None:
    """Register the best CPU variant with ggml once per process (module
    docstring); returns its name, or None for a build with the CPU backend
    linked in."""
    with _lock:
        if _loaded:
            return _loaded[0]
        path = best_variant(installed_variants())
        if path is None:
            return None
        load = _ggml_in_use().ggml_backend_load
        load.restype = ctypes.c_void_p
        load.argtypes = [ctypes.c_char_p]
        if not load(str(path).encode()):
            raise BackendUnavailable(f"llama.cpp could not load its CPU kernels {path.name}")
        _loaded.append(variant_name(path))
        return _loaded[0]
