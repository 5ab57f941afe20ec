"""A new user's thirteenth round (session 19; validate/FINDINGS.md "A new user's thirteenth round").
Each test failed before its fix; the numbers are exact integers with their arithmetic."""

from __future__ import annotations

import json

from tests.cli_run import run_json, run_main

GIB = 2**30
EVERY = "every position (a plain forward)"
LAST = "the last position (Hugging Face generate's prefill, logits_to_keep=1)"
# Llama 3.1 8B: vocabulary 128,256, bf16 logits
LOGITS_PER_POSITION = 128_256 * 2
# at 8,192 tokens under sdpa (no n x n scores): the FFN's no-grad tensors, 3 x 8,192 x 14,336 x 2 B
# (costmodel/blocks/ffn.py live_no_grad), are generate's prefill's largest transient, not its one
# position's logits: 17,134,586,880 (weights, cache, ids, one position's logits) before session 26
SDPA = ["--attention", "sdpa"]
FFN = 3 * 8_192 * 14_336 * 2
GENERATE = 17_134_586_880 - LOGITS_PER_POSITION + FFN


def test_estimate_and_simulate_size_inference_with_the_same_logits(capsys):
    """`estimate --hardware h100` said "Inference on 1 h100-sxm GPU: 17.91 GiB" (a plain forward's
    logits at all 8,192 positions) where `simulate` said 15.96 GiB (generate's prefill: the last
    position's), and `estimate --tp 2` already took generate's. Both figures are printed now, each
    saying which logits it holds; the verdict is generate's on one GPU as on a layout. At sdpa: since
    session 26 eager's n x n scores (32 heads x 8,192^2 x 10 B = 20 GiB) outweigh the logits in both
    totals; at sdpa the prefill's largest transient is its FFN's (3 x 8,192 x 14,336 x 2 B =
    704,643,072), below all positions' logits and above the last one's, so generate's prefill holds
    the FFN's tensors where a plain forward holds its logits."""
    est = run_json(["estimate", "--model", "llama3.1-8b", "--seq-len", "8192", "--hardware", "h100", *SDPA], capsys)
    memory = est["memory"]
    assert memory["logits"] == {"inference_total": EVERY, "generate_total": LAST}
    assert est["flops"]["logits"] == EVERY
    assert memory["inference_total"] == 19_235_676_672  # all positions' logits outweigh the FFN's transient
    # the prefill peaks in both: they differ by every position's logits less the FFN's tensors that
    # generate's prefill holds instead of its one position's (8,191 positions' before session 26)
    assert memory["inference_total"] - memory["generate_total"] == 8_192 * LOGITS_PER_POSITION - FFN
    assert est["fit"]["inference"]["memory"] == memory["generate_total"] == GENERATE

    # --gen-tokens 1 and --gen 1 both size the cache at n (nothing is fed back, so the prefill peaks,
    # as with no generation; 17,134,652,424 at n + 1 before session 23): one figure
    est = run_json(["estimate", "--model", "llama3.1-8b", "--seq-len", "8192", "--gen-tokens", "1",
                 "--hardware", "h100", *SDPA], capsys)
    sim = run_json(["simulate", "--model", "llama3.1-8b", "--hardware", "h100", "--prompt", "8192",
                 "--gen", "1", *SDPA], capsys)
    assert sim["prefill"]["logits"] == sim["memory"]["logits"] == LAST
    assert sim["memory"]["bytes"] == est["memory"]["generate_total"] == est["fit"]["inference"]["memory"] \
        == GENERATE
    layout = run_json(["simulate", "--model", "llama3.1-8b", "--hardware", "h100", "--prompt", "8192",
                    "--gen", "1", "--tp", "1", "--pp", "1", "--dp", "1", *SDPA], capsys)
    assert layout["logits"] == layout["prefill"]["logits"] == LAST
    assert layout["per_rank"]["total"] == GENERATE

    code, out, _ = run_main(["estimate", "--model", "llama3.1-8b", "--seq-len", "8192", "--hardware", "h100", *SDPA], capsys)
    assert "Inference on 1 h100-sxm GPU: 16.61 GiB per GPU fits in 70.79 GiB." in out.splitlines()
    assert any(line.startswith("  generation            16.61 GiB") and LAST in line for line in out.splitlines())
    assert any(line.startswith("  inference total       17.91 GiB") and EVERY in line for line in out.splitlines())
    code, out, _ = run_main(["simulate", "--model", "llama3.1-8b", "--hardware", "h100", "--prompt", "8192",
                         "--gen", "1", *SDPA], capsys)
    assert f"the prefill's logits at {LAST}" in out


def test_the_reference_implementation_keeps_every_positions_logits_in_both(capsys):
    """--impl reference decodes with its head on every position (tree.generate_logits_to_keep 0):
    its generate_total is its inference_total, and the label says so."""
    est = run_json(["estimate", "--model", "gpt2", "--seq-len", "512", "--impl", "reference"], capsys)
    assert est["memory"]["logits"] == {"inference_total": EVERY, "generate_total": EVERY}
    assert est["memory"]["generate_total"] == est["memory"]["inference_total"]


def test_plan_exits_1_when_nothing_fits_and_still_prints_itsrun_json(capsys):
    """The documented contract (README, "Bad input"): 0 an answer, 2 bad input, 1 nothing fits, with
    the JSON printed whole. Llama 2 70B's leanest layout on 2 H100s needs 555,720,860,172 B a GPU."""
    args = ["plan", "--model", "llama2-70b", "--hardware", "h100-sxm", "--seq-len", "4096", "--global-batch", "16"]
    code, out, _ = run_main([*args, "--gpus", "2", "--json"], capsys)
    data = json.loads(out)
    assert code == 1 and data["feasible"] == [] and data["nearest"]["smallest_memory"] == 555_720_860_172
    assert data["nearest"]["gpus"] == 16
    code, out, _ = run_main([*args, "--gpus", "16", "--top", "1"], capsys)
    assert code == 0
    code, _, err = run_main([*args, "--gpus", "0"], capsys)
    assert code == 2 and err.startswith("error:")


def test_plan_serve_rate_exits_1_when_no_deployment_meets_the_targets(capsys):
    """`plan --serve --rate` with no deployment meeting its SLOs printed "0 meet it" and exited 0,
    while plan without --rate exits 1 when no layout fits: a script could not tell them apart."""
    args = ["plan", "--model", "llama3.2-1b", "--hardware", "l4", "--serve", "--rate", "1", "--requests", "10",
            "--tp", "1", "--slo-tpot", "1"]
    code, out, _ = run_main([*args, "--slo-ttft", "1e-6"], capsys)
    assert code == 1 and "0 meet it" in out
    code, out, _ = run_main([*args, "--slo-ttft", "10"], capsys)
    assert code == 0 and "0 meet it" not in out


def test_a_hardware_file_needs_a_name_and_a_default_dtype_a_run_takes(tmp_path, capsys):
    """An empty `name` printed "llama3.1-8b on  (bf16, ..."; `default_dtype: fp8` (it has a peak)
    passed the schema and every command then blamed the workload ("workload: unknown dtype 'fp8'")."""
    code, out, _ = run_main(["hardware", "--show", "h100"], capsys)
    base = json.loads(out)
    for change, line in ((
            {"name": ""}, "name must not be empty"),
            ({"default_dtype": "fp8"}, "default_dtype 'fp8' is not a dtype a run takes (fp32, fp16, bf16)")):
        path = tmp_path / "gpu.json"
        path.write_text(json.dumps({**base, **change}))
        code, out, err = run_main(["simulate", "--model", "llama3.1-8b", "--hardware", str(path), "--gen", "2"], capsys)
        assert code == 2 and not out
        assert err.strip() == f"error: {path}: not a valid hardware file: {line}."


def test_serve_help_says_what_kv_dtype_is(capsys):
    """`serve --help` listed `--kv-dtype [fp8|int8]` with no text (estimate, simulate, plan and sweep have one)."""
    code, out, _ = run_main(["serve", "--help"], capsys)
    option = out[out.index("--kv-dtype"):out.index("--fp8-gemm")]
    assert code == 0 and "one byte" in option and "per element" in option


def test_finetune_defaults_to_the_attention_transformers_picks(capsys):
    """`finetune --model gemma2-9b --method qlora` (no --attention) was refused: its default sdpa,
    which Gemma 2's class has no path for (transformers runs eager when none is asked for). The
    default is now transformers' choice, with a note; a typed --attention sdpa is still refused."""
    args = ["finetune", "--model", "gemma2-9b", "--method", "qlora", "--seq-len", "2048"]
    code, out, err = run_main([*args, "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["inputs"]["attention"] == "eager"
    assert "note: attention eager: gemma2's Hugging Face class has no sdpa path" in err
    eager = run_json([*args, "--attention", "eager"], capsys)
    assert data["memory"] == eager["memory"] and eager["memory"]["total"] == 48_925_589_188
    code, _, err = run_main([*args, "--attention", "sdpa"], capsys)
    assert code == 2 and err.startswith("error: attention 'sdpa': gemma2's Hugging Face class")
    assert run_json(["finetune", "--model", "llama3.1-8b", "--method", "qlora"], capsys)["inputs"]["attention"] == "sdpa"


def test_every_json_names_its_units(capsys):
    """`plan --json` gave per_rank (bytes) and step_time (seconds), `estimate --json` its memory, with
    no unit anywhere in the output. Each command's JSON now carries json_units.JSON_UNITS's "units"; the
    figures are those units (plan's 68,133,288,450 per_rank total and 2.74 s step, as its table)."""
    from costmodel import estimate, json_units

    est = run_json(["estimate", "--model", "llama2-7b", "--seq-len", "4096", "--batch", "8"], capsys)
    assert est["units"] == json_units.JSON_UNITS["estimate"] and est["units"]["memory"].startswith("bytes;")
    assert "bytes_per_param: bytes a parameter" in est["units"]["memory"]  # estimate's FP8 weights (session 26)
    assert estimate("llama2-7b", seq_len=4096, batch=8).to_dict()["units"] == est["units"]  # "exactly estimate --json"
    args = ["plan", "--model", "llama2-7b", "--hardware", "h100", "--gpus", "8", "--seq-len", "4096",
            "--global-batch", "64", "--top", "1"]
    plan = run_json(args, capsys)
    assert plan["units"]["per_rank"] == "bytes" and plan["units"]["step_time"] == "seconds"
    row = plan["feasible"][0]
    assert row["per_rank"]["total"] == 68_133_288_450
    _, out, _ = run_main(args, capsys)
    assert f"{row['per_rank']['total'] / GIB:.2f} GiB  {row['step_time']:.3g} s" in out
    sim = run_json(["simulate", "--model", "llama2-7b", "--hardware", "h100", "--gen", "2"], capsys)
    assert sim["units"] == json_units.JSON_UNITS["simulate"]
    tune = run_json(["finetune", "--model", "llama2-7b", "--method", "lora"], capsys)
    # (session 38, wt38_user2: fit.least, the least one GPU holds where no option fits, is bytes too)
    assert tune["units"] == json_units.JSON_UNITS["finetune"] and tune["units"]["fit"] == (
        "bytes (memory, capacity, each option's memory; least.memory: the least one GPU holds, where no option fits)")


def test_gb200_and_geforce_names_as_gb300_and_nvidia_smi_take_them(capsys):
    """`--hardware "gb200 nvl72"` and nvidia-smi's "NVIDIA GB200" were unknown while "gb300 nvl72" and
    "NVIDIA GB300" named gb300 (gb200 had no alias); "GeForce RTX 4090" (Windows' name, no NVIDIA
    prefix) was unknown while "NVIDIA GeForce RTX 4090" and "RTX 4090" were taken."""
    for typed, preset in (("gb200 nvl72", "gb200"), ("NVIDIA GB200", "gb200"), ("GeForce RTX 4090", "rtx-4090"),
                          ("GeForce RTX 3090", "rtx-3090"), ("gb300 nvl72", "gb300")):
        code, out, _ = run_main(["hardware", "--show", typed], capsys)
        assert code == 0 and json.loads(out)["name"] == preset, typed


def test_an_encoder_prints_no_generation_line(capsys):
    """BERT generates nothing: estimate prints no "generation" row for it (its JSON keeps
    generate_total = inference_total, the verdict's figure)."""
    code, out, _ = run_main(["estimate", "--model", "bert-base-uncased", "--seq-len", "512"], capsys)
    assert code == 0 and "  inference total" in out and "  generation " not in out
    memory = run_json(["estimate", "--model", "bert-base-uncased", "--seq-len", "512"], capsys)["memory"]
    assert memory["generate_total"] == memory["inference_total"]


def test_plan_over_several_gpu_counts_names_each_global_batch(capsys):
    """`plan --gpus 8,16 --global-batch 64` headed its table "global batch 64, 64 of 4,096 tokens": one
    figure per count, unnamed. Untyped, each count's default is 8 a GPU (JSON inputs.global_batch)."""
    args = ["plan", "--model", "llama3.1-8b", "--hardware", "h100", "--gpus", "8,16", "--seq-len", "4096", "--top", "1"]
    code, out, _ = run_main([*args, "--global-batch", "64"], capsys)
    assert code == 0 and "global batch 64 (8 GPUs), 64 (16 GPUs) of 4,096 tokens" in out.splitlines()[0]
    assert run_json(args, capsys)["inputs"]["global_batch"] == {"8": 64, "16": 128}


def test_simulate_with_a_layout_prints_no_decode_step_for_one_token(capsys):
    """`simulate --tp 2 --gen 1` printed "no decode step: the prefill gives the one token" and then
    "last step 7.47 ms ... a step at context 1,025" (a step that never runs), as --gen 0 once did.
    The JSON keeps `token` (plan --serve ranks --gen 1 by it); with --gen 2 the last step is printed."""
    args = ["simulate", "--model", "llama3.1-8b", "--hardware", "h100", "--prompt", "1024", "--tp", "2"]
    code, out, _ = run_main([*args, "--gen", "1"], capsys)
    assert code == 0 and "no decode step" in out and "  last step" not in out and "time per output token" not in out
    code, out, _ = run_main([*args, "--gen", "2"], capsys)
    assert code == 0 and "  last step" in out


def test_serve_and_the_capacity_search_name_their_units(capsys):
    """serve's ttft/tpot/e2e percentiles (seconds) and the capacity search's targets had no unit."""
    from costmodel import json_units

    data = run_json(["serve", "--model", "llama3.2-1b", "--hardware", "l4", "--rate", "1", "--requests", "5"], capsys)
    assert data["units"] == json_units.JSON_UNITS["serve"] and data["units"]["queueing, ttft, tpot, e2e, itl"] == "seconds"
    code, out, _ = run_main(["plan", "--model", "llama3.2-1b", "--hardware", "l4", "--serve", "--rate", "1", "--requests",
                         "10", "--tp", "1", "--slo-tpot", "1", "--slo-ttft", "10", "--json"], capsys)
    assert code == 0 and json.loads(out)["units"]["target.slo_ttft, target.slo_tpot"] == "seconds"


def test_estimate_refuses_a_gpu_count_below_one(capsys):
    """`estimate --hardware h100 --gpus -2` printed "Inference on -2 h100-sxm GPUs: 15.21 GiB per GPU
    fits" (exit 0) and --gpus 0 sized one GPU: --gpus alone beside --hardware skipped the layout's check.
    The option takes whole numbers from 1, for estimate and simulate alike."""
    for command in (["estimate"], ["simulate", "--train"]):
        for gpus in ("0", "-2"):
            code, out, err = run_main([*command, "--model", "llama3.1-8b", "--hardware", "h100", "--gpus", gpus], capsys)
            assert code == 2 and not out
            assert err.strip() == f"error: Invalid value for '--gpus': {gpus} is not in the range x>=1."


def test_sweep_help_says_whose_inference_bytes_it_writes(capsys):
    """sweep's inference_bytes column is estimate's inference_total (a plain forward: every position's
    logits); its help said "inference totals" without saying which of estimate's two rows."""
    code, out, _ = run_main(["sweep", "--help"], capsys)
    text = " ".join(out.split())
    assert code == 0 and "The inference bytes are estimate's inference_total, a plain forward's (the logits of every position)" in text
