"""The full run's scheduler (tests/conftest.py pytest_xdist_make_scheduler, README's `-n 2 --dist loadgroup`):
driven here as xdist's controller drives it, on a made-up collection and two made-up workers, so that a
pytest-xdist whose scheduler internals moved fails here instead of silently spreading a file's tests (or a
heavy fixture's) over both workers."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

pytest.importorskip("xdist")

from tests.conftest import HEAVY_FIXTURES, pytest_xdist_make_scheduler, slow_functions, unit_order  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
COLLECTION = [
    "tests/test_a.py::test_one", "tests/test_a.py::test_two[1]", "tests/test_a.py::test_two[2]", "tests/test_a.py::test_3",
    "tests/test_b.py::test_ranks@gloo", "tests/test_b.py::test_tp@gloo", "tests/test_b.py::test_pp@gloo",
    "tests/test_b.py::test_plain",
    "tests/test_c.py::test_ratio@published_tables", "tests/test_d.py::test_rows@published_tables",
    "tests/test_e.py::test_mail[a@b]", "tests/test_e.py::test_other",
    "tests/test_f.py::test_figure@figures", "tests/test_f.py::test_page@figures",
]


class Worker:
    def __init__(self, name: str) -> None:
        self.gateway = types.SimpleNamespace(id=name)
        self.shutting_down, self.sent = False, []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.append(list(indices))

    def shutdown(self) -> None:
        self.shutting_down = True


def _config(dist: str) -> types.SimpleNamespace:
    values = {"dist": dist, "tx": ["2*popen"]}
    return types.SimpleNamespace(getvalue=values.__getitem__, option=types.SimpleNamespace(loadscopereorder=True))


def _run(collection: list[str] = COLLECTION) -> tuple[dict[str, str], list[Worker]]:
    """Every test of `collection` run to completion, each worker finishing what it was sent in turn:
    {node id: the worker that ran it}, and the workers (their first batch in .sent[0])."""
    scheduler = pytest_xdist_make_scheduler(_config("loadgroup"), None)
    workers = [Worker("gw0"), Worker("gw1")]
    for worker in workers:
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, collection)
    scheduler.schedule()
    ran, done = {}, {worker: 0 for worker in workers}
    while len(ran) < len(collection):  # the workers take turns, one test each, as two busy workers would
        progressed = False
        for worker in workers:
            sent = [index for batch in worker.sent for index in batch]
            if done[worker] < len(sent):
                index = sent[done[worker]]
                ran[collection[index]] = worker.gateway.id
                done[worker] += 1
                scheduler.mark_test_complete(worker, index)
                progressed = True
        assert progressed, f"the scheduler stopped with {len(collection) - len(ran)} tests unsent"
    return ran, workers


def test_each_file_and_each_heavy_group_runs_on_one_worker():
    ran, _ = _run()
    assert sorted(ran) == sorted(COLLECTION)  # each test once
    units = {}
    for nodeid, worker in ran.items():
        group = nodeid.rsplit("@", 1)[1] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid.split("::")[0]
        units.setdefault(group, set()).add(worker)
    assert set(units) == {"tests/test_a.py", "tests/test_b.py", "tests/test_e.py", "gloo", "published_tables",
                          "figures"}  # a "@" inside a parameter's brackets is no group
    assert all(len(workers) == 1 for workers in units.values()), units


def test_the_heavy_groups_go_first_costliest_at_the_front():
    _, workers = _run()
    first = [[COLLECTION[index] for index in worker.sent[0]] for worker in workers]
    assert first[0] == ["tests/test_c.py::test_ratio@published_tables", "tests/test_d.py::test_rows@published_tables"]
    assert first[1] == ["tests/test_f.py::test_figure@figures", "tests/test_f.py::test_page@figures"]
    assert HEAVY_FIXTURES[:2] == ("published_tables", "figures")


def test_the_other_modes_keep_xdist_s_own_scheduler():
    assert pytest_xdist_make_scheduler(_config("load"), None) is None
    assert pytest_xdist_make_scheduler(_config("worksteal"), None) is None


# tests/test_train.py's real slow tests (its demo: 97-118 s in the full runs of sessions 44 and 45) beside a larger
# file of fast tests: the slow one is read from the file's text (conftest.slow_functions), as the controller reads it
SLOW_LATE = [*COLLECTION[8:10], *COLLECTION[12:14],  # the heavy groups, one each
             "tests/test_a.py::test_one", "tests/test_a.py::test_two[1]", "tests/test_a.py::test_two[2]",
             "tests/test_a.py::test_3", "tests/test_e.py::test_other",
             "tests/test_train.py::test_full_demo_reaches_99_percent_exact_match",
             "tests/test_train.py::test_reversal_batches_are_the_seeds_task"]


def test_files_with_slow_tests_go_before_the_fast_files():
    """After the heavy groups, a file with slow tests before every file of fast tests, even a larger one (xdist's
    own order, most tests first, sent test_a.py first and left the demo among the last units of the run)."""
    assert {"test_full_demo_reaches_99_percent_exact_match", "test_training_is_reproducible"} <= slow_functions(
        ROOT / "tests/test_train.py")
    assert "test_reversal_batches_are_the_seeds_task" not in slow_functions(ROOT / "tests/test_train.py")
    engine = slow_functions(ROOT / "tests/test_serving_engine.py")  # a case marked slow: pytest.param(marks=...)
    assert "test_schedule_equals_transformers_engine" in engine and "test_small_cache_exercises_soft_resets" not in engine
    _, workers = _run(SLOW_LATE)
    second = [[SLOW_LATE[index] for index in worker.sent[1]] for worker in workers]
    assert second[0] == SLOW_LATE[9:]  # the first worker free after its heavy group takes test_train.py
    assert second[1] == SLOW_LATE[4:8]


def test_the_scheduler_hands_units_out_in_unit_order():
    """The scheduler's order is conftest.unit_order, the one rule benchmarks/suite_profile.py's schedule simulates
    (it kept a copy of the sort: wt46_integreview)."""
    _, workers = _run(SLOW_LATE)
    batches = sorted((turn, worker.gateway.id, [SLOW_LATE[index] for index in batch])
                     for worker in workers for turn, batch in enumerate(worker.sent))
    sent = [batch[0].rsplit("@", 1)[1] if "@" in batch[0] else batch[0].split("::")[0] for _, _, batch in batches]
    units = {}
    for nodeid in SLOW_LATE:
        units.setdefault(nodeid.rsplit("@", 1)[1] if "@" in nodeid else nodeid.split("::")[0], []).append(nodeid)
    assert sent == unit_order(units) == ["published_tables", "figures", "tests/test_train.py", "tests/test_a.py",
                                         "tests/test_e.py"]
    assert unit_order(units, dict.fromkeys(units, 0))[2:] == ["tests/test_a.py", "tests/test_train.py",
                                                            "tests/test_e.py"]  # xdist's own: most tests first
