"""The tiny test model: its tokenizer round-trips the project's prompts, its
chat template is ChatML, the model runs, and outlines_core can index a real
turn regex over its vocabulary."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tossim.agents.grammar import turn_regex
from tossim.agents.prompting import build_messages
from tossim.agents.tools import tool_options
from tossim.inference.vocabulary import byte_level_token_bytes, outlines_core_vocabulary

from .tiny_model import BUILD_VERSION, IM_END, MARKER, build_tiny_model

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TRICKY = ('Zoë said: "<vote>Player 4</vote>" isn\'t <b>fair</b> & 100% <|fake|>\n'
          "\tŁukasz — naïve café ☕ 🙂\r\n\n  trailing  ")


def day3() -> Any:
    from agents.support import day3_investigator  # tests/agents, on sys.path under pytest

    return day3_investigator()


@pytest.fixture(scope="module")
def tok(tiny_model_dir: Path) -> Any:
    return transformers.AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="module")
def memory() -> Any:
    return day3().memories[7]


def test_folder_and_special_tokens(tiny_model_dir: Path, tok: Any) -> None:
    assert json.loads((tiny_model_dir / MARKER).read_text())["version"] == BUILD_VERSION
    assert (tiny_model_dir / "model.safetensors").is_file()
    assert 1000 <= len(tok) <= 2000
    assert tok.convert_ids_to_tokens([0, 1, 2]) == ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    assert tok.eos_token == IM_END and tok.eos_token_id == 2
    assert tok.pad_token_id is not None and tok.pad_token_id != tok.eos_token_id
    assert tok.encode("hi", add_special_tokens=True) == tok.encode("hi", add_special_tokens=False)


def test_reuses_an_existing_build(tiny_model_dir: Path) -> None:
    before = (tiny_model_dir / "model.safetensors").stat().st_mtime_ns
    start = time.perf_counter()
    assert build_tiny_model(tiny_model_dir) == tiny_model_dir
    assert time.perf_counter() - start < 0.5
    assert (tiny_model_dir / "model.safetensors").stat().st_mtime_ns == before


@pytest.mark.parametrize("protocol", ["xml", "json"])
def test_round_trips_prompts(tok: Any, memory: Any, protocol: str) -> None:
    for message in build_messages(memory, {1: "Zoë greeted the town."}, protocol):
        text = message["content"]
        ids = tok.encode(text, add_special_tokens=False)
        assert tok.decode(ids) == text
        assert len(ids) < len(text) / 2.5  # the merges were learned on such prompts


def test_round_trips_tricky_text(tok: Any) -> None:
    ids = tok.encode(TRICKY, add_special_tokens=False)
    assert tok.decode(ids) == TRICKY
    assert tok.unk_token_id not in ids  # every byte has a token
    assert b"".join(map(byte_level_token_bytes(tok), tok.convert_ids_to_tokens(ids))) \
        == TRICKY.encode("utf-8")


def test_chat_template(tok: Any, memory: Any) -> None:
    messages = build_messages(memory)
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\n" + messages[0]["content"] + "<|im_end|>\n")
    assert "<|im_end|>\n<|im_start|>user\n" in text
    assert text.endswith("<|im_end|>\n<|im_start|>assistant\n")
    ids = tok.encode(text, add_special_tokens=False)
    assert ids.count(tok.convert_tokens_to_ids("<|im_start|>")) == 3
    assert ids.count(tok.eos_token_id) == 2
    plain = tok.apply_chat_template(messages, tokenize=False)
    assert plain.endswith(messages[1]["content"] + "<|im_end|>\n")


def test_model_logits(tiny_model_dir: Path, tok: Any) -> None:
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert model.dtype == torch.float32
    assert model.config.max_position_embeddings == 8192
    assert model.generation_config.eos_token_id == tok.eos_token_id
    ids = tok.encode("<vote>Player 4</vote>", return_tensors="pt")
    with torch.no_grad():
        logits = model(ids).logits
    assert logits.shape == (1, ids.shape[1], len(tok))
    assert torch.isfinite(logits).all()
    torch.manual_seed(0)
    out = model.generate(ids, max_new_tokens=4, do_sample=False)
    assert out.shape[1] <= ids.shape[1] + 4


def test_deterministic(tmp_path: Path, tiny_model_dir: Path) -> None:
    build_tiny_model(tmp_path / "again", seed=0)
    for name in ("tokenizer.json", "model.safetensors", "config.json"):
        assert (tmp_path / "again" / name).read_bytes() == (tiny_model_dir / name).read_bytes()
    build_tiny_model(tmp_path / "other", seed=1)
    assert (tmp_path / "other" / "model.safetensors").read_bytes() \
        != (tiny_model_dir / "model.safetensors").read_bytes()


def walk(index: Any, ids: list[int]) -> bool:
    """Whether the index accepts exactly this token sequence."""
    state = index.get_initial_state()
    for i in ids:
        if i not in index.get_allowed_tokens(state):
            return False
        state = index.get_next_state(state, i)
    return bool(index.is_final_state(state))


def test_outlines_adapter_space_marker(tok: Any) -> None:
    """outlines' adapter with convert_tokens_to_string handles the byte-level
    space and newline markers ('Ġ' -> ' ', 'Ċ' -> '\\n') ..."""
    to_str = lambda t: tok.convert_tokens_to_string([t])  # noqa: E731
    assert to_str("Ġ") == " " and to_str("Ċ") == "\n"
    assert to_str("Ġ<") == " <"
    assert to_str(tok.convert_ids_to_tokens(tok.encode(" Player"))[0]) == " Player"
    # ... but not a token that is part of a UTF-8 character: 'Ã' is byte 0xC3
    # (half of 'ë') and comes back as U+FFFD, like every other such token.
    assert to_str("Ã") == "\ufffd"
    collapsed = [t for t in tok.get_vocab() if to_str(t) == "\ufffd"]
    assert len(collapsed) >= 64
    token_bytes = byte_level_token_bytes(tok)
    assert token_bytes("Ã") == b"\xc3" and token_bytes("Ġ<") == b" <"
    assert token_bytes("<|im_end|>") == b"<|im_end|>"


def test_outlines_core_index_for_a_turn(tok: Any, memory: Any) -> None:
    from outlines.backends.outlines_core import OutlinesCoreBackend
    from outlines_core import Index

    rx = turn_regex(memory.legal, memory.names, tool_options(memory))
    good = ("<thinking>Player 4 claims Doctor.\nThat contradicts the will.</thinking>\n"
            "<vote>Player 4</vote>")
    naive = OutlinesCoreBackend.create_outlines_core_vocabulary(
        tok.get_vocab(), tok.eos_token_id, tok.eos_token,
        lambda t: tok.convert_tokens_to_string([t]))
    index = Index(rx, naive)
    assert walk(index, tok.encode(good))  # ASCII output: the naive adapter works
    assert not walk(index, tok.encode(good.replace("</vote>", "</speak>")))

    index = Index(rx, outlines_core_vocabulary(tok))
    assert walk(index, tok.encode(good))
    assert walk(index, tok.encode(good.replace("Doctor.", "Doctor, says Zoë.")))
    assert not walk(index, tok.encode(good.replace("Player 4</vote>", "Player 3</vote>")))
    # EOS is allowed only once the action is complete
    state = index.get_initial_state()
    for i in tok.encode(good):
        assert tok.eos_token_id not in index.get_allowed_tokens(state)
        state = index.get_next_state(state, i)
    assert tok.eos_token_id in index.get_allowed_tokens(state)


def test_non_ascii_regex_needs_byte_level_adapter(tok: Any) -> None:
    from outlines.backends.outlines_core import OutlinesCoreBackend
    from outlines_core import Index

    # "Zoë" and "José" are in the corpus (whole-character tokens exist), the
    # others are not: only single-byte tokens can spell them.
    names = ("Zoë", "José", "Đorđe", "龍 🙂")
    rx = "<vote>(" + "|".join(names) + ")</vote>"
    naive = OutlinesCoreBackend.create_outlines_core_vocabulary(
        tok.get_vocab(), tok.eos_token_id, tok.eos_token,
        lambda t: tok.convert_tokens_to_string([t]))
    with pytest.raises(ValueError, match="incompatible"):
        Index("Đorđe", naive)
    index = Index(rx, naive)  # builds, but silently loses the branches it cannot spell
    assert walk(index, tok.encode("<vote>Zoë</vote>"))
    assert not walk(index, tok.encode("<vote>Đorđe</vote>"))

    index = Index(rx, outlines_core_vocabulary(tok))
    for name in names:
        assert walk(index, tok.encode(f"<vote>{name}</vote>")), name
    # the special tokens are not in the index's vocabulary
    assert tok.convert_tokens_to_ids("<|im_start|>") not in index.get_allowed_tokens(
        index.get_initial_state())
