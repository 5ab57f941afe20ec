"""Where the test suite's wall time goes, measured in parts (validate/FINDINGS.md, "The test suite's time",
wt46_suitetime): the full run (README: `python -m pytest -q -n 2 --dist loadgroup --durations=25`) is too long
to repeat on a shared machine, so it is measured a piece at a time, one process, no xdist.

    PYTHONPATH=. python benchmarks/suite_profile.py collect [--out F.json]
        collect the whole suite once (`--collect-only`): its wall and CPU time, and per test file the tests
        (all / slow) and the seconds its module took to import and collect (the file's own imports included,
        so the first file to import torch carries torch's import)
    PYTHONPATH=. python benchmarks/suite_profile.py run [-m slow] [--out F.json] [-k EXPR] tests/test_a.py tests/test_b.py ...
        run those files in one process (`-n 0 -p no:randomly`), every test's setup, call and teardown timed;
        prints per file the seconds and the slowest tests and setups. A session fixture is set up once in the
        process, on the first test that needs it, as on the full run's worker (conftest.py: Workers)
    PYTHONPATH=. python benchmarks/suite_profile.py schedule F.json [F.json ...] [--collected C.json] [--xdist-order]
        the full run's two workers, simulated: the work units of conftest.py's FileOrGroupScheduling (each heavy
        fixture's group, every other file whole) in its order, each handed to the first worker that is free,
        with the seconds measured by `run` (a unit not measured counts its tests at the fast tier's mean);
        prints when each worker finishes, and the units that end the run

Times on a shared machine move with the load: compare figures of one run, or CPU times (`collect` prints both).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT_VAR = "SUITE_PROFILE_OUT"


# -- the pytest plugin (loaded into the measured pytest process with -p suite_profile) ---------------------

_records: dict = {"tests": {}, "modules": {}}


def _module_timer():
    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(collector):
        start = time.perf_counter()
        yield
        if type(collector).__name__ == "Module":
            _records["modules"][str(Path(str(collector.path)).relative_to(ROOT))] = time.perf_counter() - start

    return pytest_make_collect_report


pytest_make_collect_report = _module_timer()


def _cpu_s() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _test_timer():
    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        start = _cpu_s()
        yield
        _records["tests"].setdefault(item.nodeid, {})["cpu"] = _cpu_s() - start  # setup, call and teardown

    return pytest_runtest_protocol


pytest_runtest_protocol = _test_timer()


def pytest_collection_finish(session):  # noqa: D103 - a pytest hook
    for item in session.items:
        group = item.get_closest_marker("xdist_group")
        _records["tests"][item.nodeid] = {"slow": item.get_closest_marker("slow") is not None,
                                          "setup": 0.0, "call": 0.0, "teardown": 0.0}
        if group:
            _records.setdefault("groups", {})[item.nodeid] = group.args[0]


def pytest_runtest_logreport(report):  # noqa: D103 - a pytest hook
    entry = _records["tests"].setdefault(report.nodeid, {"slow": False, "setup": 0.0, "call": 0.0, "teardown": 0.0})
    entry[report.when] = report.duration
    entry.setdefault("outcome", report.outcome)
    if report.outcome != "passed":
        entry["outcome"] = report.outcome


def pytest_sessionfinish(session):  # noqa: D103 - a pytest hook
    path = os.environ.get(OUT_VAR)
    if path:
        Path(path).write_text(json.dumps(_records, indent=1) + "\n", encoding="utf-8")


# -- the commands -------------------------------------------------------------------------------------------

def _pytest(args: list[str], out: Path) -> tuple[int, float, float, dict]:
    env = dict(os.environ, **{OUT_VAR: str(out)})
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "benchmarks"), str(ROOT), env.get("PYTHONPATH", "")])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    code = subprocess.run([sys.executable, "-m", "pytest", "-p", "suite_profile", "-p", "no:randomly", *args],
                          cwd=ROOT, env=env).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return code, wall, cpu, json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def collect(out: Path) -> None:
    code, wall, cpu, data = _pytest(["--collect-only", "-q"], out)
    tests = data.get("tests", {})
    per_file: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for nodeid, entry in tests.items():
        per_file[_file_of(nodeid)][0] += 1
        per_file[_file_of(nodeid)][1] += entry["slow"]
    data.update(wall_s=wall, cpu_s=cpu, per_file=per_file, load=os.getloadavg())
    out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    slow = sum(entry["slow"] for entry in tests.values())
    print(f"collected {len(tests)} tests ({slow} slow) in {wall:.1f} s wall, {cpu:.1f} s CPU; exit {code}; "
          f"load {os.getloadavg()[0]:.1f}")
    modules = data.get("modules", {})
    print(f"modules: {len(modules)}, {sum(modules.values()):.1f} s importing and collecting them; the slowest:")
    for name, seconds in sorted(modules.items(), key=lambda kv: -kv[1])[:20]:
        print(f"  {seconds:7.2f} s  {name}  ({per_file[name][0]} tests, {per_file[name][1]} slow)")


def run(files: list[str], marker: str | None, out: Path) -> None:
    args = ["-q", "-n", "0", *(["-m", marker] if marker else []), *files]
    code, wall, cpu, data = _pytest(args, out)
    data.update(wall_s=wall, cpu_s=cpu, marker=marker, files=files, load=os.getloadavg())
    out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    ran = {k: v for k, v in data.get("tests", {}).items() if "outcome" in v}
    per_file: dict[str, float] = defaultdict(float)
    for nodeid, entry in ran.items():
        per_file[_file_of(nodeid)] += entry["setup"] + entry["call"] + entry["teardown"]
    print(f"{len(ran)} tests in {wall:.1f} s wall, {cpu:.1f} s CPU (exit {code}, load {os.getloadavg()[0]:.1f})")
    for name, seconds in sorted(per_file.items(), key=lambda kv: -kv[1]):
        print(f"  {seconds:8.2f} s  {name}")
    phases = [(entry[when], when, nodeid) for nodeid, entry in ran.items() for when in ("setup", "call", "teardown")]
    print("the slowest setups and calls:")
    for seconds, when, nodeid in sorted(phases, reverse=True)[:25]:
        print(f"  {seconds:8.2f} s  {when:8s} {nodeid}")


def schedule(measured: list[Path], collected: Path | None, xdist_order: bool = False,
             fast_s: float = 0.16, slow_s: float = 5.0) -> None:
    """The two workers of the full run, simulated (see the module's docstring); a test not measured counts
    fast_s or slow_s by its mark."""
    seconds: dict[str, float] = {}
    for path in measured:
        for nodeid, entry in json.loads(path.read_text(encoding="utf-8"))["tests"].items():
            if "outcome" in entry:
                seconds[nodeid] = entry["setup"] + entry["call"] + entry["teardown"]
    tests = json.loads(collected.read_text(encoding="utf-8"))["tests"] if collected else {k: {} for k in seconds}
    fixtures = json.loads(collected.read_text(encoding="utf-8")).get("groups", {}) if collected else {}
    for nodeid, entry in tests.items():
        seconds.setdefault(nodeid, slow_s if entry.get("slow") else fast_s)
    units: dict[str, list[str]] = {}
    for nodeid in tests:
        units.setdefault(fixtures.get(nodeid) or _file_of(nodeid), []).append(nodeid)
    sys.path.insert(0, str(ROOT))
    from tests.conftest import unit_order  # the order conftest's scheduler hands units out in

    order = unit_order(units, {u: 0 for u in units} if xdist_order else None)  # xdist's alone: most tests first
    workers = [0.0, 0.0]
    last: list[tuple[float, float, int, str]] = []
    for unit in order:
        cost = sum(seconds[n] for n in units[unit])
        w = workers.index(min(workers))
        last.append((workers[w], cost, w, unit))
        workers[w] += cost
    print(f"{len(units)} units, {len(tests)} tests (not measured: {fast_s} s a fast one, {slow_s} s a slow one); "
          f"workers finish at {workers[0]:.0f} s and {workers[1]:.0f} s (idle at the end: {abs(workers[0] - workers[1]):.0f} s)")
    print("the last units to start, and the longest:")
    for start, cost, w, unit in last[-5:] + sorted(last, key=lambda r: -r[1])[:10]:
        print(f"  start {start:7.0f} s  {cost:7.1f} s  worker {w}  {unit} ({len(units[unit])} tests)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--out", type=Path, default=Path("/tmp/suite_collect.json"))
    r = sub.add_parser("run")
    r.add_argument("-m", dest="marker")
    r.add_argument("--out", type=Path, default=Path("/tmp/suite_run.json"))
    r.add_argument("files", nargs="+")
    s = sub.add_parser("schedule")
    s.add_argument("measured", nargs="*", type=Path)
    s.add_argument("--collected", type=Path)
    s.add_argument("--xdist-order", action="store_true", help="the order before wt46_suitetime: most tests first")
    s.add_argument("--fast-s", type=float, default=0.16, help="a fast test not measured (README: the fast tier's "
                   "9 min 24 s on 2 workers for 7,056 tests)")
    s.add_argument("--slow-s", type=float, default=5.0, help="a slow test not measured (~5 s of CPU: an HF case)")
    args, extra = parser.parse_known_args()  # run: other options (-k EXPR, -x) go to pytest as they are
    if extra and args.command != "run":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "collect":
        collect(args.out.resolve())
    elif args.command == "run":
        run([*extra, *args.files], args.marker, args.out.resolve())
    else:
        schedule(args.measured, args.collected, args.xdist_order, args.fast_s, args.slow_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
