"""`tossim eval drift`: decision situations run clean and under each fault kind."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tossim.analysis.drift import (
    FAULTS,
    build_situations,
    inject,
    misspell,
    model_player,
    run_drift,
    scripted_player,
    table,
)
from tossim.cli import app


def test_scripted_table_is_the_same_twice_and_drops_on_premise_faults(tmp_path: Path) -> None:
    runner = CliRunner()
    outs = []
    for i in range(2):
        r = runner.invoke(app, ["eval", "drift", "--situations", "8", "--seed", "3",
                                "--out", str(tmp_path / f"run{i}")])
        assert r.exit_code == 0, r.output
        outs.append(r.output.replace(f"run{i}", "run"))
    assert outs[0] == outs[1]  # paired and seeded: the same table and runs
    assert (tmp_path / "run0.csv").read_text() == (tmp_path / "run1.csv").read_text()
    data = json.loads((tmp_path / "run0.json").read_text())
    assert data["situations"] == 8 and len(data["runs"]) == 8 * (1 + len(FAULTS))
    rows = {r["fault"]: r for r in data["table"]}
    assert set(rows) == set(FAULTS)
    # the bots decide every clean situation right ...
    assert all(r["success_clean"] == 1.0 for r in rows.values())
    # ... and trust a false claim or a forged will: a real drop on premise faults
    assert rows["premise"]["drop"] >= 0.25
    assert rows["premise"]["success_faulted"] < rows["premise"]["success_clean"]
    # a bot remembers everything and ignores chatter: no drop there; it never checks
    assert rows["parameter"]["drop"] == 0 and rows["intention"]["drop"] == 0
    assert all(r["clarified"] == 0 for r in rows.values())
    assert "premise" in outs[0] and "drop" in outs[0]


def test_faults_edit_only_the_seats_context() -> None:
    sits = build_situations(4, 5)
    for sit in sits:
        clean = inject(sit, "clean")[0]
        subject = sit.names[sit.subject]
        texts = lambda v: [e["text"] for e in v.events]  # noqa: E731
        # the clean context carries the evidence about the subject
        assert any(subject in e["text"] for e in clean.events if e["v"] in sit.evidence)
        premise = inject(sit, "premise")[0]
        assert texts(premise) != texts(clean)
        assert any("not suspicious" in t or "is lying" in t for t in texts(premise))
        expr = inject(sit, "expression")[0]
        for e in expr.events:
            if e["v"] in sit.evidence:
                assert subject not in e["text"]
        assert any(misspell(subject) in t for t in texts(expr))
        first, second = inject(sit, "parameter")
        assert first.events + second.events == clean.events
        assert first.legal == [] and second.legal == clean.legal
        assert all(e["v"] not in sit.evidence for e in second.events)
        noisy = inject(sit, "intention")[0]
        assert len(noisy.events) > len(clean.events)
        assert texts(noisy)[:len(clean.events)] == texts(clean)
        # the situation itself is untouched by injecting
        assert texts(inject(sit, "clean")[0]) == texts(clean)


def test_the_tiny_model_runs_a_small_drift_eval_end_to_end(tiny_model_dir: Path) -> None:
    pytest.importorskip("outlines_core")
    from tossim.inference.local_backend import LocalBackend

    backend = LocalBackend(tiny_model_dir)
    sits = build_situations(1, 1)  # one situation, clean and under each fault
    outcomes = asyncio.run(run_drift(sits, model_player(backend)))
    assert len(outcomes) == 1 + len(FAULTS)
    # every run ended in one legal decision of the asked kind, or a wait
    allowed = {"guilty", "innocent", "abstain", "wait"}
    for o in outcomes:
        assert o.action in allowed or o.action.startswith("vote "), o
    rows = table(outcomes)
    assert [r["fault"] for r in rows] == list(FAULTS)
    assert all(0 <= r["clarified"] <= 1 for r in rows)


def test_scripted_runs_are_paired_with_their_clean_run() -> None:
    sits = build_situations(4, 2)
    outcomes = asyncio.run(run_drift(sits, scripted_player()))
    assert [o.fault for o in outcomes[:5]] == ["clean", *FAULTS]
    assert {o.situation for o in outcomes} == {s.id for s in sits}
