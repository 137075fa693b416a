"""The night engine's design promise (docs/architecture.md, "Adding a role"):
the roles added on top of the Classic list live in the registry, their
handler modules, their scenarios and their bot hints only. The shared
engine modules and the prompt builder name none of them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tossim.engine.roles import ROLES
from tossim.engine.roles.handlers import AVAILABLE, CONDITIONS, HANDLERS, REACTIONS
from tossim.engine.roles.registry import MAFIA_ROLES, NEUTRAL_ROLES, VAMPIRE_ROLES

ROOT = Path(__file__).resolve().parent.parent
SHARED = ["tossim/engine/night.py", "tossim/engine/legal.py", "tossim/engine/phases.py",
          "tossim/engine/rules.py", "tossim/engine/view.py", "tossim/agents/prompting.py"]
ADDED = [r for r in (*MAFIA_ROLES, *NEUTRAL_ROLES, *VAMPIRE_ROLES)]


@pytest.mark.parametrize("path", SHARED)
def test_shared_modules_name_no_added_role(path: str) -> None:
    text = (ROOT / path).read_text(encoding="utf-8")
    for r in ADDED:
        for word in {r.key, r.name}:
            hits = re.findall(rf"[\"']{re.escape(word)}[\"']", text)
            assert not hits, f"{path} names the role {word!r}"


@pytest.mark.parametrize("key", sorted(ROLES))
def test_every_ability_names_a_registered_handler(key: str) -> None:
    r = ROLES[key]
    for a in (r.night, *r.passives):
        if a is not None:
            assert a.handler_key in HANDLERS, (key, a.handler_key)
            assert not a.available or a.available in AVAILABLE, (key, a.available)
    assert not r.on_block or r.on_block in REACTIONS
    assert not r.becomes_when or r.becomes_when in CONDITIONS
    assert not r.becomes or r.becomes in ROLES
