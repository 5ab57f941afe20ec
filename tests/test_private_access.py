"""No module reaches into another module's private names (a leading underscore): what one room
needs from another is public (costmodel/layout/rank.py's ParallelEstimate.on_stage, tied_copy,
tensor_parallel_collectives; costmodel/roofline_model.py's Roofline.decoder_tree; ...).

Read from the source (ast), in costmodel/, validate/, reports/, benchmarks/, cli/ and cli.py:
- `from project.module import _name` is a reach-through;
- `something._name` where _name is defined private in another project module and `something` is
  not `self`, `cls` or `super()` is one too. Private names of other libraries (torch's `_C`,
  transformers' engine internals) are not the project's and are not counted.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("costmodel", "validate", "reports", "benchmarks", "cli")


def sources() -> dict[str, Path]:
    files = [path for folder in FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))]
    return {**{".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p for p in files},
            "__main__": ROOT / "cli.py"}


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def defined_private(tree: ast.AST) -> set[str]:
    """Private functions, classes, methods and module-level names a module defines."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and is_private(node.name):
            out.add(node.name)
    for node in getattr(tree, "body", []):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out.update(t.id for t in targets if isinstance(t, ast.Name) and is_private(t.id))
    return out


@lru_cache(maxsize=None)
def parsed(path: Path) -> ast.AST:
    """A source's tree, parsed once a process: both tests walk every module (the parse was most of
    their 41 s and 26 s in the fast tier); the walk only reads the trees."""
    return ast.parse(path.read_text(encoding="utf-8"))


def reach_throughs(modules: dict[str, Path]) -> list[str]:
    trees = {name: parsed(path) for name, path in modules.items()}
    owners: dict[str, set[str]] = {}
    for name, tree in trees.items():
        for private in defined_private(tree):
            owners.setdefault(private, set()).add(name)
    found = []
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in (*FOLDERS, "cli"):
                found += [f"{name}: from {node.module} import {a.name}" for a in node.names if is_private(a.name)]
            elif isinstance(node, ast.ImportFrom) and node.level:  # relative: always the project's
                found += [f"{name}: from {'.' * node.level}{node.module or ''} import {a.name}"
                          for a in node.names if is_private(a.name)]
            elif isinstance(node, ast.Attribute) and is_private(node.attr) and node.attr in owners:
                owner = node.value
                mine = isinstance(owner, ast.Name) and owner.id in ("self", "cls") or (
                    isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super")
                if not mine and name not in owners[node.attr]:
                    found.append(f"{name}: .{node.attr} (defined in {', '.join(sorted(owners[node.attr]))})")
    return found


def test_no_module_reaches_into_another_modules_private_names():
    assert reach_throughs(sources()) == []


def test_the_walk_sees_a_reach_through(tmp_path):
    """Not blind: a private import and a private attribute of another module both register. The
    probe lives outside the repository: written into tests/, it raced the suite's other walks over
    the sources (a parallel worker listed it, then found it gone)."""
    modules = sources()
    probe = tmp_path / "_probe_private.py"
    probe.write_text("from costmodel.layout.rank import uses_loss_parallel, _probe\n"
                     "def f(estimate, roof):\n    return roof.decoder_tree(), estimate._largest_layer('params')\n")
    found = reach_throughs({**modules, "tests._probe_private": probe})
    assert "tests._probe_private: from costmodel.layout.rank import _probe" in found
    assert any(f.startswith("tests._probe_private: ._largest_layer") for f in found)
    assert not any("decoder_tree" in f or "uses_loss_parallel" in f for f in found)
