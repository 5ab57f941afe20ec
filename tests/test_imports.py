"""No import cycles among the project's modules (costmodel/, validate/, reports/, cli/ and cli.py).

The imports are read from the source (ast), at module level and inside functions alike: a lazy
import that closes a cycle still ties two modules together. `from package import module` counts as
an import of the module, not of the package's __init__.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("costmodel", "validate", "reports", "cli")


def project_modules() -> dict[str, Path]:
    files = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    out = {}
    for path in files:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    out["__main__"] = ROOT / "cli.py"  # the README's entry (`import cli` is the package)
    return out


def imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules that module `name` imports anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules]
            candidates = submodules if len(submodules) == len(node.names) else [base, *submodules]
        else:
            continue
        out.update(c for c in candidates if c in modules and c != name)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@lru_cache(maxsize=None)
def import_graph() -> dict[str, frozenset[str]]:
    """Each project module's imports, read once a process (both tests walk the same sources)."""
    modules = project_modules()
    return {name: frozenset(imported(name, path, modules)) for name, path in modules.items()}


def test_no_module_imports_itself_back():
    assert cycles(import_graph()) == []


def test_the_walk_sees_imports_a_cycle_would_use():
    """The walk is not blind: lazy, relative and package-level imports all register."""
    graph = import_graph()
    assert "costmodel.layout.serving_memory" in graph["costmodel.layout.timing"]  # inside a function
    assert "costmodel.errors" in graph["costmodel.quantization"]  # relative, module level
    assert "validate.torch_modes" in graph["validate.hf_families"]
    assert "costmodel.api" in graph["costmodel"]  # a package's __init__
    assert "cli.options" in graph["cli.estimate"] and "cli" in graph["__main__"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
