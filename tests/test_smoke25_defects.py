"""A new user's twenty-fifth round (session 27; validate/FINDINGS.md "A new user's twenty-fifth round"):
an ML engineer on AMD (MI300X, MI325X, MI355X, MI210) and Blackwell (B200, GB200), and a student with one
RTX 4090 or L40S, training and serving with estimate / simulate / plan / serve / finetune. Each test
failed before its fix; the numbers are exact, or the figure another command prints for the same case."""

from __future__ import annotations

from tests.cli_run import one_error_line, run_json, run_main

# 1. simulate's inference had no --price: "$ per million tokens" of a generation was serve's alone

GEN_4090 = ["simulate", "--model", "llama3-8b", "--hardware", "rtx-4090", "--prompt", "512", "--gen", "128"]


def test_simulate_inference_prices_its_generated_tokens(capsys):
    """`simulate ... --price 0.4` (no --train) said "--price: training options, read only with --train".
    Now the generation's dollars per million tokens: one GPU at $0.4 an hour over the end-to-end rate
    (costmodel/cost.serving_cost, serve --price's formula), and a layout's GPUs (tp 2 x dp 2: 4)."""
    one = run_json([*GEN_4090, "--price", "0.4"], capsys)
    rate = one["decode"]["end_to_end_tokens_per_second"]
    assert one["cost"] == {"price_per_gpu_hour": 0.4, "gpus": 1, "dollars_per_hour": 0.4,
                           "dollars_per_million_output_tokens": 0.4 / (rate * 3600) * 1e6,
                           "price_source": "--price"}  # session 41 (wt41_user2): where the price came from
    layout = run_json(["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--tp", "2", "--dp", "2",
                       "--prompt", "512", "--gen", "128", "--batch", "4", "--price", "2"], capsys)
    assert layout["cost"]["gpus"] == 4 and layout["cost"]["dollars_per_hour"] == 8.0
    assert layout["cost"]["dollars_per_million_output_tokens"] == (
        8.0 / (layout["generation"]["end_to_end_tokens_per_second"] * 3600) * 1e6)
    code, out, err = run_main([*GEN_4090, "--price", "0.4"], capsys)
    assert code == 0 and "per million generated tokens at the end-to-end rate (1 GPU x $0.4 an hour" in out
    assert "--price must be a positive" in one_error_line([*GEN_4090, "--price", "-1"], capsys)
    assert "add --tokens" in one_error_line(["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm",
                                             "--train", "--price", "2"], capsys)


# 2. `--fp8` typed alone: click's "requires an argument" named none of the recipes


def test_a_choice_option_typed_alone_names_its_values(capsys):
    """`simulate --train --fp8` (as one types Transformer Engine's switch) said only "Option '--fp8'
    requires an argument."; the line now lists spec.FP8_RECIPES, and so for every choice option of
    every command (serve --scheduler); a number option keeps click's sentence."""
    from costmodel import spec

    line = one_error_line(["simulate", "--model", "llama3-8b", "--hardware", "b200", "--train", "--fp8"], capsys)
    assert line == ("error: Option '--fp8' requires an argument. It takes one of: "
                    "tensorwise, rowwise, current, delayed, blockwise, mxfp8, nvfp4.")
    assert tuple(spec.FP8_RECIPES) == ("tensorwise", "rowwise", "current", "delayed", "blockwise", "mxfp8", "nvfp4")
    assert one_error_line(["plan", "--model", "llama3-8b", "--gpus", "8", "--fp8"], capsys) == line
    assert "It takes one of: vllm, sarathi" in one_error_line(["serve", "--model", "llama3-8b", "--scheduler"], capsys)
    assert one_error_line(["simulate", "--model", "llama3-8b", "--batch"], capsys) == \
        "error: Option '--batch' requires an argument."


# 3. the MI300X's and MI325X's OAM names and the L40S's size name, which mi355x and l40 already took


def test_amd_oam_and_l40s_size_names_resolve(capsys):
    """`--hardware mi300x-oam` (and rocm-smi's "AMD Instinct MI300X OAM") said "unknown hardware" while
    mi355x-oam resolved; l40-48gb resolved, l40s-48gb did not. Each now names its preset."""
    for typed, preset in (("mi300x-oam", "mi300x"), ("AMD Instinct MI300X OAM", "mi300x"), ("MI325X OAM", "mi325x"),
                          ("l40s-48gb", "l40s"), ("mi355x-oam", "mi355x")):
        shown = run_json(["hardware", "--show", typed], capsys)
        assert shown["name"] == preset, typed


# 4. plan --serve --price gave $/h only: the dollars per million output tokens were serve's alone


def test_plan_serve_prices_a_million_output_tokens_as_serve_does(capsys):
    """`plan --serve --rate 1 --price 0.4` listed $/h; a deployment's $ per million output tokens (the
    question a price answers) was `serve --price`'s alone. Each row now carries it, from the replica's
    output rate it sustains (serving_cost, serve's rule): one RTX 4090 at 0.4 $/h and 1 req/s of 512 + 128
    tokens equals what `serve` prints for the same budgets (300 requests: 109.9 output tokens/s over the run;
    since session 38, wt38_user2, both price the offered 1 x 128 tokens/s the replica keeps up with)."""
    row = run_json(["plan", "--model", "llama3-8b", "--hardware", "rtx-4090", "--serve", "--rate", "1",
                    "--slo-ttft", "1", "--slo-tpot", "0.05", "--price", "0.4", "--top", "1"], capsys)["feasible"][0]
    served = run_json(["serve", "--model", "llama3-8b", "--hardware", "rtx-4090", "--rate", "1", "--requests", "300",
                       "--max-num-seqs", str(row["max_num_seqs"]), "--max-batched-tokens",
                       str(row["max_batched_tokens"]), "--price", "0.4"], capsys)
    assert row["replicas"] == 1 and row["replica_output_tokens_per_s"] == served["throughput"]["output_tokens_per_s"]
    assert row["dollars_per_million_output_tokens"] == served["cost"]["dollars_per_million_output_tokens"]
    assert row["replica_sustained_output_tokens_per_s"] == served["cost"]["output_tokens_per_s"] == 128.0
    assert row["dollars_per_million_output_tokens"] == 0.4 / (128 * 3600) * 1e6
    code, out, _ = run_main(["plan", "--model", "llama3-8b", "--hardware", "rtx-4090", "--serve", "--rate", "1",
                             "--slo-ttft", "1", "--slo-tpot", "0.05", "--price", "0.4", "--top", "1"], capsys)
    header = next(line for line in out.splitlines() if "$/h" in line)  # below the decode code's line (session 32)
    assert code == 0 and header.endswith("$/h  $/M out")


# 5. two RTX 4090s in one workstation talked over 25 Gb/s Ethernet (the file's gpus_per_node was 1)


def test_two_rtx_4090s_in_one_box_share_pcie_not_ethernet(capsys):
    """`simulate --hardware rtx-4090 --tp 2` spent 122 ms of a 160 ms prefill in all-reduces and FSDP2 at dp 2
    exposed 12.3 s of a 14 s step (MFU 4.3%): gpus_per_node 1 put the second card across nodes, at the
    file's 3.125 GB/s Ethernet, though the file states PCIe Gen4 x16 (32 GB/s) inside a box. A workstation of
    two 4090s is the common multi-GPU box (the file's source); within it the PCIe figure now serves."""
    from costmodel.hardware import load_hardware

    hardware = load_hardware("rtx-4090")
    assert (hardware.gpus_per_node, hardware.intra_node_bandwidth_bytes_per_s) == (2, 32e9)
    decode = run_json(["simulate", "--model", "llama3-8b", "--hardware", "rtx-4090", "--tp", "2",
                       "--prompt", "512", "--gen", "128"], capsys)
    # was 0.122 over Ethernet; 0.01131461 at a flat 10 us a call, before NCCL's PCIe ring latency (Simple's
    # 8.4 + 2 x 5.7 us for these 4 MiB all-reduces; collectives.pcie_ring_seconds, wt33_geforce)
    assert round(decode["prefill"]["tp_all_reduce_seconds"], 8) == 0.01195422
    train = run_json(["simulate", "--model", "llama3-8b", "--hardware", "rtx-4090", "--train", "--dp", "2",
                      "--seq-len", "2048", "--framework", "fsdp2", "--recompute", "full"], capsys)
    # was 12.3 s; 0 until FSDP2's edges (the root's and first layer's collectives) were exposed, session 28
    assert round(train["step"]["exposed_communication_seconds"]["dp"], 8) == 0.14874264  # 0.14872624 at 10 us a call
