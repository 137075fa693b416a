"""Layers that only point down (docs/architecture.md, "Layers").

`lint-imports` (scripts/test) checks the contracts of pyproject.toml's
`[tool.importlinter]`; these tests add what a contract cannot say: that no
tossim module takes part in an import cycle, and that the architecture doc
names the contract's layers in the contract's order.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def _layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return [{name.strip() for name in layer.split("|")} for layer in contract["layers"]]


def _cycles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(imports[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(imports):
        if module not in index:
            visit(module)
    return groups


def test_no_tossim_module_is_part_of_an_import_cycle() -> None:
    """Imports that run (not those under `if TYPE_CHECKING:`, which are for
    annotations only), including the lazy ones inside functions."""
    graph = grimp.build_graph("tossim", cache_dir=None, exclude_type_checking_imports=True)
    imports = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(imports) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    imports = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(imports) == [["a", "b", "c"]]


def test_the_architecture_doc_lists_the_contracts_layers_in_order() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    listed = [set(re.findall(r"`(tossim\.[a-z_.]+)`", line))
              for line in section.splitlines() if re.match(r"\d+\. ", line)]
    assert listed == _layers()


def test_every_tossim_package_is_in_a_layer() -> None:
    """A new package is placed in the contract (and the doc), not left out of it."""
    named = set().union(*_layers())
    packages = {f"tossim.{p.parent.name if p.name == '__init__.py' else p.stem}"
                for p in (ROOT / "tossim").glob("*/__init__.py")}
    modules = {f"tossim.{p.stem}" for p in (ROOT / "tossim").glob("*.py")
               if p.name != "__init__.py"}
    assert packages | modules <= named
