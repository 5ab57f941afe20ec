"""Defects found by the twenty-seventh new user (wt29_user27, session 29): a pretraining lead, a user
with hand-typed Hub config.json files, a student checking the classic rules of thumb."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import one_error_line, run_main


def test_korthikanti_beside_a_fused_attention_kernel_is_the_row_without_the_s2_terms(capsys):
    """`estimate --attention flash` printed Table 2's eager row, sbh(34 + 5as/h), beside a model that
    keeps no n x n matrix: 1.73 TiB beside 169.87 GiB for llama3-70b at 8,192 under --impl megatron.
    A fused kernel keeps none of the a s^2 b terms, so the selective row, 34 sbh, is the one that applies."""
    sbh, layers, heads, n = 2048 * 4096, 32, 32, 2048  # llama2-7b, b = 1, n = 2048
    for attention, per_layer, words in (
        ("eager", 34 * sbh + 5 * heads * n**2, "sbh(34 + 5as/h) in 2 bytes"),
        ("sdpa", 34 * sbh, "sdpa attention keeps no as^2*b matrix"),
        ("flash", 34 * sbh, "flash attention keeps no as^2*b matrix"),
    ):
        code, out, err = run_main(["estimate", "--model", "llama2-7b", "--attention", attention, "--json"], capsys)
        memory = json.loads(out)["memory"]
        assert code == 0 and memory["korthikanti_2022_activations"] == layers * per_layer, attention
        assert words in memory["korthikanti_2022_variant"]
    # 80 layers x 34 x 8,192 x 8,192 bytes = 182,536,110,080 = 170.00 GiB beside the model's 169.87 GiB
    code, out, _ = run_main(["estimate", "--model", "llama3-70b", "--impl", "megatron", "--attention", "flash",
                             "--seq-len", "8192"], capsys)
    assert code == 0 and "activations          169.87 GiB" in out
    assert "Korthikanti et al. 2022's formula for GPT layers: 170.00 GiB (flash attention" in out


def test_llama4_chunked_attention_is_not_called_a_sliding_window_and_the_layers_are_counted(capsys):
    """Llama-4-Scout's config.json (attention_chunk_size 8,192, hand-typed from the Hub) was warned of as
    "attends within a sliding window of 8,192 tokens", and Gemma 3 27B's as if every layer slid: Scout's
    RoPE layers attend in chunks (36 of 48: every 4th is a NoPE layer over every key, Llama4TextConfig's
    no_rope_layer_interval 4); Gemma 3 slides on 5 of each 6 layers (52 of 62), gpt-oss on every other (12 of 24)."""
    code, _, err = run_main(["estimate", "--model", "meta-llama/Llama-4-Scout-17B-16E", "--seq-len", "16384"], capsys)
    assert code == 0 and ("warning: model 'llama4-scout' attends in chunks of 8,192 tokens (a query sees its own "
                          "chunk's keys up to itself) on 36 of its 48 layers: ") in err and "sliding window" not in err
    for model, words in (("google/gemma-3-27b-it", "sliding window of 1,024 tokens on 52 of its 62 layers: "),
                         ("gpt-oss-20b", "sliding window of 128 tokens on 12 of its 24 layers: ")):
        code, _, err = run_main(["estimate", "--model", model, "--seq-len", "4096"], capsys)
        assert code == 0 and words in err, model
    code, _, err = run_main(["estimate", "--model", "mistral-7b", "--seq-len", "8192"], capsys)
    assert code == 0 and "sliding window of 4,096 tokens: " in err  # every layer slides: no count


def test_estimate_json_units_say_which_flop_convention(capsys):
    """`estimate --json`'s units said "FLOP over the whole batch" for flops: nothing of the convention the text
    states (matrix products only, 2 m n k, dense attention scores), so the classic counts could not be set
    beside the JSON alone. Under it GPT-2's training FLOPs a token at s = 1,024 are Narayanan et al.'s
    72 l h^2 (1 + s/(6h) + V/(12 l h)) exactly (dense attention, the tied head's product counted)."""
    data = json.loads(run_main(["estimate", "--model", "gpt2", "--seq-len", "1024", "--json"], capsys)[1])
    units = data["units"]
    assert "matrix products only, 2*m*n*k each" in units["flops"] and "causal mask saves none" in units["flops"]
    assert "forward matrix products" in units["regime"] and "crossover_seq_len: tokens" in units["regime"]
    layers, h, s, vocab = 12, 768, 1024, 50257
    # 509,607,936 (72 l h^2, the 6 N of the layers' 12 l h^2) + 113,246,208 (attention) + 231,584,256 (head)
    assert 72 * layers * h**2 + 12 * layers * s * h + 6 * h * vocab == 854438400
    assert data["flops"]["training_per_token"] == 854438400
    assert data["regime"]["attention_flops"] == 4 * s**2 * h * layers  # 2 n^2 d each for scores and weighted sum


def test_simulate_train_says_which_block_the_compute_is(capsys):
    """`simulate --train` with a layout split the step into compute, each group's exposed communication, the
    bubble and the optimizer, but not the compute into blocks: "which block is to blame" had no answer for
    time. The kernel model's compute of the slowest stage now comes by block (an attention core's fused call
    as one), largest first: llama3-8b with CP 8 on 8 H100s has its FFN first at 4,096 tokens (n < n* =
    26,624, the n d^2 regime) and its attention core first at 65,536 (the n^2 d regime)."""
    first = {}
    for n in (4096, 65536):
        args = ["simulate", "--train", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8",
                "--framework", "megatron", "--cp", "8", "--seq-len", str(n), "--global-batch", "8"]
        step = json.loads(run_main([*args, "--json"], capsys)[1])["step"]
        blocks = step["compute_by_block_seconds"]
        assert list(blocks.values()) == sorted(blocks.values(), reverse=True) and min(blocks.values()) > 0
        assert "decoder.layer.self_attention.scores" not in blocks  # one fused call: the core
        assert sum(blocks.values()) == pytest.approx(step["compute_seconds"], rel=1e-12)  # launches included
        assert 0 < blocks["launches and other"] < 0.15 * step["compute_seconds"]
        first[n] = list(blocks)[0]
        code, out, _ = run_main(args, capsys)
        assert code == 0 and f"by block: {first[n]} " in out
    assert first == {4096: "decoder.layer.ffn.mlp", 65536: "decoder.layer.self_attention.core"}
    code, out, _ = run_main(["estimate", "--model", "llama3-8b", "--json"], capsys)
    assert json.loads(out)["regime"]["crossover_seq_len"] == 26624  # d (3 d_ff + 2 d_h h + 2 d_h h_kv) / (2 d_h h)


def test_llama4_scout_instruct_id_is_an_alias(capsys):
    """`estimate --model meta-llama/Llama-4-Scout-17B-16E-Instruct` (the id a user copies from the Hub) said
    "cannot reach the Hugging Face Hub ... Pass --config" offline, though the instruct checkpoint's language
    model is the base's (MaxText's llama4 code quotes its config.json: 40 heads, 8 KV heads, head_dim 128,
    rope_theta 500,000, llama3 rope scaling x16 from 8,192; 16 experts of 8,192, one a token)."""
    data = json.loads(run_main(["estimate", "--model", "meta-llama/Llama-4-Scout-17B-16E-Instruct", "--json"],
                               capsys)[1])
    assert data["inputs"]["model"] == "llama4-scout" and data["params"]["total"] == 107769861120


def test_report_says_its_flop_convention():
    """`report`'s summary gave "forward FLOPs / token" and "training FLOPs (batch)" with no word of what a FLOP
    counts (the estimate text says it, the report did not): its introduction now states the convention, in
    report.md and index.html alike (both render reports/pages.py's introduction)."""
    from reports.made import Report
    from reports.pages import html_page, markdown

    report = Report(cfgs=[], made=[], summary=([], []), claims=[], table1=[], notes=[], command="", batch=1,
                    dtype="bf16")
    words = "FLOPs are matrix products only, 2·m·n·k each as torch"
    assert words in markdown(report) and "6·N·D's convention plus the attention" in markdown(report)
    assert words in html_page(report) and "the causal mask saves none" in html_page(report)
