"""A new user's eleventh round (issue 18, session 18): the README's commands typed with realistic
and odd inputs (validate/FINDINGS.md "A new user's eleventh round"). Each test failed before its
fix; the numbers are exact."""

from __future__ import annotations

import json

from tests.cli_run import run_json, run_main


def _fit(args, capsys):
    return run_json(["estimate", *args], capsys)["fit"]


def test_fit_under_deepspeed_pipeline_stages_does_not_fail_on_its_own_suggestion(capsys):
    """`estimate --pp 2 --hardware h100` exited 2 with "DeepSpeed's pipeline engine shards the
    optimizer state only", though the user typed no --zero: the verdict built its suggested
    --zero 2/3 layouts outside the guard that skips a layout that cannot run."""
    fit = _fit(["--model", "llama3.1-70b", "--pp", "2", "--hardware", "h100"], capsys)
    assert fit["training"]["memory"] == 598_185_107_980 and fit["training"]["options"] == []
    assert fit["inference"] == {"phase": "inference", "memory": 71_241_581_056,  # 70,889,516,032 before session 26's transients
                                "capacity": 76_014_734_540,
                                "gpus": 2, "fits": True}


def test_a_zero_suggestion_keeps_the_gpus_given(capsys):
    """With --tp 8 on 8 GPUs the verdict suggested "--dp 8 --zero 3 --recompute full, 33.18 GiB"
    under "Training on 8 GPUs": tp 8 x dp 8 is 64 GPUs. The data-parallel width of a layout is its
    --dp (1 here: nothing to shard over), so the suggestion is more GPUs, with the figure typing
    it prints."""
    fit = _fit(["--model", "llama3.1-70b", "--tp", "8", "--hardware", "h100", "--seq-len", "8192"], capsys)
    assert fit["training"]["options"][0] == {"change": "--gpus 32 (--dp with --zero 3 --recompute full)",
                                             "memory": 57_680_405_004, "fits": True, "cost": "32 GPUs"}
    # since session 27 offload beside ZeRO 3 and full recomputation too, on the GPUs given (dp 1 here)
    assert [(o["change"], o["memory"]) for o in fit["training"]["options"][1:]] == [
        ("--dp 1 --zero 3 --offload optimizer --recompute full", 30_791_418_380),
        ("--dp 1 --zero 3 --offload params --recompute full", 13_150_683_660)]
    typed = _fit(["--model", "llama3.1-70b", "--tp", "8", "--dp", "4", "--zero", "3", "--recompute", "full",
                  "--hardware", "h100", "--seq-len", "8192"], capsys)
    assert typed["training"]["memory"] == 57_680_405_004 and typed["training"]["gpus"] == 32


def test_simulate_a_prefill_alone_says_whether_it_fits(capsys):
    """`simulate --gen 0` on one GPU printed the prefill's time and no memory line (its JSON had no
    "memory"), so Llama 3.1 70B "ran" on one H100 without a word; with --tp the layout's memory
    line was there. The fit is the prefill's (weights 141,107,412,992 B = 70,553,706,496 params x
    2, the 8,192 tokens' KV cache at 327,680 B a token, generate's last-position logits)."""
    args = ["simulate", "--model", "llama3.1-70b", "--hardware", "h100", "--prompt", "8192", "--gen", "0"]
    code, out, _ = run_main([*args, "--json"], capsys)
    memory = json.loads(out)["memory"]
    assert code == 0 and memory["weights"] == 141_107_412_992 and memory["kv_bytes_per_token"] == 327_680
    assert memory["bytes"] == memory["bytes_by_phase"]["prefill"] == 143_792_090_112 - 256_512 + 64 * 8_192**2 * 10 and not memory["fits"]  # since session 26 the eager
    # scores (64 heads x 8,192^2 pairs x 10 B) replace the logits
    code, out, _ = run_main(args, capsys)
    assert ("Memory: 173.92 GiB at batch 1 (does NOT fit in 70.79 GiB usable): weights 131.42 GiB, KV cache "
            "320.00 KiB per token per sequence, the prefill's logits at the last position (Hugging Face generate's "
            "prefill, logits_to_keep=1); the weights alone (131.42 GiB) exceed 70.79 GiB: spread them over "
            "GPUs (--tp) or store them in fewer bytes (--weight-dtype; `estimate --hardware` lists what fits)"
            ) in out.splitlines()  # (session 42: the quantized route, which estimate and serve name, named too)


def test_context_parallel_inference_is_refused(capsys):
    """`simulate --cp 2` (inference) printed "tp 1 x pp 1 x dp 1" on 2 GPUs, no prefill line (its
    key/value exchange is not modelled), a decode step slower than without --cp and each rank
    holding the whole KV cache: figures of a layout it does not model. One sentence now; the
    refusal of the training layout options no longer lists --cp as an inference option."""
    code, out, err = run_main(["simulate", "--model", "llama3.1-8b", "--hardware", "h100", "--cp", "2", "--prompt",
                           "4096"], capsys)
    assert (code, out) == (2, "")
    assert err == ("error: layout: context parallelism (--cp) is modelled for training only: an inference prefill's "
                   "key/value exchange and decode context parallelism (vLLM's dcp) are not.\n")
    code, out, err = run_main(["simulate", "--model", "llama3.1-8b", "--hardware", "h100", "--tp", "2", "--zero", "1"],
                          capsys)
    assert code == 2 and "an inference layout is --tp, --pp, --dp, --ep and --stage-layers" in err


def test_zero_suggestions_shard_over_the_context_parallel_ranks(capsys):
    """ZeRO shards over dp x cp (Layout.shard_ranks); with --cp 2 and no --dp the verdict offered no
    ZeRO stage (it tested dp > 1). The suggestion's figure is what typing it prints. ZeRO 3 with full
    recomputation over the two cp ranks needs 85,309,186,572 B, which fitted 80 GiB less the reserve
    but not the 81,117 MiB an H100 reports less it (84,520,468,480): the first suggestion is now 4
    GPUs, and the ZeRO stages over the cp ranks come with offloading."""
    args = ["--model", "llama3.1-8b", "--hardware", "h100", "--cp", "2", "--seq-len", "8192", "--attention", "flash"]
    fit = _fit(args, capsys)["training"]
    assert fit["memory"] == 157_046_424_076 and fit["options"][0] == {
        "change": "--gpus 4 (--dp with --zero 3 --recompute full)", "memory": 45_157_880_332, "fits": True,
        "cost": "4 GPUs"}
    assert fit["options"][1] == {"change": "--dp 1 --zero 2 --offload optimizer", "memory": 44_622_766_604,
                                 "fits": True, "cost": "ZeRO-Offload: the optimizer's update on the host CPU, "
                                                       "over PCIe every step; 239.32 GiB of host memory a node"}
    typed = _fit([*args, "--dp", "1", "--zero", "2", "--offload", "optimizer"], capsys)["training"]
    assert typed["memory"] == 44_622_766_604 and typed["fits"]
    typed = _fit([*args, "--dp", "1", "--zero", "3", "--recompute", "full"], capsys)["training"]
    assert typed["memory"] == 85_309_186_572 > 84_520_468_480 and not typed["fits"]


def test_static_batching_refuses_a_token_budget(capsys):
    """`serve --scheduler static --max-batched-tokens 100` printed "max-batched-tokens 100 (given)"
    and the same latencies as without it: StaticScheduler prefills its whole padded batch in one
    step and never reads a budget (the budget only shrank the activations the KV sizing
    reserves). One sentence now; without it the run is unchanged."""
    base = ["serve", "--model", "llama3.1-8b", "--rate", "1", "--requests", "20", "--scheduler", "static", "--json"]
    code, out, err = run_main([*base, "--max-batched-tokens", "100"], capsys)
    assert (code, out) == (2, "")
    assert err == ("error: --max-batched-tokens: static batching (generate()) prefills its whole padded batch in one "
                   "step, with no token budget; leave it out (--max-num-seqs sets the batch).\n")
    code, out, _ = run_main(base, capsys)
    setup = json.loads(out)["setup"]
    assert code == 0 and setup["max_num_seqs"] == 8 and setup["budget_source"] == "a batch of 8, as one would call generate()"


def test_the_longest_context_names_the_models_own(capsys):
    """simulate said Llama-2-7B on an H200 decodes "to a context <= 233,162" though its context is
    4,096: that figure is memory's alone (what the KV cache left after the weights holds, kept as
    it is), and the line now says where the model stops. (126.40 GiB usable - 13.06 GiB) / 512 KiB
    a token = 233,162 tokens after the 1,024-token prompt."""
    code, out, _ = run_main(["simulate", "--model", "llama2-7b", "--hardware", "h200", "--prompt", "1024", "--gen", "16",
                         "--json"], capsys)
    memory = json.loads(out)["memory"]
    assert code == 0 and (memory["max_context"], memory["model_context"]) == (233_019, 4_096)  # 233,162 before the decode step's scores counted
    code, out, _ = run_main(["simulate", "--model", "llama2-7b", "--hardware", "h200", "--prompt", "1024", "--gen", "16"],
                        capsys)
    assert ("decoding to a context <= 233,019 after this prompt at this batch (the prefill's ids and KV cache grow "
            "with a longer prompt); the model's context stops at 4,096 tokens") in out


def test_a_global_batch_of_zero_says_why(capsys):
    """`--global-batch 0` was refused as "not a multiple of batch x dp = 1 x 2", which 0 is."""
    code, out, err = run_main(["simulate", "--model", "llama3.1-8b", "--hardware", "h100", "--train", "--dp", "2",
                           "--global-batch", "0"], capsys)
    assert (code, out, err) == (2, "", "error: --global-batch must be at least 1, got 0.\n")


def test_more_gpus_under_megatron_use_its_distributed_optimizer(capsys):
    """Under --framework megatron the verdict's "more GPUs" search tried ZeRO 3 only, which
    Megatron refused, so Llama 3.1 70B at tp 8 and 8k said "No single change makes it fit". It
    now takes the deepest stage the framework runs: Megatron's 3 since session 24 (Megatron-FSDP,
    costmodel/layout/megatron_fsdp.py: 32 GPUs where its distributed optimizer, --zero 1, needs 64),
    and the figure is what typing the layout prints."""
    args = ["--model", "llama3.1-70b", "--framework", "megatron", "--tp", "8", "--hardware", "h100",
            "--seq-len", "8192"]
    fit = _fit(args, capsys)["training"]
    assert fit["memory"] == 219_415_331_330 and fit["options"] == [
        {"change": "--gpus 32 (--dp with --zero 3 --recompute full)", "memory": 52_579_963_394, "fits": True,
         "cost": "32 GPUs"}]
    typed = _fit([*args, "--dp", "4", "--zero", "3", "--recompute", "full"], capsys)["training"]
    assert (typed["memory"], typed["gpus"], typed["fits"]) == (52_579_963_394, 32, True)
    typed = _fit([*args, "--dp", "8", "--zero", "1", "--recompute", "full"], capsys)["training"]
    assert (typed["memory"], typed["gpus"], typed["fits"]) == (78_190_014_978, 64, True)


def test_an_eager_decode_on_a_gpu_without_a_host_figure_says_so(capsys):
    """Llama 3.1 8B's eager decode step printed 23.3 ms on an A100 (host-bound: 3,279 ops at the
    A100 files' published time an op) and 9.38 ms on an H100 with no word that the H100's file
    states no host time, so the ratio read as the GPUs'. The H100 now borrows the project's H200
    host's time an op (6.545 us: 3,279 ops, 21.5 ms) and says it is borrowed; under CUDA graphs (no
    host issue) nothing is said."""
    base = ["simulate", "--model", "llama3.1-8b", "--prompt", "1024", "--gen", "128"]
    code, out, _ = run_main([*base, "--hardware", "h100"], capsys)
    assert code == 0 and ("  host time an op: 6.55 us, borrowed from the project's H200 host measurement; your "
                          "host may differ (a hardware file's module_s_per_op or dispatch_s_per_op, or simulate's "
                          "--host-op-time, states its own)") in out.splitlines()
    assert "  host: 3,279 eager ops a step (transformers), 21.5 ms to issue" in out
    code, out, _ = run_main([*base, "--hardware", "a100-80gb", "--json"], capsys)
    host = json.loads(out)["decode"]["host"]
    assert host == {"ops_per_step": 3279, "seconds_per_step": 3279 * 7.1e-6, "bound": True, "op_seconds": 7.1e-6,
                    "op_time_borrowed": False}
    code, out, _ = run_main([*base, "--hardware", "h100", "--cuda-graphs"], capsys)
    assert code == 0 and "host:" not in out and "borrowed" not in out
