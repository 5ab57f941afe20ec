"""Defects found by the thirty-second new user's deeper cut (wt33_user2, session 33): an ML engineer asking, for
real models and GPUs, whether a run fits (inference, LoRA/QLoRA, full fine-tuning, pretraining layouts), what it
costs, and whether every command (estimate, plan, finetune, serve, simulate, the Python API) gives the same verdict
and the same bytes for the same inputs."""

from __future__ import annotations

from tests.cli_run import run_json, run_main

L70_INT4 = ["--model", "llama3-70b", "--hardware", "l40s", "--weight-dtype", "int4", "--attention", "sdpa"]


def test_estimate_sizes_a_quantized_inference_layout_as_simulate_does(capsys):
    """`estimate --model llama3-70b --hardware l40s --weight-dtype int4 --gpus 4 --tp 4` (does int4 Llama 3 70B fit
    four 48 GB L40S?) stopped with "error: layout: quantized weights and KV caches are inference formats; training
    on quantized weights (QLoRA) in a layout is not modelled", and so did `--gpus 4` alone and `--kv-dtype fp8`
    with a layout, while the one-GPU verdict with the same --weight-dtype sized both phases (training in the
    training dtype, inference quantized) and `simulate --tp 4 --weight-dtype int4` sized the rank. The layout's
    training figures now read the training dtype as the one-GPU tree does, and its inference verdict is
    simulate's rank, byte for byte."""
    sim = run_json(["simulate", *L70_INT4, "--tp", "4", "--prompt", "2048", "--gen", "128"], capsys)
    est = run_json(["estimate", *L70_INT4, "--gpus", "4", "--tp", "4", "--seq-len", "2048", "-T", "128"], capsys)
    assert est["fit"]["inference"]["memory"] == sim["per_rank"]["total"]
    assert est["fit"]["inference"]["fits"] is sim["fits"] is True
    # the training figures: the layout's rank in bf16, as without --weight-dtype
    plain = run_json(["estimate", *L70_INT4[:4], "--attention", "sdpa", "--gpus", "4", "--tp", "4",
                      "--seq-len", "2048", "-T", "128"], capsys)
    assert est["parallel"]["per_rank"] == plain["parallel"]["per_rank"]
    assert est["fit"]["training"]["memory"] == plain["fit"]["training"]["memory"]
    # --gpus alone (data parallel for training, tensor parallel for inference) and a quantized KV cache
    alone = run_json(["estimate", *L70_INT4, "--gpus", "4", "--seq-len", "2048", "-T", "128"], capsys)
    assert alone["fit"]["inference"]["memory"] == sim["per_rank"]["total"]
    kv = run_json(["estimate", *L70_INT4[:4], "--kv-dtype", "fp8", "--gpus", "4", "--tp", "4"], capsys)
    assert kv["fit"]["inference"]["fits"] is True


def test_a_run_that_costs_under_a_cent_is_not_priced_at_zero(capsys):
    """`finetune --model llama3-8b --method qlora --hardware rtx-4090 --tokens 1e5 --price 0.4` (what does a quick
    QLoRA try cost?) printed "49 steps, 38.8 s, 0.0108 GPU-hours, $0.00 at $0.4/GPU-hour": a priced run shown as
    free, while its GPU-hours kept three figures (reports/text.py dollars rounded to the cent below $100). A
    sum under a cent now keeps three figures as the GPU-hours do; from a cent on, cents as before."""
    args = ["finetune", "--model", "llama3-8b", "--method", "qlora", "--hardware", "rtx-4090", "--tokens", "1e5",
            "--price", "0.4"]
    dollars = run_json(args, capsys)["time"]["dollars"]
    assert 0.001 < dollars < 0.005
    code, out, _ = run_main(args, capsys)
    assert code == 0 and f"${dollars:.3g} at $0.4/GPU-hour" in out and "$0.00 " not in out
    from reports.text import dollars as shown

    assert (shown(0.0043129), shown(0.012), shown(99.994), shown(1234567.8)) == ("$0.00431", "$0.01", "$99.99",
                                                                                   "$1,234,568")


def test_a_hand_written_gpu_file_serves_at_vllms_default_utilisation(tmp_path, capsys):
    """A hand-written hardware file for a 32 GB card (name, peaks, bandwidth, memory and the 512 MiB reserve, as
    docs/time.md's field table asks; no serving_memory_utilization) made `serve` plan its KV cache with "100% of
    32 GiB less the 512 MiB reserve" and estimate's inference verdict fit in 31.50 GiB, where every preset and vLLM
    itself (EngineArgs.gpu_memory_utilization, 0.90) plan with 90%: the schema's default for the field was all
    of the memory. A file silent on it now plans with vLLM's 0.9, as `hardware --measure` without --like writes."""
    import json

    data = {"name": "my-rtx-5090", "flops_per_s": {"bf16": 209.5e12, "fp32": 104.8e12},
            "bandwidth_bytes_per_s": 1.792e12, "memory_bytes": 32 * 2**30, "memory_reserve_bytes": 2**29}
    path = tmp_path / "my-rtx-5090.json"
    path.write_text(json.dumps(data))
    plannable = int(32 * 2**30 * 0.9) - 2**29  # 30,391,476,633 B: 27.80 GiB
    fit = run_json(["estimate", "--model", "llama3-8b", "--hardware", str(path)], capsys)["fit"]
    assert (fit["training"]["capacity"], fit["inference"]["capacity"]) == (32 * 2**30 - 2**29, plannable)
    kv = run_json(["serve", "--model", "llama3-8b", "--hardware", str(path), "--rate", "1", "--requests", "4"],
                  capsys)["setup"]["kv_cache"]
    assert kv["gpu_memory_utilization"] == 0.9
    assert kv["kv_budget_bytes"] == plannable - kv["weight_bytes"] - kv["activation_bytes"]


def test_a_ranks_prefill_transient_is_not_called_its_ids_and_logits(capsys):
    """`simulate --model llama3-70b --hardware l40s --tp 4 --prompt 8192 --gen 1 --batch 8 --attention flash` (does
    a batch of 8k prompts fit four L40S?) printed "ids and logits 2.63 GiB" for the rank: its logits are one
    position's, 8 x 128,256 x 2 B = 1.96 MiB, and the 2.63 GiB is the prefill's FFN hidden tensors, 3 x 8 x
    8,192 x 28,672 x 2 B / 4 (JSON per_rank.transient: the ids and the larger of the logits and the forward's
    largest no-grad transient); plan --serve headed the same column "ids+logits". The line and the column now
    say what they hold."""
    args = ["--model", "llama3-70b", "--hardware", "l40s", "--tp", "4", "--prompt", "8192", "--batch", "8",
            "--attention", "flash"]
    rank = run_json(["simulate", *args, "--gen", "1"], capsys)["per_rank"]
    ids = 8 * 8192 * 8  # the prompt's int64 ids on the first stage
    assert rank["transient"] == ids + 3 * 8 * 8192 * 28672 * 2 // 4
    code, out, _ = run_main(["simulate", *args, "--gen", "1"], capsys)
    assert code == 0 and "ids and logits" not in out
    assert "ids, logits and transients 2.63 GiB" in out
    code, out, _ = run_main(["plan", "--serve", *args[:4], "--gpus", "4", *args[6:], "--gen", "2"], capsys)
    assert code == 0 and "ids+logits" not in out and "transients" in out.splitlines()[3]


def test_the_layout_a_failed_plan_offers_names_its_framework(capsys):
    """`plan --model qwen3-32b --hardware a100-40gb --gpus 4 --seq-len 4096 --global-batch 32` (how many 40 GB A100s
    does a Qwen3 32B pretraining run need?) said "On 16 GPUs it fits: tp 2 x pp 1 x dp 8, ZeRO 3, recompute full,
    micro-batch 1, 38.49 GiB per GPU". That layout is Megatron-FSDP's (JSON nearest.layout.framework: megatron);
    typed as read, `simulate --train --tp 2 --dp 8 --zero 3 --recompute full --sp` runs DeepSpeed's ZeRO 3 and says
    "DOES NOT FIT: the most loaded rank needs 42.26 GiB". The line (and the leanest layout's) now names the
    framework, and that layout typed with it is the bytes the plan gave."""
    plan = ["plan", "--model", "qwen3-32b", "--hardware", "a100-40gb", "--seq-len", "4096", "--global-batch", "32"]
    import json

    code, out, _ = run_main([*plan, "--gpus", "4", "--json"], capsys)
    nearest = json.loads(out)["nearest"]  # (exit status 1: nothing fits on 4)
    lay = nearest["layout"]
    assert (nearest["gpus"], lay["tp"], lay["pp"], lay["dp"], lay["zero"], lay["framework"]) == (16, 2, 1, 8, 3,
                                                                                                   "megatron")
    code, out, _ = run_main([*plan, "--gpus", "4"], capsys)
    assert code == 1 and "On 16 GPUs it fits: tp 2 x pp 1 x dp 8, megatron, ZeRO 3, recompute full" in out
    assert f"The leanest layout (tp 4 x pp 1 x dp 1, {nearest['smallest_layout']['framework']}, ZeRO 0" in out
    sim = run_json(["simulate", "--train", *plan[1:5], "--seq-len", "4096", "--tp", "2", "--dp", "8", "--zero", "3",
                    "--recompute", "full", "--batch", "1", "--global-batch", "32", "--sp", "--framework",
                    lay["framework"]], capsys)
    assert sim["fits"] is True and sim["parallel"]["per_rank"]["total"] == nearest["per_rank"]


def test_a_plan_with_nothing_that_fits_names_the_offload_estimate_offers_on_the_same_gpus(capsys):
    """`plan --model llama3-8b --hardware rtx-4090 --gpus 1 --seq-len 4096 --global-batch 8` (the fewest 24 GB cards
    that pretrain Llama 3 8B) said "No layout fits ... On 8 GPUs it fits", while `estimate --hardware rtx-4090
    --seq-len 4096` on the same one GPU answered "--dp 1 --zero 3 --offload optimizer --recompute full 18.81 GiB":
    plan never sizes DeepSpeed's ZeRO-Offload (it cannot time the host's step), so its "no layout" read as "no
    way on these GPUs". The plan now names the offload layout that fits on the GPUs given, at estimate's bytes."""
    import json

    plan = ["plan", "--model", "llama3-8b", "--hardware", "rtx-4090", "--gpus", "1", "--seq-len", "4096",
            "--global-batch", "8"]
    code, out, _ = run_main([*plan, "--json"], capsys)
    offload = json.loads(out)["nearest"]["offload"]
    assert (code, offload["offload"], offload["layout"]["dp"], offload["layout"]["recompute"]) == (1, "optimizer", 1,
                                                                                                  "full")
    est = run_json(["estimate", "--model", "llama3-8b", "--hardware", "rtx-4090", "--seq-len", "4096"], capsys)
    offered = {o["change"]: o["memory"] for o in est["fit"]["training"]["options"]}
    assert offered["--dp 1 --zero 3 --offload optimizer --recompute full"] == offload["per_rank"] == 20194648588
    typed = run_json(["estimate", "--model", "llama3-8b", "--hardware", "rtx-4090", "--seq-len", "4096", "--dp", "1",
                      "--zero", "3", "--offload", "optimizer", "--recompute", "full", "--batch", "1"], capsys)
    assert typed["fit"]["training"]["memory"] == offload["per_rank"]
    code, out, _ = run_main(plan, capsys)
    assert "On these GPUs DeepSpeed's ZeRO-Offload fits, which plan does not time" in out and "18.81 GiB" in out
