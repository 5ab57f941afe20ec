"""A tensor-parallel decode layout whose ranks hold the embedding and head whole (Layout.vocab_parallel
False, --replicated-vocab): gpt-fast's tp.py shards attention and the FFN only, so each rank reads the
whole head and computes every logit, and neither the embedding's all-reduce nor the logits'
all-gather runs (issue 18)."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.config import ConfigError, Workload
from costmodel.hardware import load_hardware
from costmodel.layout.parts import Stage
from costmodel.layout.rank import ParallelEstimate
from costmodel.layout.serving_memory import serving_memory
from costmodel.layout.spec import Layout
from costmodel.layout.timing import simulate_decode
from costmodel.presets import load_preset
from reports.published_decode import decode_layout
from reports.published_runs import other_runs_data

E = 2  # bf16 bytes


def tiny():
    """A Llama of odd sizes: d 64, 4 heads of 16, 4 KV heads, d_ff 96, vocabulary 99, 2 layers."""
    return load_preset("llama2-7b").replace(name="llama-vocab", vocab_size=99, d_model=64, n_heads=4,
                                            n_kv_heads=4, d_ff=96, n_decoder_layers=2, max_positions=64)


def workload() -> Workload:
    return Workload(seq_len=5, gen_tokens=200, batch=1, attention="sdpa", precision="pure", kv_cache="static")


def estimate(cfg, tp: int, vocab_parallel: bool) -> ParallelEstimate:
    return ParallelEstimate(cfg, workload(), Layout(tp=tp, framework="deepspeed", vocab_parallel=vocab_parallel),
                            phase="decode")


def only_stage(est: ParallelEstimate) -> Stage:
    (stage,) = est.stages
    return stage


def test_a_replicated_vocabulary_drops_the_embedding_all_reduce_and_the_logits_all_gather():
    cfg = tiny()
    x = E * 64  # one token's hidden state, the all-reduced payload
    split = estimate(cfg, 4, True)
    assert split.tensor_parallel_collectives(only_stage(split)) == [
        ("all_reduce", 2 * 2 + 1, x), ("all_gather", 1, E * 4 * 25)]  # ceil(99 / 4) = 25 logits a rank, gathered from 4
    whole = estimate(cfg, 4, False)
    assert whole.tensor_parallel_collectives(only_stage(whole)) == [("all_reduce", 2 * 2, x)]


@pytest.mark.parametrize("tp", [2, 4])
def test_each_rank_holds_the_embedding_and_head_whole(tp):
    """The rank's weights grow by the vocabulary rows it no longer splits: (99 - ceil(99 / tp))
    rows of 64 in the embedding and again in the untied head."""
    cfg = tiny()
    split = serving_memory(estimate(cfg, tp, True))["weights"]
    whole = serving_memory(estimate(cfg, tp, False))["weights"]
    assert whole - split == 2 * E * (99 - -(-99 // tp)) * 64


def test_a_decode_step_reads_the_whole_head_on_every_rank():
    """Llama-2-7B at tp 8 on an A100 (roofline): the token's time grows by at least the head's
    unsplit bytes at the memory rate, less the logits' all-gather and the embedding's all-reduce."""
    cfg, hardware = load_preset("llama2-7b"), load_hardware("a100-80gb")
    times = {}
    for vocab_parallel in (True, False):
        layout = Layout(tp=8, vocab_parallel=vocab_parallel, all_reduce="intra-node")
        times[vocab_parallel] = simulate_decode(cfg, workload(), layout, hardware, cuda_graphs=True,
                                                time_model="roofline")["token"]
    head_rows = 32000 - 32000 // 8
    extra = head_rows * 4096 * E / hardware.bandwidth_bytes_per_s
    assert times[False]["seconds_per_token"] - times[True]["seconds_per_token"] > 0.9 * extra - 50e-6
    assert times[False]["tp_all_reduce_seconds"] < times[True]["tp_all_reduce_seconds"]


def test_training_with_a_replicated_vocabulary_is_refused_and_the_flag_checks_its_type():
    with pytest.raises(ConfigError, match="replicated vocabulary .* decoding only"):
        ParallelEstimate(tiny(), Workload(seq_len=32), Layout(tp=2, vocab_parallel=False))
    with pytest.raises(ConfigError, match="vocab_parallel must be true or false"):
        Layout(tp=2, vocab_parallel="no").check(tiny())


def test_gpt_fast_states_a_replicated_vocabulary_and_the_layout_follows_it():
    runs = other_runs_data()
    for name in ("gpt-fast", "gpt-fast-mixtral"):
        assert runs["sources"][name]["vocab_parallel"] is False
        assert "tp.py" in runs["sources"][name]["vocab_parallel_source"]
    run = next(r for r in runs["runs"] if r["id"] == "gpt-fast llama2-7b tp8")
    layout = decode_layout(run, runs["sources"]["gpt-fast"])
    assert (layout.tp, layout.vocab_parallel, layout.all_reduce) == (8, False, "intra-node")
    assert decode_layout({"tp": 2}, {}).vocab_parallel is True  # the default: the vocabulary split


def test_the_cli_takes_replicated_vocab_with_a_layout_and_refuses_it_alone(capsys):
    base = ["simulate", "-m", "llama2-7b", "--hardware", "a100-80gb", "--prompt", "5", "--gen", "20"]
    assert cli.main([*base, "--tp", "8", "--replicated-vocab", "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert whole["layout"]["vocab_parallel"] is False
    assert cli.main([*base, "--tp", "8", "--json"]) == 0
    split = json.loads(capsys.readouterr().out)
    assert whole["per_rank"]["weights"] - split["per_rank"]["weights"] == 2 * E * (32000 - 4000) * 4096
    assert cli.main([*base, "--replicated-vocab"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "--replicated-vocab" in err and "\n" not in err


def test_the_kernel_models_rank_memo_keeps_the_two_vocabularies_apart(tmp_path, monkeypatch):
    """One process times a split and a replicated vocabulary of the same model, workload and tp:
    each gets its own kernels (the in-process memo of layout/rank_kernel_cache.rank_kernels keys on the
    vocabulary as its disk cache does), whichever runs first."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cfg, hw = load_preset("llama2-7b"), load_hardware("a100-80gb")
    wl = Workload(seq_len=5, gen_tokens=20, batch=1, attention="sdpa", precision="pure", kv_cache="static")

    def seconds(vocab_parallel: bool) -> float:
        result = simulate_decode(cfg, wl, Layout(tp=8, vocab_parallel=vocab_parallel), hw, cuda_graphs=True,
                                 time_model="kernels")
        return result["token"]["seconds_per_token"]

    split, replicated = seconds(True), seconds(False)
    assert replicated > split  # every rank reads the whole head
    assert seconds(True) == split and seconds(False) == replicated
