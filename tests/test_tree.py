"""The cost tree as the one owner of every number: facts as data, architecture as config fields,
structured leaves, the compiled fast path, the Python API, and simulate on encoder-decoders."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import costmodel
from costmodel import compiled, facts
from costmodel.config import Workload
from costmodel.spec import IMPLEMENTATIONS
from costmodel.estimation import Estimate, _expressions
from costmodel.evaluate import exact, values
from costmodel.hardware import load_hardware
from costmodel.presets import load_preset
from costmodel.roofline import Roofline, simulate_inference
from costmodel.tree import CostModel, profile_for
from reports.generation import step_costs
from tests.odd_configs import odd_configs
from validate.compare import build, validate
from validate.measure import other_op_elements

ROOT = Path(__file__).resolve().parent.parent


def small_llama(**changes):
    return load_preset("llama2-7b").replace(
        name="llama-small", vocab_size=99, d_model=48, n_heads=6, n_kv_heads=2, d_ff=37,
        n_decoder_layers=2, max_positions=64, **changes)


# ---------------------------------------------------------------------------------------------
# Architecture facts are config fields


@pytest.mark.slow
def test_unscaled_attention_scores_need_no_family():
    """A Llama-like config with attention_scale = 1 (T5's unscaled scores, without being T5):
    the tree drops one multiply per (query, key) pair per layer, and the reference model built
    from the same config agrees on every validated quantity and on the multiplies it runs."""
    scaled, unscaled = small_llama(), small_llama(attention_scale=1.0)
    workload = Workload(seq_len=10, batch=2, dtype="fp32", impl="reference")
    tree = {cfg.name: Estimate(cfg, workload).flops()["other_elements"]["mul"] for cfg in
            (scaled, unscaled.replace(name="unscaled"))}
    pairs = 2 * 2 * 6 * 10 * 10  # layers x b x h x n x n
    assert tree["llama-small"] - tree["unscaled"] == pairs
    measured = {}
    for cfg in (scaled, unscaled):
        torch.manual_seed(0)
        model, inputs, _ = build(cfg, workload, "reference")
        measured[cfg.attention_scale] = other_op_elements(model, inputs).get("aten.mul.Tensor", 0)
    assert measured[None] - measured[1.0] == pairs
    rows = validate(unscaled, workload, target="reference", device="cpu")
    assert rows and all(row.ok for row in rows), [r for r in rows if not r.ok]


def test_t5_gets_its_scaling_from_config_fields():
    t5 = load_preset("t5-small")
    assert (t5.attention_scale, t5.scale_lm_head_input, t5.scaled_scores) == (1.0, True, False)
    assert t5.replace(attention_scale=None).scores_scale == 64**-0.5


# ---------------------------------------------------------------------------------------------
# Implementation facts are data


def test_a_fact_changed_in_the_table_changes_the_saved_bytes(tmp_path, monkeypatch):
    """Drop the row that says Hugging Face's Llama takes its softmax in fp32: with no code edit,
    each layer keeps its probabilities once in bf16 (2 bytes) instead of in fp32 plus a bf16 cast
    (4 + 2 bytes): 4 bytes less per (query, key) pair."""
    cfg, workload = small_llama(), Workload(seq_len=10, batch=2, dtype="bf16")
    before = Estimate(cfg, workload).memory_numbers()["activations"]
    rows = [row for row in json.loads(facts.FACTS_PATH.read_text())
            if not (row["fact"] == "softmax_dtype" and "llama" in row["families"])]
    table = tmp_path / "facts.json"
    table.write_text(json.dumps(rows))
    monkeypatch.setenv("COSTMODEL_FACTS", str(table))
    assert facts.facts_for("hf", "llama").softmax_dtype == "activation"
    after = Estimate(cfg, workload).memory_numbers()["activations"]
    assert before - after == 4 * 2 * 2 * 6 * 10 * 10  # bytes x layers x b x h x n^2


def test_every_fact_row_names_a_known_fact_and_cites_a_source():
    for row in facts.table():
        assert row["fact"] in facts.FACT_NAMES and row["source"] and row["impl"] in IMPLEMENTATIONS
    assert facts.sources("hf", "llama")["softmax_dtype"].startswith("FINDINGS 3.1")


# ---------------------------------------------------------------------------------------------
# Structured leaves


def test_leaves_carry_their_place():
    model = CostModel(load_preset("t5-small"))
    scores = model.select(stack="decoder", sublayer="cross_attention", name="scores")
    assert len(scores) == 1 and scores[0].in_layer and scores[0].path == "decoder.layer.cross_attention.scores"
    assert {leaf.part for leaf in model.leaves} == {"embedding", "stack", "layer", "head", "loss", "optimizer"}
    assert [leaf.stack for leaf in model.select(part="embedding", name="tokens")] == ["encoder", "decoder"]


# ---------------------------------------------------------------------------------------------
# The compiled fast path equals sympy's substitution


@pytest.mark.parametrize("cfg", odd_configs()[::3] + [load_preset("t5-small"), load_preset("llama2-70b")],
                         ids=lambda c: c.name)
@pytest.mark.parametrize("options", [dict(), dict(recompute="full", dtype="fp32"),
                                     dict(attention="sdpa", recompute="selective", gen_tokens=3)],
                         ids=["default", "full-fp32", "sdpa-selective"])
def test_compiled_numbers_equal_sympy(cfg, options):
    workload = Workload(seq_len=13, batch=3, **({"tgt_len": 5} if cfg.architecture == "encoder-decoder" else {}),
                        **options)
    numbers = Estimate(cfg, workload).numbers
    expressions, _ = _expressions(cfg, workload)
    subs = values(cfg, workload)
    assert numbers == {name: exact(expr, subs) for name, expr in expressions.items()}


def test_the_cache_key_changes_when_a_block_or_the_tree_changes(tmp_path, monkeypatch):
    """The compiled modules' names hash every source file of costmodel/, the blocks package's
    modules and the tree's included: editing any of them invalidates the cache."""
    copy = tmp_path / "costmodel"
    shutil.copytree(compiled.PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(compiled, "PACKAGE_DIR", copy)
    compiled.source_digest.cache_clear()
    try:
        before = compiled.key_name("estimate", {"model": "x"})
        for module in ("blocks/base.py", "blocks/attention.py", "leaves.py", "tree.py"):
            (copy / module).write_text((copy / module).read_text() + "\n# edited\n")
            compiled.source_digest.cache_clear()
            after = compiled.key_name("estimate", {"model": "x"})
            assert after != before, module
            before = after
    finally:
        compiled.source_digest.cache_clear()


@pytest.mark.slow
def test_estimate_imports_no_sympy_once_compiled(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    code = ("import sys, cli; cli.main(['estimate', '--model', 'llama2-7b', '--json']); "
            "print(sorted(m for m in ('sympy', 'torch', 'numpy', 'pandas') if m in sys.modules))")
    runs = [subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                           text=True, check=True).stdout for _ in range(2)]
    first, second = (json.loads(run[: run.rindex("}") + 1]) for run in runs)
    assert first == second and first["params"]["total"] == 6_738_415_616
    assert runs[0].strip().splitlines()[-1] == "['sympy']"  # the first run compiles
    assert runs[1].strip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_plan_imports_no_sympy_once_compiled(tmp_path):
    # plan evaluates thousands of layouts from the compiled numbers; placing layers on stages and
    # the roofline's kernel times must not pull sympy in (it did: 1.2 s of a 4 s command).
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    code = ("import sys, cli; cli.main(['plan', '--model', 'gemma2-9b', '--gpus', '8', '--pp', '2', "
            "'--top', '1', '--json']); print(sorted(m for m in ('sympy', 'torch', 'numpy', 'pandas') "
            "if m in sys.modules))")
    runs = [subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                           text=True, check=True).stdout for _ in range(2)]
    assert runs[0][: runs[0].rindex("}") + 1] == runs[1][: runs[1].rindex("}") + 1]
    assert runs[1].strip().splitlines()[-1] == "[]"


# ---------------------------------------------------------------------------------------------
# The Python API


def test_python_api_is_the_cli():
    result = costmodel.estimate("llama2-7b", seq_len=4096, batch=8, dtype="bf16")
    out = subprocess.run([sys.executable, "cli.py", "estimate", "--model", "llama2-7b", "--seq-len", "4096",
                          "--batch", "8", "--dtype", "bf16", "--json"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert result.to_dict() == json.loads(out)
    assert costmodel.estimate(load_preset("gpt2").to_dict() | {"name": "gpt2"}).to_dict() == \
        costmodel.estimate("gpt2").to_dict()


def test_blocks_frame_has_the_tables_exact_integers():
    frame = costmodel.estimate("llama2-7b").blocks()
    row = frame.set_index("path").loc["decoder.layer.ffn.mlp"]
    # 32 layers x 3 matrices x 4096 x 11008; forward 2 x 2048 tokens x that.
    assert row["params"] == 32 * 3 * 4096 * 11008 == 4_328_521_728
    assert row["flops_forward"] == 2 * 2048 * 4_328_521_728
    assert str(frame["params"].dtype) == "int64" and int(frame["params"].sum()) == 6_738_415_616


def test_sweep_frame_has_exact_values_below_2_to_53():
    frame = costmodel.sweep("llama2-7b", seq_len=[512, 4096], batch=[1, 8])
    assert list(frame["seq_len"]) == [512, 512, 4096, 4096] and list(frame["batch"]) == [1, 8, 1, 8]
    # KV cache: 32 layers x (K, V) x b x n x d x 2 bytes
    assert list(frame["kv_cache_bytes"]) == [32 * 2 * b * n * 4096 * 2 for n in (512, 4096) for b in (1, 8)]
    exact_forward = costmodel.estimate("llama2-7b", seq_len=4096, batch=8).flops()["forward"]
    assert int(frame["forward_flops"].iloc[3]) == exact_forward


# ---------------------------------------------------------------------------------------------
# simulate on encoder-decoders


@pytest.mark.parametrize("name", ["t5-small", "t5-base"])
def test_simulate_prefill_of_t5_is_estimates_forward(name):
    """The prefill is the encoder over the source and the decoder over its prompt: exactly
    estimate's forward at those lengths (inference: no dropout), less the loss (5 FLOPs per
    log-softmax element)."""
    cfg, source, prompt = load_preset(name), 512, 1
    result = simulate_inference(cfg, load_hardware("a100-80gb"), prompt=source, gen=4, batch=2,
                                decoder_prompt=prompt)
    forward = Estimate(cfg.replace(dropout=0.0), Workload(seq_len=source, tgt_len=prompt, batch=2)).flops()
    loss = 5 * 2 * prompt * cfg.vocab_size
    assert result["prefill"]["flops"] == forward["forward"] + forward["other_forward"] - loss
    # ... and its matrix products are reports.generation's first step (b = 1): 25.9 GFLOP for
    # t5-small at 512 source tokens.
    roof = Roofline(cfg, load_hardware("a100-80gb"))
    first = exact(step_costs(cfg).first(), values(cfg, Workload(seq_len=source, tgt_len=1)))
    blocks = roof.prefill(1, prompt, source_len=source)[2]
    assert sum(b.timing.flops for b in blocks) - exact(
        CostModel(cfg, phase="prefill").total("flops_other"), values(cfg, Workload(seq_len=source, tgt_len=1))
    ) == first
    if name == "t5-small":
        assert round(first / 1e9, 1) == 25.9


def test_t5_decode_steps_attend_to_the_source_and_the_decoder_so_far():
    cfg, source = load_preset("t5-small"), 300
    result = simulate_inference(cfg, load_hardware("a100-80gb"), prompt=source, gen=6, batch=1)
    contexts = [row["context"] for row in result["generation_table"]]
    assert contexts == [2, 3, 4, 5, 6]  # the start token, then one more each step: 5 steps after the prefill's token
    # Without a cache a step reruns the decoder (not the encoder) over its tokens so far.
    roof = Roofline(cfg, load_hardware("a100-80gb"))
    rerun = roof.rerun(1, 7, source_len=source)[0].flops
    decoder_side = CostModel(cfg, phase="prefill").select(stack="decoder")
    subs = values(cfg, Workload(seq_len=source, tgt_len=7))
    assert rerun == sum(exact(leaf.total("flops_matmul") + leaf.total("flops_other"), subs)
                        for leaf in decoder_side)
