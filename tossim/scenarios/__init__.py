"""Scenario files: the YAML format of docs/scenarios.md, compiled and run
against the engine (`scenario.py`; YAML with line numbers in `lines.py`,
mode-dealing checks in `deal_check.py`).

Above the engine, which does no I/O and parses no files; a scenario's prior
state reaches a game through `tossim.engine.setup` (docs/architecture.md,
"Layers").
"""
