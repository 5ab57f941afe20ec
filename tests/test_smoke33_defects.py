"""Defects found by the thirty-third new user (wt34_user, session 34): an ML engineer who read only the README and
docs/commands.md asking how many parameters, FLOPs and bytes a model takes, whether it fits, how long and what a
run costs, and whether every command gives the same figure for the same setup."""

from __future__ import annotations

from tests.cli_run import run_json

DP8 = ["simulate", "--train", "--model", "llama2-7b", "--hardware", "h100", "--gpus", "8", "--dp", "8",
       "--recompute", "full"]


def test_recomputing_every_layer_by_count_is_full_recomputation(capsys):
    """`simulate --train --model llama2-7b --gpus 8 --dp 8 --recompute full` took 328 ms a step, and the same with
    `--recompute-layers 32` (Megatron's block method over all 32 layers: the same run) 287 ms: the layers' norms
    took 17.4 ms with the first and 1.6 ms with the second. The kernel model reads the bytes Hugging Face's eager
    training code moves (kernel_facts.json eager_training_bytes) by a leaf's path, "decoder.layer.ffn.norm", and
    the layers that --recompute-layers sets apart are named "decoder.recomputed_layer.ffn.norm": their code is
    the same layer's, so they now read the same measured bytes."""
    whole = run_json(DP8, capsys)["step"]
    counted = run_json([*DP8, "--recompute-layers", "32"], capsys)["step"]
    assert abs(counted["seconds"] / whole["seconds"] - 1) < 1e-9
    assert abs(counted["compute_seconds"] / whole["compute_seconds"] - 1) < 1e-9
    norms = [s for k, s in counted["compute_by_block_seconds"].items() if k.endswith("self_attention.norm")]
    assert norms == [whole["compute_by_block_seconds"]["decoder.layer.self_attention.norm"]]
    # half the layers rerun: between no recomputation and full, as the recomputed forwards' share says
    half = run_json([*DP8, "--recompute-layers", "16"], capsys)["step"]["seconds"]
    none = run_json([*DP8[:-1], "none"], capsys)["step"]["seconds"]
    assert none < half < whole["seconds"]
