"""`plan --serve --rate --ray ADDRESS`: the capacity search's configurations as Ray tasks return
exactly the local process pool's ranking (Ray's local mode, one CPU). Ray is in the test extra
(ray==2.60.0: a 79 MB wheel, 14 s to install, 260 MB on disk), so this test imports it and fails,
rather than skips, where it is missing."""

from __future__ import annotations

import json

import pytest

import costmodel
from costmodel.hardware import load_hardware
from costmodel.serving.capacity import Target, plan_capacity


@pytest.fixture(scope="module")
def ray_one_cpu():
    import ray

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_search_ranks_as_the_process_pool(ray_one_cpu):
    cfg = costmodel.load_model("llama3-8b")
    hardwares = [load_hardware("h100-sxm"), load_hardware("a100-80gb")]
    # 2 presets x tp 1, 2 x 2 x 2 budgets: 16 configurations in 4 Ray tasks; a tight TPOT SLO so
    # that some need several replicas and some are infeasible
    target = Target(rate=12, slo_ttft=1.0, slo_tpot=0.010, requests=60, prompt="uniform:64:1024",
                    output="uniform:16:256", seed=3)
    options = dict(tps=[1, 2], max_num_seqs=[16, 64], max_batched_tokens=[512, 2048])
    pool = plan_capacity(cfg, hardwares, target, processes=2, **options)
    ray_result = plan_capacity(cfg, hardwares, target, ray_address="local", **options)
    assert ray_result == pool
    # 12 feasible, needing different replica counts (1, 2 or 4 replicas on today's model), and the 4 A100
    # tp 1 configurations not (a request alone already takes over 10 ms an output token there, under
    # vLLM v1's piecewise CUDA graphs, --cuda-graphs auto; 12 ms was the bound before they were modelled)
    assert len(pool["feasible"]) == 12 and len(pool["infeasible"]) == 4
    assert len({r["replicas"] for r in pool["feasible"]}) >= 2
    assert [r["gpus"] for r in pool["feasible"]] == sorted(r["gpus"] for r in pool["feasible"])


@pytest.mark.slow
def test_plan_cli_takes_ray(ray_one_cpu, capsys):
    from cli import main

    args = ["plan", "--serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "4", "--slo-ttft", "1",
            "--slo-tpot", "0.05", "--requests", "40", "--tp", "1", "--json"]
    assert main(args) == 0
    pool = json.loads(capsys.readouterr().out)
    assert main(args + ["--ray", "local"]) == 0
    assert json.loads(capsys.readouterr().out) == pool and pool["configurations"] == 9


def test_ray_without_rate_is_one_line(capsys):
    from cli import main

    assert main(["plan", "--serve", "--model", "llama3-8b", "--gpus", "1", "--ray", "local"]) == 2
    assert "--ray runs the capacity search: add --serve --rate." in capsys.readouterr().err


def test_ray_missing_is_one_line(monkeypatch, capsys):
    """Where Ray is not installed, --ray says how to install it (one line, exit 2)."""
    import sys

    from cli import main

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    args = ["plan", "--serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "4", "--slo-ttft", "1",
            "--slo-tpot", "0.05", "--requests", "10", "--tp", "1", "--ray", "local"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--ray needs Ray: pip install 'transformer-costmodel[ray]'" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("address, said", [("", "--ray needs an address"),
                                           ("not a host", "--ray 'not a host': Ray could not connect")])
def test_a_bad_ray_address_is_one_line(monkeypatch, capsys, address, said):
    """An empty or malformed address: one line naming --ray, exit 2 (Ray's ValueError was a traceback)."""
    import ray

    from cli import main

    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # as a fresh process finds it
    args = ["plan", "--serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "4", "--slo-ttft", "1",
            "--slo-tpot", "0.05", "--requests", "10", "--tp", "1", "--ray", address]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1
