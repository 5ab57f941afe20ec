"""Running one function on every rank of a process group, on the CPU.

run_gloo(fn, world_size, *args): real collectives. world_size processes are spawned
(torch.multiprocessing, start method "spawn"), each joins a gloo process group on 127.0.0.1 at a
free port, sets one intra-op thread, and returns fn(rank, world_size, *args). The results come back
as a list indexed by rank (as JSON through files, so large results cannot block a pipe; results are
plain data: numbers, strings, lists and dicts; JSON turns tuples into lists, and the integer keys
it writes as strings (stage indices) are read back as integers). An
exception in any rank is raised in the parent with that rank's traceback; a run that exceeds
timeout_s is killed and raises TimeoutError. fn must be importable by name (a module-level function).

run_fake(fn, world_size, ranks, *args): the fake process group
(torch.testing._internal.distributed.fake_pg), one rank after the other in this process. Its
collectives move nothing and return uninitialised buffers, so values are garbage but every shape,
dtype and byte is the one that rank would see: worlds of any size, and under FakeTensorMode models of
any size, without memory. The DeviceMesh must be created outside FakeTensorMode.

run_jobs(rank, world_size, jobs) runs several (fn, case) measurements on one rank, so that one
spawn (seconds of imports per process) serves many small cases: run_gloo(run_jobs, 2, jobs).
"""

from __future__ import annotations

import contextlib
import os
import json
import socket
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

DEFAULT_TIMEOUT_S = 300


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _worker(rank: int, world_size: int, port: int, out_dir: str, timeout_s: float,
            fn: Callable[..., Any], args: tuple) -> None:
    """One spawned rank: join gloo, wait for every rank to join, run fn, write ("ok", result) or ("error", traceback), then
    leave the group. The outcome is written before the teardown: gloo's threads can abort the
    process as it tears down ("terminate called without an active exception", SIGABRT), after the
    measurement is complete, and that must not lose the result."""
    torch.set_num_threads(1)
    outcome: tuple[str, Any]
    try:
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size,
            timeout=timedelta(seconds=timeout_s),
        )
        # Every rank past gloo's connectFullMesh before any runs fn: a rank whose fn needs no
        # collective could otherwise finish and exit while a peer is still connecting, and that
        # peer's init fails ("Connection closed by peer", seen in CI at stop 55).
        dist.barrier()
        outcome = ("ok", fn(rank, world_size, *args))
    except BaseException:  # noqa: BLE001 - every failure goes back to the parent as text
        outcome = ("error", traceback.format_exc())
    path = os.path.join(out_dir, f"rank{rank}.json")
    with open(path + ".part", "w") as f:
        json.dump(outcome, f)
    os.replace(path + ".part", path)  # whole or absent, never half-written
    if dist.is_initialized():
        dist.destroy_process_group()


def _integer_keys(pairs: list[tuple[str, Any]]) -> dict[Any, Any]:
    """A JSON object with its decimal-integer keys (written from ints) as ints again."""
    return {int(k) if k.isdigit() else k: v for k, v in pairs}


class RankFailed(RuntimeError):
    """A rank of a spawned run raised; the message holds its traceback."""


def run_gloo(fn: Callable[..., Any], world_size: int, *args: Any,
             timeout_s: float = DEFAULT_TIMEOUT_S) -> list[Any]:
    """fn(rank, world_size, *args) on world_size spawned gloo ranks; the results by rank."""
    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, got {world_size}.")
    with tempfile.TemporaryDirectory(prefix="gloo-run-") as out_dir:
        context = mp.start_processes(
            _worker, args=(world_size, free_port(), out_dir, timeout_s, fn, args),
            nprocs=world_size, join=False, start_method="spawn",
        )
        _join(context, timeout_s)
        return [_read_outcome(out_dir, rank, process.exitcode)
                for rank, process in enumerate(context.processes)]


def _join(context: Any, timeout_s: float) -> None:
    """Wait for every rank to exit. Unlike context.join, a rank that dies does not get the others
    killed: each rank's result file says whether its measurement finished (see _worker), and
    _read_outcome reports a rank that did not."""
    deadline = time.monotonic() + timeout_s + 60  # + process start-up and teardown
    try:
        for process in context.processes:
            process.join(timeout=max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                raise TimeoutError(f"the spawned ranks did not finish within {timeout_s + 60:.0f} s.")
    except BaseException:
        for process in context.processes:
            if process.is_alive():
                process.kill()
        raise


def _read_outcome(out_dir: str, rank: int, exitcode: int | None = None) -> Any:
    path = os.path.join(out_dir, f"rank{rank}.json")
    if not os.path.exists(path):
        raise RankFailed(f"rank {rank} exited (exit code {exitcode}) without writing a result.")
    with open(path) as f:
        status, value = json.load(f, object_pairs_hook=_integer_keys)
    if status == "error":
        raise RankFailed(f"rank {rank} raised:\n{value}")
    return value


@contextlib.contextmanager
def fake_process_group(rank: int, world_size: int) -> Iterator[None]:
    """This process plays rank `rank` of a fake world of world_size (no communication)."""
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        raise RuntimeError("a default process group already exists in this process; destroy it first.")
    dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world_size)
    try:
        yield
    finally:
        dist.destroy_process_group()
        forget_dtensor_caches()


def forget_dtensor_caches() -> None:
    """Clear DTensor's sharding-propagation and redistribution caches. Their keys hold global
    shapes and placements but not the rank, so a rank played after another in this process would
    reuse the other's local shapes of an uneven shard (rank 3 of 4 given rank 0's 25 of 99 rows)."""
    from torch.distributed.tensor._redistribute import clear_redistribute_planner_cache
    from torch.distributed.tensor.debug import _clear_sharding_prop_cache

    _clear_sharding_prop_cache()
    clear_redistribute_planner_cache()


def run_fake(fn: Callable[..., Any], world_size: int, ranks: Sequence[int] | None = None,
             *args: Any) -> dict[int, Any]:
    """fn(rank, world_size, *args) for each rank (default all) of a fake world, one after another."""
    result = {}
    for rank in ranks if ranks is not None else range(world_size):
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is outside a world of {world_size}.")
        with fake_process_group(rank, world_size):
            result[rank] = fn(rank, world_size, *args)
    return result


def run_jobs(rank: int, world_size: int, jobs: Sequence[tuple[Callable[..., Any], Any]]) -> list[Any]:
    """Several measurements in one process group: [fn(rank, world_size, case) for fn, case in jobs].
    Spawning ranks costs seconds of imports; one spawn can run every small case."""
    return [fn(rank, world_size, case) for fn, case in jobs]
