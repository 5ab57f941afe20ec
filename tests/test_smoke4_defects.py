"""What a new user's fourth round (published runs typed as CLI commands, issue 18) turned up: each
test runs the command as a user typed it and checks the answer or the one error line.
"""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main

GPT2_TRAIN = ["simulate", "--train", "--model", "gpt2", "--hardware", "a100-80gb", "--seq-len", "1024", "--json"]


def test_global_batch_with_gpus_alone_splits_over_the_derived_dp(capsys):
    # `--gpus 8 --global-batch 32 --batch 4` (no --dp) set 32 / (4 x 1) = 8 micro-batches before dp
    # was derived from --gpus, so the step ran 8 x 4 x 8 = 256 sequences: the global batch x dp.
    # Megatron-LM: num_microbatches = global_batch_size / (micro_batch_size x data_parallel_size).
    code, out, err = run_main(GPT2_TRAIN + ["--gpus", "8", "--batch", "4", "--global-batch", "32"], capsys)
    assert code == 0, err
    derived = json.loads(out)["parallel"]
    code, out, err = run_main(GPT2_TRAIN + ["--dp", "8", "--batch", "4", "--global-batch", "32"], capsys)
    assert code == 0, err
    explicit = json.loads(out)["parallel"]
    assert derived["layout"]["microbatches"] == explicit["layout"]["microbatches"] == 1  # 32 / (4 x 8)
    assert derived == explicit
    # with tp: dp = 8 / 2 = 4, 32 / (4 x 4) = 2 micro-batches
    code, out, err = run_main(GPT2_TRAIN + ["--gpus", "8", "--tp", "2", "--batch", "4", "--global-batch", "32"], capsys)
    assert code == 0, err
    assert json.loads(out)["parallel"]["layout"]["microbatches"] == 2
    code, out, err = run_main(GPT2_TRAIN + ["--gpus", "8", "--batch", "4", "--global-batch", "48"], capsys)
    assert (code, out) == (2, "")
    assert err == "error: --global-batch 48 is not a multiple of batch x dp = 4 x 8.\n"


def test_plan_serve_takes_cuda_graphs_as_simulate_times_a_layout(capsys):
    # gpt-fast's Llama-2-70B at tp 8 decodes from CUDA graphs with a static cache; `plan --serve`
    # (no --rate) refused --cuda-graphs ("applies to the serving simulator's capacity search"), so
    # its ranking paid the eager launches: 20.6 ms a token at tp 8 where simulate --cuda-graphs
    # gives 14.9 ms. Now the same layout's time is simulate's to the digit.
    shape = ["--model", "llama2-70b", "--hardware", "h100", "--batch", "1", "--prompt", "128", "--gen", "128",
             "--kv-cache", "static", "--attention", "flash", "--json"]
    code, out, err = run_main(["plan", "--serve", "--gpus", "8", "--tp", "8", "--cuda-graphs", "on", *shape], capsys)
    assert code == 0, err
    planned = json.loads(out)
    assert planned["inputs"]["cuda_graphs"] is True and planned["inputs"]["kv_cache"] == "static"
    code, out, err = run_main(["simulate", "--tp", "8", "--cuda-graphs", *shape], capsys)
    assert code == 0, err
    simulated = json.loads(out)
    token = simulated["token"]
    # the mean decode step (tests/test_plan_serve_tpot.py) and the last step, each simulate's
    assert planned["feasible"][0]["time_per_output_token"] == simulated["generation"]["time_per_output_token"]
    assert planned["feasible"][0]["last_step"]["seconds"] == token["seconds_per_token"]
    code, out, err = run_main(["plan", "--serve", "--gpus", "8", "--tp", "8", *shape], capsys)
    assert json.loads(out)["feasible"][0]["last_step"]["seconds"] > token["seconds_per_token"]  # eager launches
    code, out, err = run_main(["plan", "--serve", "--gpus", "8", "--tp", "8", "--cuda-graphs", "on", *shape[:-1]],
                              capsys)
    assert out.splitlines()[0].startswith("llama2-70b on 8 x h100-sxm, bf16, static KV cache, CUDA graphs: ")
    code, out, err = run_main(["plan", "--model", "llama2-7b", "--gpus", "8", "--cuda-graphs", "on"], capsys)
    assert (code, out) == (2, "")
    assert err == "error: --cuda-graphs replays decode steps: add --serve (a training step is not captured).\n"


def test_the_inference_header_names_every_option_that_changes_the_run(capsys):
    # `simulate --kv-dtype fp8 --weight-group 128 --compile` on one GPU said "dynamic KV cache,
    # weights int4": nothing of the fp8 cache (half the KV memory), the group size or the
    # compiled fusions; a layout's line named the cache's dtype but not the group or compile.
    base = ["simulate", "--model", "llama2-7b", "--gen", "2", "--kv-dtype", "fp8", "--weight-dtype", "int4",
            "--weight-group", "128", "--compile", "--cuda-graphs", "--kv-cache", "static"]
    code, out, err = run_main(base, capsys)
    assert code == 0, err
    assert out.splitlines()[1] == ("prompt 2048, generate 2, batch 1, attention eager, static KV cache in fp8, "
                                   "weights int4 g128, CUDA graphs, compiled; eager attention: the default without a "
                                   "layout (transformers' eager path, which the memory and op counts are proven "
                                   "against); transformers itself, and a layout, run sdpa: --attention sdpa times it")
    code, out, err = run_main(base + ["--tp", "2"], capsys)
    assert code == 0, err
    assert out.splitlines()[1] == ("prompt 2048, generate 2, attention sdpa, static KV cache in fp8, "
                                   "weights int4 g128, CUDA graphs, compiled; sdpa attention: an inference layout's default, "
                                   "transformers' own kernel")  # not 'the deepspeed layout's' (wt32_user, session 32)
    # without --weight-group, the format's default group the run used (gpt-fast's int4 runs g32)
    for dtype, shown in (("int4", "int4 g128"), ("nf4", "nf4 g64"), ("int8", "int8")):
        code, out, err = run_main(["simulate", "--model", "llama2-7b", "--gen", "2", "--weight-dtype", dtype], capsys)
        assert f"dynamic KV cache, weights {shown}; eager attention: the default" in out.splitlines()[1]


def test_h800_by_the_names_papers_and_the_driver_give_it(capsys):
    # DeepSeek-V3's cluster is "H800"; nvidia-smi names the SXM part "NVIDIA H800 80GB HBM3" (as it
    # names the H100 "NVIDIA H100 80GB HBM3", an alias already). `--hardware h800-sxm` was unknown
    # while `h100-sxm` is the H100's own name.
    from costmodel.hardware import load_hardware

    for name in ("h800-sxm", "H800 SXM", "NVIDIA H800", "NVIDIA H800 80GB HBM3", "h800-sxm5"):
        assert load_hardware(name).name == "h800"


def test_busy_shares_are_the_roofline_s_and_at_most_one(capsys):
    # A batched prefill on an A100 (Llama-3-8B, 256 x 512 tokens, flash) printed "compute busy
    # 114%": the roofline's compute time (at its 0.7 efficiency) over the kernel model's shorter
    # step. The report says the busy shares are the roofline's; they are now its own fractions,
    # the same figures --time-model roofline prints, and none is over 1.
    base = ["simulate", "--model", "llama3-8b", "--hardware", "a100-80gb", "--batch", "256", "--prompt", "512",
            "--gen", "8", "--attention", "flash", "--json"]
    code, out, err = run_main(base, capsys)
    assert code == 0, err
    kernels = json.loads(out)
    code, out, err = run_main(base + ["--time-model", "roofline"], capsys)
    roofline = json.loads(out)
    parts = [("prefill",), ("decode", "first_token"), ("decode", "last_token")]
    for path in parts:
        k, r = kernels, roofline
        for key in path:
            k, r = k[key], r[key]
        assert k["seconds"] != r["seconds"]  # the two models differ in time...
        for share in ("compute_busy_fraction", "memory_busy_fraction"):
            assert k[share] == r[share] <= 1  # ...not in the roofline's shares
    assert kernels["prefill"]["seconds"] < kernels["prefill"]["compute_seconds"]  # why it read 114%


def test_global_batch_and_microbatches_that_disagree_are_refused(capsys):
    # `--dp 8 --batch 4 --global-batch 64 --microbatches 4` ran 2 micro-batches (global 64) and
    # dropped --microbatches 4 (global 128) without a word. Agreeing values are taken.
    base = ["simulate", "--train", "--model", "gpt2", "--dp", "8", "--batch", "4", "--global-batch", "64"]
    code, out, err = run_main(base + ["--microbatches", "4"], capsys)
    assert (code, out) == (2, "")
    assert err == "error: --global-batch 64 sets --microbatches to global / (batch x dp) = 2, not 4: give one of them.\n"
    code, out, err = run_main(base + ["--microbatches", "2", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["parallel"]["layout"]["microbatches"] == 2


def test_inference_on_gpus_alone_that_does_not_fit_says_each_replica_holds_the_model(capsys):
    # `simulate --model llama2-70b --hardware h100 --gpus 8` (a blog's "Llama 2 70B on 8 H100s")
    # is 8 data-parallel replicas (dp = GPUs / (tp x pp), as documented), each 128.56 GiB: the
    # report said "does NOT fit" and nothing of why or what splits it (estimate's --gpus alone
    # means tensor parallelism for inference).
    base = ["simulate", "--model", "llama2-70b", "--hardware", "h100", "--prompt", "128", "--gen", "128"]
    code, out, err = run_main(base + ["--gpus", "8"], capsys)
    assert code == 0, err
    assert out.splitlines()[-1] == ("Each of the 8 data-parallel replicas holds the whole model (--gpus alone sets "
                                    "dp, as Megatron-LM derives it); --tp or --pp splits it over the GPUs.")
    code, out, err = run_main(base + ["--gpus", "8", "--tp", "8"], capsys)
    assert "(fits in 70.79 GiB)" in out and "replicas holds" not in out


def test_a_layout_s_inference_gives_the_prefill_time(capsys):
    # A long prompt's time to first token on 4 GPUs (`simulate --prompt 32768 --gen 0 --tp 4`)
    # could not be asked: with a layout simulate gave only the time per output token. The
    # prefill is now timed on the layout, generate's forward (the last position's logits), and
    # at tp 1 it is the one-GPU prefill to the digit.
    base = ["simulate", "--model", "llama3.1-8b", "--hardware", "h100", "--prompt", "32768", "--gen", "1",
            "--attention", "flash", "--json"]
    code, out, err = run_main(base, capsys)
    assert code == 0, err
    one_gpu = json.loads(out)["prefill"]["seconds"]
    code, out, err = run_main(base + ["--tp", "1"], capsys)
    assert code == 0, err
    # Eager, both: the kernels less their per-block launches, which the host's ops (at the 6.545 us the
    # H100 borrows) stand for and which the kernels outlast at 32,768 tokens (wt27_tphost: the layout's
    # prefill had no host term and kept 32 x 9 + 3 = 291 launches x 10 us more).
    prefill = json.loads(out)["prefill"]
    assert prefill["seconds"] == one_gpu and prefill["host"]["ops_per_step"] == 2488
    assert prefill["host"]["bound"] is False and prefill["seconds"] > 2488 * 6.545241752576789e-06
    code, out, err = run_main(base + ["--tp", "4"], capsys)
    prefill = json.loads(out)["prefill"]
    assert prefill["tp_all_reduce_seconds"] > 0 and one_gpu / 4 < prefill["seconds"] < one_gpu
    assert prefill["seconds"] == prefill["compute_seconds"] + prefill["tp_all_reduce_seconds"] + prefill["pp_seconds"]
    code, out, err = run_main(base[:-1] + ["--tp", "4"], capsys)
    assert out.splitlines()[2].startswith("  prefill (first token)  ")


def test_an_inference_layout_s_collectives_are_the_forward_s_only():
    """Review of the layout prefill: the prefill took the training branch (backward's column-input
    all-reduces, the loss's all-reduce), and every inference phase counted the experts' backward
    dispatch and combine and the pipeline's backward sends. A forward at tp 2 all-reduces each
    layer's two row-parallel outputs and the embedding's (2 x 32 + 1 = 65 calls of b n d x 2 bytes)
    and gathers the kept logits; an expert layer sends its counts (8 E) and each token's dispatch
    and combine once; a stage sends its output once."""
    from costmodel import load_model
    from costmodel.config import Workload
    from costmodel.layout.rank import ParallelEstimate
    from costmodel.layout.spec import Layout

    cfg = load_model("llama2-7b")
    work = Workload(seq_len=2048, batch=1, logits_to_keep=1)
    tp2 = ParallelEstimate(cfg, work, Layout(tp=2), phase="prefill")
    stage = tp2.stages[0]
    assert tp2.tensor_parallel_collectives(stage) == [("all_reduce", 65, 2048 * 4096 * 2), ("all_gather", 1, 2 * 32000)]
    pp2 = ParallelEstimate(cfg, work, Layout(pp=2), phase="prefill")
    assert [pp2.pipeline_exchange(s)[:2] for s in pp2.stages] == [(1, 2048 * 4096 * 2), (0, 2048 * 4096 * 2)]
    mixtral = load_model("mixtral-8x7b")
    ep8 = ParallelEstimate(mixtral, Workload(seq_len=2048, batch=1), Layout(dp=8, ep=8), phase="prefill")
    forward = 32 * (8 * 8 + 2048 * 2 * 4096 * 2 * 2)  # layers x (counts + tokens x top-2 x d x bf16 x dispatch and combine)
    assert ep8.communication(ep8.stages[0])["ep"]["all_to_all"] == forward


def test_a_hardware_file_without_an_interconnect_says_which_fields_a_layout_needs(tmp_path, capsys):
    # A minimal user file (name, peaks, bandwidth, memory, sm_count) for an RTX 6000 Ada: --tp 2
    # said "no interconnect bandwidth for a group of 2 GPUs" and not which fields give it.
    gpu = {"name": "rtx-6000-ada", "flops_per_s": {"bf16": 364.25e12, "fp32": 91.1e12},
           "bandwidth_bytes_per_s": 960e9, "memory_bytes": 48 * 2**30, "architecture": "ada", "sm_count": 142}
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(gpu))
    code, out, err = run_main(["simulate", "--model", "llama3.1-8b", "--hardware", str(path), "--tp", "2",
                               "--gen", "2"], capsys)
    assert (code, out) == (2, "")
    assert err == ("error: hardware rtx-6000-ada: no interconnect bandwidth for a group of 2 GPUs (across nodes "
                   "of 1); a hardware file's interconnect states gpus_per_node, intra_node_bandwidth_bytes_per_s "
                   "and inter_node_bandwidth_bytes_per_s (per GPU, per direction; docs/time.md).\n")
    gpu["interconnect"] = {"gpus_per_node": 2, "intra_node_bandwidth_bytes_per_s": 32e9}
    path.write_text(json.dumps(gpu))
    code, out, err = run_main(["simulate", "--model", "llama3.1-8b", "--hardware", str(path), "--tp", "2",
                               "--gen", "2"], capsys)
    assert code == 0, err


def test_plan_takes_the_flops_convention_its_mfu_column_divides_by(capsys):
    # Megatron's tables count causal model FLOPs; `plan --flops-convention causal` was "no such
    # option", so plan's MFU column could only be PaLM's dense one while simulate --train names
    # either. The best layout's MFU is simulate's for that layout, under each convention.
    base = ["--model", "llama2-7b", "--gpus", "8", "--seq-len", "4096", "--global-batch", "64", "--json"]
    mfu = {}
    for convention in ("dense", "causal"):
        code, out, err = run_main(["plan", *base, "--flops-convention", convention, "--framework", "megatron",
                                   "--zero", "1", "--tp", "1", "--pp", "1", "--recompute", "none"], capsys)
        assert code == 0, err
        planned = json.loads(out)
        assert planned["inputs"]["flops_convention"] == convention
        best = planned["feasible"][0]
        assert best["layout"]["batch"] == 1  # the layout simulate runs below: 8 micro-batches of 1
        code, out, err = run_main(["simulate", "--train", *base, "--flops-convention", convention, "--framework",
                                   "megatron", "--zero", "1", "--batch", "1"], capsys)
        assert code == 0, err
        mfu[convention] = best["mfu"]
        assert best["mfu"] == json.loads(out)["step"]["mfu"]
    assert mfu["causal"] < mfu["dense"]  # half the attention core of 4,096-token sequences
    code, out, err = run_main(["plan", "--serve", "--model", "llama2-7b", "--gpus", "8", "--flops-convention",
                               "causal"], capsys)
    assert code == 2 and "--flops-convention" in err


def test_plan_takes_compile_as_simulate_does(capsys):
    # torchtitan's published Llama 3.1 8B rows are compiled; `plan --compile` was "no such
    # option", so plan ranked eager layouts only. With it the fixed layout's step is simulate
    # --train --compile's, and a serving plan's token simulate --compile's with a layout.
    train = ["--model", "llama3.1-8b", "--hardware", "h100", "--gpus", "8", "--seq-len", "8192", "--global-batch",
             "16", "--framework", "fsdp2", "--zero", "3", "--recompute", "torchtitan-op", "--batch", "2", "--json"]
    code, out, err = run_main(["plan", *train, "--compile"], capsys)
    assert code == 0, err
    planned = json.loads(out)
    assert planned["inputs"]["compiled"] is True
    code, out, err = run_main(["simulate", "--train", *train, "--compile"], capsys)
    assert code == 0, err
    assert planned["feasible"][0]["step_time"] == json.loads(out)["step"]["seconds"]
    code, out, err = run_main(["plan", *train], capsys)
    assert json.loads(out)["feasible"][0]["step_time"] > planned["feasible"][0]["step_time"]  # eager
    serve = ["--model", "llama2-7b", "--hardware", "a100-80gb", "--tp", "2", "--prompt", "5", "--gen", "200",
             "--kv-cache", "static", "--attention", "flash", "--compile", "--json"]
    code, out, err = run_main(["plan", "--serve", "--gpus", "2", "--batch", "1", "--cuda-graphs", "on", *serve], capsys)
    assert code == 0, err
    token = json.loads(out)["feasible"][0]["time_per_output_token"]
    code, out, err = run_main(["simulate", "--cuda-graphs", *serve], capsys)
    assert token == json.loads(out)["generation"]["time_per_output_token"]
    code, out, err = run_main(["plan", "--serve", "--model", "gpt2", "--rate", "1", "--compile"], capsys)
    assert code == 2 and err.startswith("error: --compile: the capacity search")


def test_decode_code_with_a_layout_is_read_by_its_eager_steps(capsys):
    # `simulate --tp 2 --decode-code gpt-fast` gave the same token as without it (a layout's decode
    # charged launches per block, not the code's host ops) and said so on stderr. Since wt27_tphost
    # each rank's host issues the code's counted ops (kernel_facts.json "eager_step_ops"): Llama-2-7B
    # at batch 1 is host-bound at tp 2 on the H100 (6.545 us an op, borrowed): gpt-fast's 4,068 ops,
    # generate's 2,488, whatever the rank's kernels (4.79 ms with the all-reduces; gpt-fast's 64 DRAM
    # starts of 1.955 us fewer: its wqkv is one GEMM a layer, kernel_facts.json fused_projections; since wt38_sweep
    # also 64 kernels' GPU-side launch cost fewer, 1.3 us each, graph_kernel_s).
    base = ["simulate", "--model", "llama2-7b", "--tp", "2", "--gen", "2", "--json"]
    code, out, err = run_main(base + ["--decode-code", "gpt-fast"], capsys)
    assert code == 0 and err == ""
    named = json.loads(out)
    assert named["token"]["seconds_per_token"] == 4068 * 6.545241752576789e-06
    assert named["token"]["host"]["bound"] is True and named["inputs"]["implementation"] == "gpt-fast"
    code, out, err = run_main(base, capsys)
    token = json.loads(out)["token"]
    assert token["seconds_per_token"] == 2488 * 6.545241752576789e-06 and err == ""
    kernels = token["host"]["kernels_seconds"]
    assert named["token"]["host"]["kernels_seconds"] == pytest.approx(kernels - 64 * (1.955e-06 + 1.3e-06), rel=1e-4)
    assert kernels < 2488 * 6.545241752576789e-06
    code, out, err = run_main(base + ["--cuda-graphs"], capsys)  # replayed: no host term
    assert "host" not in json.loads(out)["token"]


def test_training_layout_options_are_refused_for_inference(capsys):
    # `simulate --model llama2-7b --tp 2 --zero 3` (or --sp, --microbatches 4, --framework
    # megatron, --fp8 tensorwise, --device cpu, --capacity-factor 1) decoded exactly as without
    # them: a decode reads none of them. One line now; --fp8 points at --weight-dtype fp8.
    why = ("training layout options, read only with --train: an inference layout is --tp, --pp, --dp, --ep and "
           "--stage-layers (FP8 weights: --weight-dtype fp8).\n")
    for typed, named in ((["--zero", "3"], "--zero"), (["--sp"], "--sp"), (["--microbatches", "4"], "--microbatches"),
                         (["--framework", "megatron"], "--framework"), (["--fp8", "tensorwise"], "--fp8"),
                         (["--device", "cpu"], "--device")):
        code, out, err = run_main(["simulate", "--model", "llama2-7b", "--tp", "2", "--gen", "2", *typed], capsys)
        assert (code, out, err) == (2, "", f"error: {named}: {why}")
    code, out, err = run_main(["simulate", "--model", "mixtral-8x7b", "--dp", "2", "--gen", "2", "--capacity-factor",
                               "1"], capsys)
    assert (code, err) == (2, f"error: --capacity-factor: {why}")
    code, out, err = run_main(["simulate", "--train", "--model", "gpt2", "--dp", "2", "--zero", "1", "--sp", "--tp",
                               "2", "--seq-len", "256"], capsys)
    assert code == 0, err  # training reads them
