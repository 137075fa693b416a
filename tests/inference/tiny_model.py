"""A tiny, randomly initialised causal LM for the inference tests (no network).

`build_tiny_model(out_dir, seed)` writes a Hugging Face folder that
`AutoTokenizer.from_pretrained(out_dir)` and
`AutoModelForCausalLM.from_pretrained(out_dir)` load offline:

- the tokenizer is a byte-level BPE (ByteLevel pre-tokenizer and decoder, all
  256 bytes in the base alphabet, so any text, and any string a guided decoder
  asks for, is representable) trained here on the project's own prompts, which
  are rendered from a few scripted games. Special tokens and their ids match
  SmolLM2: `<|endoftext|>` 0 (pad, unk), `<|im_start|>` 1 (bos), `<|im_end|>`
  2 (eos); the chat template is SmolLM2's ChatML without its default system
  message;
- the model is a two-layer `LlamaForCausalLM` with random float32 weights
  (seeded), saved as safetensors.

The output is deterministic for a seed. A marker file records the build version
and seed; a folder whose marker matches is reused as is. Bump `BUILD_VERSION`
when anything here changes what is written.

Guided decoding gotcha: outlines' `create_outlines_core_vocabulary(..., lambda
t: tok.convert_tokens_to_string([t]))` decodes each token on its own, so a
byte-level token holding part of a UTF-8 character (`Ã` = byte 0xC3, the first
half of "ë") becomes U+FFFD, and 128 such tokens collapse into one "\ufffd"
entry. The index then cannot produce non-ASCII text that the regex requires
("Zoë") and believes a lone continuation byte is a whole character.
`tossim.inference.vocabulary.byte_level_token_bytes` maps tokens to their raw
bytes instead (what outlines_core itself does for byte-level tokenizers);
its `outlines_core_vocabulary` builds the vocabulary with it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

BUILD_VERSION = 2
MARKER = "tiny_model.json"

ENDOFTEXT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = (ENDOFTEXT, IM_START, IM_END)  # ids 0, 1, 2, as in SmolLM2
VOCAB_SIZE = 1536
MAX_POSITIONS = 8192

# SmolLM2's ChatML template, without the default system message it inserts
# when the conversation has none.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# (players, game seed, names): scripted games whose prompts form the corpus.
# The third has non-ASCII names, quotes and '<' so the merges see them too.
CORPUS_GAMES: tuple[tuple[int, int, tuple[str, ...]], ...] = (
    (9, 1, ()),
    (15, 2, ()),
    (9, 5, ("Zoë", "José", "Ōtsuka", "Renée", "Björn", "Łukasz", 'Ana "Bee" <3',
            "Player 8", "Player 9")),
)

# What a model writes back (the prompts only describe it).
COMPLETIONS = (
    "<thinking>Player 4 claims Doctor.\nThat contradicts the will.</thinking>\n"
    "<vote>Player 4</vote>",
    "<thinking></thinking><speak>I am the Investigator. Player 2 is suspicious!</speak>",
    '<thinking>Quiet night.</thinking><whisper to="Player 5">I trust you.</whisper>',
    "<thinking>No evidence yet.</thinking><wait></wait>",
    "<thinking>Check the will first.</thinking><check_will>Player 3</check_will>",
    "<thinking>Guilty.</thinking><judge>guilty</judge>",
    "<thinking>Heal myself.</thinking><night>yourself</night>",
    "<thinking>Write it down.</thinking><will>N1: Player 4 - Mafia?</will>",
    '{"thinking": "Player 4 lied.", "action": "vote", "args": {"target": "Player 4"}}',
    '{"thinking": "", "action": "speak", "args": {"text": "Zoë, what did you see?"}}',
)


# ---- corpus -----------------------------------------------------------------------

def game_prompts(players: int, seed: int, names: tuple[str, ...] = ()) -> list[str]:
    """Play a scripted game; after every phase, a third of the seats take a
    turn: their system and turn prompts, in both protocols."""
    from tossim.agents.match import play_match
    from tossim.agents.memory import SeatMemory
    from tossim.agents.personas import persona_for
    from tossim.agents.prompting import build_messages
    from tossim.engine import GameConfig, PhaseTimeout, Viewer, view
    from tossim.engine.commands import Command
    from tossim.engine.state import Game

    texts: list[str] = []
    memories = {s: SeatMemory(s) for s in range(1, players + 1)}
    seen = dict.fromkeys(memories, 0)

    def after(game: Game, cmd: Command, events: object) -> None:
        if not isinstance(cmd, PhaseTimeout) or events is None:
            return
        for slot, memory in memories.items():
            obs = view(game, Viewer.player(slot), since=seen[slot])
            seen[slot] = obs.version
            memory.update(obs)
            if (slot + game.phase_seq) % 3:
                continue
            for protocol in ("xml", "json"):
                for message in build_messages(memory, None, protocol, persona_for(slot, seed)):
                    texts.append(message["content"])
            memory.end_turn()

    play_match(GameConfig(players=players, seed=seed, names=names), after=after)
    return texts


def corpus_texts() -> list[str]:
    """The training corpus: the prompts of `CORPUS_GAMES` and some model-style
    completions, in a fixed order, without duplicates."""
    texts = [t for game in CORPUS_GAMES for t in game_prompts(*game)]
    return list(dict.fromkeys([*texts, *COMPLETIONS]))


# ---- tokenizer ----------------------------------------------------------------------

def train_tokenizer(texts: list[str], vocab_size: int = VOCAB_SIZE) -> Any:
    """A byte-level BPE `tokenizers.Tokenizer` trained on `texts`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, show_progress=False,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def hf_tokenizer(tok: Any) -> Any:
    """`tok` wrapped for transformers, with the special tokens and chat template."""
    from transformers import PreTrainedTokenizerFast

    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=IM_START, eos_token=IM_END, pad_token=ENDOFTEXT,
        unk_token=ENDOFTEXT, model_max_length=MAX_POSITIONS)
    hf.chat_template = CHAT_TEMPLATE
    return hf


# ---- model --------------------------------------------------------------------------

def tiny_llama(vocab_size: int, seed: int, bos_id: int, eos_id: int, pad_id: int) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=MAX_POSITIONS,
        bos_token_id=bos_id, eos_token_id=eos_id, pad_token_id=pad_id,
        tie_word_embeddings=True, dtype="float32")
    with torch.random.fork_rng(devices=[]):  # leave the caller's RNG as it was
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    assert all(p.dtype == torch.float32 for p in model.parameters())
    model.generation_config.bos_token_id = bos_id
    model.generation_config.eos_token_id = eos_id
    model.generation_config.pad_token_id = pad_id
    return model


# ---- build --------------------------------------------------------------------------

@lru_cache(maxsize=1)
def corpus_digest() -> str:
    """The corpus is rendered from the project's prompt templates: when they
    change, the cached build is stale."""
    return hashlib.sha256("\x00".join(corpus_texts()).encode()).hexdigest()[:16]


def _marker(seed: int) -> dict[str, Any]:
    return {"version": BUILD_VERSION, "seed": seed, "corpus": corpus_digest()}


def is_built(out_dir: Path, seed: int = 0) -> bool:
    try:
        marker = json.loads((out_dir / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (out_dir / "config.json").is_file() and marker == _marker(seed)


def _write(out_dir: Path, seed: int) -> None:
    from transformers.utils import logging as hf_logging

    hf = hf_tokenizer(train_tokenizer(corpus_texts()))
    hf.save_pretrained(str(out_dir))
    model = tiny_llama(len(hf), seed, hf.bos_token_id, hf.eos_token_id, hf.pad_token_id)
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model.save_pretrained(str(out_dir))
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    (out_dir / MARKER).write_text(json.dumps(_marker(seed)) + "\n", encoding="utf-8")


def build_tiny_model(out_dir: Path, seed: int = 0) -> Path:
    """Build the tokenizer and model into `out_dir` (unless a build of this
    version and seed is already there) and return `out_dir`.

    The folder is written next to `out_dir` and renamed into place, so a
    reader never sees half a build and concurrent builders (pytest-xdist
    workers) do not corrupt each other."""
    out_dir = Path(out_dir)
    if is_built(out_dir, seed):
        return out_dir
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private
    try:
        _write(tmp, seed)
        if is_built(out_dir, seed):
            return out_dir  # another process finished first
        if out_dir.exists():
            shutil.rmtree(out_dir)  # a stale build (other version or seed)
        try:
            os.replace(tmp, out_dir)
        except OSError:
            if not is_built(out_dir, seed):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out_dir
