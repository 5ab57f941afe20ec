"""Fixtures shared by several test files, and the two ways the suite is cut.

Tiers: `pytest -m "not slow"` is the fast tier for development (the README gives its count and
time on 2 cores); plain `pytest` is the full run. A test is slow when it takes more than about 3 s: it carries
@pytest.mark.slow, and every test that needs one of HEAVY_FIXTURES (each takes 9-110 s of CPU to set
up once, an empty expression cache: `published`'s tables below, the figures and report folders of
tests/test_reports*.py, the gloo ranks) is made slow here.

Sides: a test is `measured` when its module imports torch, transformers or validate/ (the
measured side) or when it carries @pytest.mark.measured itself; the rest are core tests of the
analytic side, which never imports torch: `pytest -m "not measured"`. Where torch is not
installed, the test files that import the measured side at their top are not collected at all,
so the core tests run on the analytic install alone.

Workers: the full run's `-n 2 --dist loadgroup --durations=25` (README) hands each worker whole units
(pytest_xdist_make_scheduler below): every test that needs a heavy fixture goes with the others that
need it (an xdist_group mark, added here, named by the costliest of HEAVY_FIXTURES it needs), those
groups first, costliest first, so each session fixture is set up once in the run; every other test
goes with its file, so a file's module fixtures and the caches its tests warm are built on one
worker (xdist's own loadgroup sent those tests one at a time to whichever worker was free, so both
built each file's setup: validate/FINDINGS.md, wt43_house). After the heavy groups come the files
with slow tests, most slow tests first, then the rest, largest first (xdist's order). A worker takes
the next unit when it is free, so the run ends on the many small fast files and both workers finish
together; in xdist's order alone (largest first) a file of one or two long tests (a serving table's
figures, the training demo: 60-120 s each) came among the last units while the other worker had
nothing left (validate/FINDINGS.md, wt46_suitetime).

Threads: the measured tests build tiny models, whose ops are too small for torch's intra-op
threads to pay on 2 cores, and the gloo ranks and CLI subprocesses share those cores; one OpenMP
thread per process (set here, before any test imports torch, and inherited by subprocesses; a
value in the environment wins) took a third off the CPU time of test_validate's real-tensor cases.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import types
from pathlib import Path

import pytest

MEASURED_PACKAGES = ("torch", "transformers", "validate")
HEAVY_FIXTURES = ("published_tables", "figures", "report_dir", "gloo", "full_report_dir")  # costliest first (Workers)

os.environ.setdefault("OMP_NUM_THREADS", "1")  # see Threads above


def _imports_the_measured_side(module: types.ModuleType | None) -> bool:
    for value in vars(module).values() if module else ():
        name = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", "")
        if isinstance(name, str) and name.split(".")[0] in MEASURED_PACKAGES:
            return True
    return False


def _imports_at_top(path: Path, seen: frozenset = frozenset()) -> set[str]:
    """The top-level packages a test file imports at module level, through the tests/ helper
    modules it imports (tests/distributed_cases.py imports validate/)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules = [node.module]
        else:
            continue
        for module in modules:
            names.add(module.split(".")[0])
            helper = Path(__file__).parent.joinpath(*module.split(".")[1:]).with_suffix(".py")
            if module.startswith("tests.") and helper.is_file() and helper not in seen:
                names |= _imports_at_top(helper, seen | {path})
    return names


def _torch_installed() -> bool:
    try:
        return importlib.util.find_spec("torch") is not None
    except ImportError:
        return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Without torch, a test file that imports the measured side at its top is not collected."""
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    if _torch_installed():
        return None
    return True if _imports_at_top(collection_path) & set(MEASURED_PACKAGES) else None


def _group_node_id(item: pytest.Item, group: str) -> None:
    """The "@group" suffix xdist's loadgroup scheduler groups by. pytest-xdist 3.8 writes it into
    item._nodeid, which pytest 9.2's structured node ids no longer read, so no test was grouped
    (pytest-dev/pytest-xdist#1386, fix #1388 open; measured: validate/FINDINGS.md, wt42_house): set the
    structured id here. Older pytest has no _pytest.nodeid, and xdist's own suffix works there."""
    try:
        from _pytest.nodeid import NodeId
    except ImportError:
        return
    if not item.nodeid.endswith(f"@{group}"):
        try:  # a private API: if a later pytest changes it, the run goes on ungrouped (slower, not wrong)
            item._id = NodeId.parse(f"{item.nodeid}@{group}")
        except (AttributeError, TypeError, ValueError):
            return


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """The full run's `--dist loadgroup` (README), its work units this suite's: each heavy fixture's
    group, and every other test file whole (see Workers above). None under the other --dist modes."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class FileOrGroupScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)  # the group after "@", else the node id itself
            return nodeid.split("::", 1)[0] if scope == nodeid else scope

        def _assign_work_unit(self, node) -> None:
            if not getattr(self, "_ordered", False):  # the first unit handed out: the queue as Workers says
                self._ordered = True
                for unit in unit_order(self.workqueue):
                    self.workqueue.move_to_end(unit)
            for group in reversed(HEAVY_FIXTURES):  # the heavy groups first, costliest at the front
                if group in self.workqueue:
                    self.workqueue.move_to_end(group, last=False)
            super()._assign_work_unit(node)

    return FileOrGroupScheduling(config, log)


def slow_functions(path: Path) -> set[str]:
    """The test functions of a test file that carry @pytest.mark.slow, or a case of theirs does
    (pytest.param(..., marks=pytest.mark.slow)); every test of the file where its pytestmark holds slow.
    Read from the file's text: the xdist controller, which orders the work units, collects no items."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return set()

    def says_slow(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Attribute) and n.attr == "slow" for n in ast.walk(node))

    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            if says_slow(node.value):
                return {"*"}
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(map(says_slow, node.decorator_list)):
            names.add(node.name)
    return names


def unit_order(units, slow: dict[str, int] | None = None) -> list[str]:
    """The order the full run hands its work units out in ({unit: its node ids}; see Workers above): the heavy
    groups, costliest first, then the units with slow tests, most first, then the rest, most tests first.
    slow: each unit's slow tests (default: slow_tests_of); benchmarks/suite_profile.py's schedule simulates
    this order, and its --xdist-order passes none slow (xdist's own, most tests first)."""
    slow = slow_tests_of(units) if slow is None else slow
    rest = sorted((unit for unit in units if unit not in HEAVY_FIXTURES),
                  key=lambda unit: (-slow[unit], -len(units[unit])))
    return [group for group in HEAVY_FIXTURES if group in units] + rest


def slow_tests_of(workqueue) -> dict[str, int]:
    """Each work unit's number of slow tests (>= 3 s each), from the test files' text (slow_functions)."""
    root, by_file, counts = Path(__file__).parent.parent, {}, {}
    for unit, nodeids in workqueue.items():
        counts[unit] = 0
        for nodeid in nodeids:
            path, _, rest = nodeid.partition("::")
            if path not in by_file:
                by_file[path] = slow_functions(root / path)
            function = rest.split("@")[0].split("[")[0].split("::")[-1]
            counts[unit] += bool(by_file[path] & {"*", function})
    return counts


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the xdist_group marks (its nodeid suffix)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    measured_modules: dict[str, bool] = {}
    for item in items:
        heavy = [name for name in HEAVY_FIXTURES if name in getattr(item, "fixturenames", ())]
        if heavy:
            item.add_marker(pytest.mark.slow)
            group = heavy[0]  # the costliest it needs: its others are set up on that worker too
            item.add_marker(pytest.mark.xdist_group(group))  # see Workers above
            if getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup
                _group_node_id(item, group)
        module = getattr(item, "module", None)
        key = getattr(module, "__name__", "")
        if key not in measured_modules:
            measured_modules[key] = _imports_the_measured_side(module)
        if measured_modules[key]:
            item.add_marker(pytest.mark.measured)


@pytest.fixture(scope="session")
def gloo() -> dict[str, list[dict]]:
    """Every small distributed case (tests/distributed_cases.py) run once on 2 gloo ranks:
    {case: [rank 0's result, rank 1's result]}."""
    from tests.distributed_cases import GLOO_CASES
    from validate.distributed.launch import run_gloo, run_jobs

    names = list(GLOO_CASES)
    by_rank = run_gloo(run_jobs, 2, [GLOO_CASES[name] for name in names], timeout_s=300)
    return {name: [by_rank[r][i] for r in range(2)] for i, name in enumerate(names)}


@pytest.fixture(scope="session")
def published_session() -> dict:
    """`published`'s tables (reports.published_runs.published_tables: all of published_runs.json's runs
    under both time models, Narayanan's and Korthikanti's tables, the frontier), computed once a test
    process: the four files that read the whole table each computed it on their own (six times, the
    command's own run included)."""
    from reports.published_runs import published_tables

    return published_tables()


@pytest.fixture
def published_tables(published_session, monkeypatch) -> dict:
    """A copy of the session's `published` tables for one test to read or change; and the `published`
    command, run in-process during the test, prints these same tables (it computes them with the
    same published_tables, which the session fixture ran once) instead of computing them again."""
    import copy

    import reports.published_runs as published_runs

    computed = published_runs.published_tables  # --no-host-syncs is another computation: not the shared one
    monkeypatch.setattr(published_runs, "published_tables",
                        lambda host_syncs=True: copy.deepcopy(published_session) if host_syncs else computed(host_syncs))
    return copy.deepcopy(published_session)


@pytest.fixture
def served(monkeypatch):
    """costmodel.serving.api.serve spied on: the options of its last call (the dict it yields),
    the real serve run with them (tests/test_serve_published*.py)."""
    import costmodel.serving.api as api

    seen, real_serve = {}, api.serve

    def serve(model, hardware, **options):
        seen.update(model=model, hardware=hardware, **options)
        return real_serve(model, hardware, **options)

    monkeypatch.setattr(api, "serve", serve)
    seen["_real"] = real_serve
    return seen
