"""The gradient reduction's overlap a framework gives when none is stated (costmodel/layout/overlap.py
framework_dp_overlap): Megatron-LM's '--overlap-grad-reduce' is action='store_true' (megatron/training/
arguments.py line 3121 at d98e8a64d), so `simulate --framework megatron` and `plan` reduce the gradients
after the last backward unless --overlap-grad-reduce (or --dp-overlap) says otherwise; the published
Megatron rows state what their recipes set (costmodel/published_runs.json overlap_grad_reduce, audited
source by source in validate/FINDINGS.md, wt29_mgaudit)."""

import json

import pytest

import cli
from costmodel.config import ConfigError
from costmodel.layout.overlap import BACKWARD_SHARE, Overlap, framework_dp_overlap, framework_overlap
from costmodel.layout.plan import plan_overlap
from costmodel.layout.spec import Layout

LAYOUT = ("simulate -m llama3-70b --train --framework megatron --tp 8 --pp 4 --dp 2 --schedule interleaved "
          "--virtual-stages 5 --microbatches 16 --hardware h100-sxm --json").split()


def _step(capsys, *extra: str) -> dict:
    assert cli.main([*LAYOUT, *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_megatron_reduces_after_the_backward_unless_told_and_the_others_under_it():
    assert BACKWARD_SHARE == 2 / 3 == Overlap().dp
    assert framework_dp_overlap("megatron") == 0.0
    assert framework_dp_overlap("megatron", True) == 2 / 3
    assert framework_dp_overlap("deepspeed") == 2 / 3
    assert framework_dp_overlap("fsdp2") == 2 / 3
    assert framework_dp_overlap("fsdp2", False) == 0.0
    for bad in (1, 0, "true"):
        with pytest.raises(ConfigError, match="overlap_grad_reduce must be true or false"):
            framework_dp_overlap("megatron", bad)
    layout = Layout(tp=1, pp=1, dp=4, microbatches=2, framework="megatron")
    assert framework_overlap(layout).dp == 0.0
    assert framework_overlap(layout, {"dp": 0.5}).dp == 0.5
    assert framework_overlap(layout, overlap_grad_reduce=True).dp == 2 / 3
    with pytest.raises(ConfigError, match="give one of them"):
        framework_overlap(layout, {"dp": 0.5}, True)


def test_plan_times_megatron_candidates_with_megatrons_default():
    megatron = Layout(tp=1, pp=1, dp=4, microbatches=2, framework="megatron")
    fsdp2 = Layout(tp=1, pp=1, dp=4, microbatches=2, framework="fsdp2")
    assert plan_overlap(megatron, {}).dp == 0.0
    assert plan_overlap(megatron, {"overlap_grad_reduce": True}).dp == 2 / 3
    assert plan_overlap(fsdp2, {}).dp == 2 / 3


def test_the_cli_default_is_megatrons_and_overlap_grad_reduce_puts_it_under_the_backward(capsys):
    """Llama 3 70B, TP 8 x PP 4 (VP 5) x DP 2, 16 micro-batches on H100s: the default (the reduction
    after the backward) 1.5794 s a step, as --dp-overlap 0; --overlap-grad-reduce 1.4938 s, as
    --dp-overlap 2/3 (the default before session 29); 1.5782 and 1.4927 s before session 31's loss traffic
    (blocks/head.py fused_loss_bytes)."""
    default, after = _step(capsys), _step(capsys, "--dp-overlap", "0")
    under, share = _step(capsys, "--overlap-grad-reduce"), _step(capsys, "--dp-overlap", repr(2 / 3))
    assert default["inputs"]["overlap"]["dp"] == 0.0
    assert default["step"] == after["step"]
    assert round(default["step"]["seconds"], 4) == 1.5642  # 1.5794 before session 43 (wt43_review)
    assert under["inputs"]["overlap"]["dp"] == 2 / 3
    assert under["step"] == share["step"]
    assert round(under["step"]["seconds"], 4) == 1.4799  # 1.4938 before session 43 (wt43_review)
    assert cli.main([*LAYOUT, "--overlap-grad-reduce", "--dp-overlap", "0"]) == 2
    assert "--dp-overlap and --overlap-grad-reduce both set" in capsys.readouterr().err
    # Megatron-LM asserts --overlap-param-gather with --overlap-grad-reduce (arguments.py lines 1028-1029)
    assert cli.main([*LAYOUT, "--zero", "1", "--param-gather-overlap", "1"]) == 2
    assert "add --overlap-grad-reduce" in capsys.readouterr().err
    assert cli.main([*LAYOUT, "--zero", "1", "--param-gather-overlap", "1", "--overlap-grad-reduce"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"]["overlap"]["params"] == 1.0


def test_plan_overlap_grad_reduce_times_every_megatron_candidate_under_the_backward(capsys):
    """Llama 2 7B on 8 H100s: the best layout, megatron 1 x 1 x 8 ZeRO-1, 1.3586 s a step with
    Megatron-LM's reduction after the backward, 1.3016 s with --overlap-grad-reduce (the default before
    session 29; 1.3551 and 1.3004 s before session 31's loss traffic); the setting is in the JSON's inputs
    and the text's first line."""
    args = ["plan", "--model", "llama2-7b", "--gpus", "8", "--top", "1"]
    steps = []
    for extra in ([], ["--overlap-grad-reduce"]):
        assert cli.main([*args, *extra, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        best = data["feasible"][0]
        assert (best["layout"]["framework"], best["layout"]["tp"], best["layout"]["pp"], best["layout"]["dp"]) == \
            ("megatron", 1, 1, 8)
        steps.append((round(best["step_time"], 4), data["inputs"].get("overlap_grad_reduce")))
    assert steps == [(1.3539, None), (1.2992, True)]  # (1.3586, 1.3039) before session 43 (wt43_review)
    assert cli.main([*args, "--overlap-grad-reduce"]) == 0
    assert "bf16, gradient reduces under the backward:" in capsys.readouterr().out.splitlines()[0]


def test_the_python_api_takes_the_commands_default():
    """costmodel.simulate with a megatron layout times the step as `simulate` does (it passed no overlap,
    so Overlap()'s 2/3 and exposed pipeline sends: 1.4927 s + the sends before session 29; 1.5782 s before
    session 31's loss traffic)."""
    import costmodel

    layout = dict(framework="megatron", tp=8, pp=4, dp=2, schedule="interleaved", virtual_stages=5, microbatches=16)
    step = costmodel.simulate("llama3-70b", hardware="h100-sxm", train=True, layout=layout).to_dict()["step"]
    assert round(step["seconds"], 4) == 1.5642  # 1.5794 before session 43 (wt43_review)


#: One row of each Megatron source of costmodel/published_runs.json and the share of its last micro-batch
#: its gradient reduction runs under, as its recipe states it (2/3: overlap_grad_reduce on; 0: off, or
#: not stated and Megatron-LM's default): validate/FINDINGS.md, wt29_mgaudit, has each file and line.
ROWS = {
    # session 46 (wt46_unseent): the Megatron-Core MoE report's Table 11 (the distributed optimizer with its overlap, B.2)
    "mcore-moe-report deepseek-v3 mxfp8 tp1 pp4 ep64 vpp4 256xgb300": 2 / 3,
    # session 45 (wt45_unseent): Megatron-LM's CI step times and its Llama example, one row a source: the rows whose
    # config sets --overlap-grad-reduce (the distributed optimizer's) state overlap params 1 and reduce at 2/3; the
    # others take Megatron's default, the reduction after the backward
    "megatron-ci-speed megatron-ci-7b tp4 pp1 8xh100-sxm": 2 / 3,
    "megatron-ci-unfused megatron-ci-gpt-12x512 local tp1 pp2 8xh100-sxm": 0.0,
    "megatron-ci-cp2 megatron-ci-gpt-12x512 te tp2 pp2 cp2 8xh100-sxm": 0.0,
    "megatron-ci-fusedce megatron-ci-gpt-12x512 te tp2 pp2 fusedce 8xh100-sxm": 0.0,
    "megatron-llama-example llama3-8b fp8 cp2 8xh100": 2 / 3,
    "dgxc-25.02 llama3.1-8b bf16 8xh100": 2 / 3,  # llama3.1_8b.yaml line 148, overlap_grad_sync true
    "dgxc-25.02-nemotron nemotron4-15b bf16 16xh100": 2 / 3,  # nemotron4-15b-synth.yaml line 181
    "gpu-hours-deepseek-67b 67b per 1T tokens": 0.0,  # not stated: HAI-LLM as Megatron, its default
    "gpu-hours-deepseek-v2 236b per 1T tokens": 0.0,
    "gpu-hours-deepseek-v3 671b 14.8T tokens": 0.0,
    "gpu-hours-falcon-180b 180b 3.5T tokens": 0.0,  # not stated: TII's Gigatron as Megatron, its default (session 30)
    "gpu-hours-falcon-cards falcon-7b 1.5T tokens": 0.0,  # the same code, not stated (session 31)
    "gpu-hours-llama3.1 405b 15T tokens": 2 / 3,  # FSDP's backward hooks, as the llama3 rows
    "gpu-hours-smollm3 3b 11.1T tokens": 2 / 3,  # nanotron ZeRO-0: DDP's bucket hook
    "llama 65b 2048 GPUs": 2 / 3,  # section 2.4: the all_reduce overlapped
    "llama3 405b 8k GPUs": 2 / 3,
    "megatron-bridge 25.11 llama3-70b fp8-cs 64xh100": 2 / 3,  # llama3.py DDP config, comm_overlap.py dp > 1
    "megatron-bridge-cards qwen3-30b-a3b pretrain bf16 16xh100": 2 / 3,
    "megatron-bridge-cards deepseek-v3 perf bf16 1024xh100": 0.0,  # perf_recipes/deepseek/h100 lines 45-46
    "megatron-bridge-cards nemotron-3-super pretrain bf16 64xh100": 0.0,  # h100/nemotron_3_super.py line 232
    "megatron-bridge-cards nemotron-3-super perf bf16 64xh100": 0.0,
    "megatron-bridge-cards nemotron-3-super perf bf16 64xgb200": 2 / 3,  # its base recipe sets it True
    "megatron-bridge-docs qwen3-30b-a3b cuda-graphs eager bf16 16xh100": 2 / 3,  # session 30: the recipe's DDP config
    "megatron-bridge-moe 26.08 deepseek-v3 mxfp8 256xgb200": 2 / 3,
    "megatron-bridge-moe 25.09 deepseek-v3 fp8 1024xh100": 0.0,  # run_script.py line 102 at a28844195
    "megatron-core-moe-readme mixtral-8x7b v0.8 64xh100": 2 / 3,  # README line 255, --overlap-grad-reduce
    "megatron-core-r0.8.0 gpt-1.7b 48xh100": 2 / 3,  # README line 66
    "megatron-lm-dsv3-gb200 01 baseline mxfp8 256xgb200": 2 / 3,  # reproduce guide line 157
    "megatron-lm-gpt3 175b 1024 GPUs": 0.0,  # stated: Megatron-LM of 2021
    "modelzoo-qwen3 235b deepep tp2 ep32 pp8 vpp4 256xh100": 2 / 3,  # Qwen3-235B-A22B.yaml line 23
    "modelzoo-qwen3-gb 235b bf16 hybridep tp1 pp8 ep8 256xgb200": 2 / 3,
    "modelzoo-qwen3-long 235b bf16 deepep tp4 cp1 ep8 pp8 vpp4 16k 256xh100": 2 / 3,
    "nanotron-playbook llama-1.34b dp128 tp2 pp2 gas1 mbs2 zero1 512xh100": 0.0,  # ZeRO-1: no DDP hook
    "nanotron-playbook llama-8.86b dp128 tp4 pp1 gas1 mbs2 zero0 512xh100": 2 / 3,  # ZeRO-0: DDP's hook
    "nemo-24.07 gpt3-5b 64xh100": 2 / 3,  # gpt3/5b.yaml line 172
    "nemo-25.02 gpt3-175b 512xb200": 2 / 3,  # megatron_comm_overlap.py lines 185-187
    "nemo-25.04 gpt3-175b 128xgb200": 2 / 3,
    "nemo-launcher-2022 gpt3-5b 256xa100-80gb": 2 / 3,  # Apex's overlap_grad_sync default at PP 1
    "nemo-launcher-2022 gpt3-175b 1024xa100-80gb": 0.0,  # NeMo v1.11.0: off with PP > 1 or SP
    "nemo-long-b200 llama3-8b 8k 2xb200": 2 / 3,
    "nemo-long-h100 llama2-7b 4k 4xh100": 2 / 3,  # llama2_7b.yaml line 150
    "nemotron-4 340b 6144 GPUs": 0.0,  # not stated: Megatron-LM's default
    "primus-projection llama3.1-8b fp8 8xmi325x": 2 / 3,  # llama3.1_8B-FP8-pretrain.yaml line 46
    "primus-projection-repo mixtral-8x22b mbs2 pp4 vp2 ep8 64xmi355x": 2 / 3,
    # session 29's unseen rows (merged beside this audit): InternLM's configs/7B_sft.py zero_overlap_communication=True;
    # FlagPerf's scripts pass no --overlap-grad-reduce to Megatron-Core 0.6 (their sources' overlap dp 0)
    "internlm-train 7b tp1 zero1-all 8xa100-80gb": 2 / 3,
    "flagperf-llama3 llama3-8b pp1dp4tp2 8xh100": 0.0,
    "flagperf-llama3-a800 llama3-8b pp2dp4tp1 8xa800": 0.0,
    "flagperf-llama2-70b-h800 llama2-70b tp8pp4dp1 gbs44 32xh800": 0.0,
    "flagperf-qwen-moe-bf16 qwen1.5-moe-2.7b-8e pp2dp4tp1 8xa800": 0.0,
    "flagperf-qwen-moe-fp16 qwen1.5-moe-2.7b-8e pp2dp4tp1 8xa800": 0.0,
    # Megatron-LM of 2022 (FlashAttention's Table 2 baseline): its default local DDP reduces after the backward
    "flash-attention-1-megatron gpt2-small 1k": 0.0,
    # StarCoderBase (session 31; expressible since wt31_express, its KV head replicated): the source's "gradient
    # reduction after the backward", Megatron-LM's default
    "gpu-hours-starcoder starcoderbase-15.5b 1T tokens": 0.0,
    # session 32's unseen rows: Megatron-LLaMA's README, DistributedOptimizer of mid-2023 Megatron-LM (no
    # --overlap-grad-reduce yet; its OverlappedDistributedOptimizer rows 2/3), and the Llama 4 card's GPU-hours
    # rows, whose layout is assumed and whose reduction is not stated: Megatron-LM's default
    "megatron-llama llama-13b distopt 32xa100-80gb": 0.0,
    "gpu-hours-llama4 scout 40T tokens": 0.0,
    # session 34's unseen rows: DGX Cloud benchmarking's recipes (NeMo 1 yamls' overlap_grad_sync true; NeMo 2's
    # performance recipes), MLPerf's conf/optim/distributed_fused_adam.yaml overlap_grad_sync True; FlagPerf's
    # FlagScale ed55532 without compute-communication overlap (its README)
    "dgxc-24.11 llama3.1-8b bf16 8xh100": 2 / 3,
    "dgxc-24.11-nemotron nemotron4-15b bf16 16xh100": 2 / 3,
    "dgxc-24.11-gpt3 gpt3-175b bf16 128xh100": 2 / 3,
    "dgxc-25.04 llama3.1-8b bf16 8xh100": 2 / 3,
    "dgxc-25.05-gb200 llama3.1-405b bf16 128xgb200": 2 / 3,
    "mlperf-v3.1-nvidia gpt3-175b 512xh100": 2 / 3,
    "mlperf-v3.1-azure gpt3-175b 10752xh100": 2 / 3,
    "mlperf-v4.0-nvidia gpt3-175b 512xh100": 2 / 3,
    "mlperf-v4.0-smc gpt3-175b 512xh100": 2 / 3,
    "flagperf-aquila2-7b-a800 aquila2-7b tp1pp1dp8 8xa800": 0.0,
    # session 35's unseen rows: FlagPerf's Aquila2-7B fine-tune on the same FlagScale ed55532 (no overlap)
    "flagperf-aquila2-7b-ft-a800 aquila2-7b tp1pp1dp8 gas4 8xa800": 0.0,
    # session 34 (wt34_gpuhours): LLaMA-1's GPU-hours rows on the 'llama' source's stack, section 2.4's all_reduce
    # overlapped with the backward
    "gpu-hours-llama1 65b 1.4T tokens": 2 / 3,
    # session 36's unseen rows: llm.c's ZeRO-1, its bf16 gradients reduce-scattered under the last micro-step's
    # backward (train_gpt2.cu: multi_gpu_async_reduce_gradient on the nccl stream), typed overlap_grad_reduce true
    "llmc gpt2-124m zero1 8xa100-80gb": 2 / 3,
    # session 36's second unseen batch: Megatron-SWIFT's overlap_grad_reduce default False (its parameter list);
    # BioNeMo's Megatron baseline, unstated, at the framework's default (after the backward)
    "ms-swift-megatron qwen2.5-14b tp4 sp selective 8xa800": 0.0,
    "ms-swift-qwen3-megatron qwen3-30b-a3b pp2 ep8 full 16xa800": 0.0,
    "ms-swift-long-megatron qwen2.5-7b tp4 32k 4xa100": 0.0,
    "bionemo-og2-megatron og2-7b fp8 tp4 dp12 48xh100": 0.0,
    "nanochat d32 8xh100": 0.0,  # session 37: DistMuon/DistAdamW reduce after the backward
    # session 37's second unseen batch: MLPerf Training v5.1's NeMo and AMD implementations, overlap_grad_reduce True
    # in each log's config dump or config_common.sh
    "mlperf-v5.1-cisco llama3.1-8b fp8 64xh100": 2 / 3,
    "mlperf-v5.1-dell llama3.1-8b fp8 8xb300": 2 / 3,
    "mlperf-v5.1-oracle llama3.1-8b fp8 cp2 64xb200": 2 / 3,
    "mlperf-v5.1-verda llama3.1-8b fp8 cp2 64xb200": 2 / 3,
    "mlperf-v5.1-uf llama3.1-8b fp8 8xb200": 2 / 3,
    "mlperf-v5.1-amd llama3.1-8b fp8 8xmi355x": 2 / 3,
    "mlperf-v5.1-gigacomputing llama3.1-8b fp8 8xmi355x": 2 / 3,
    "mlperf-v5.1-nvidia llama3.1-405b nvfp4 2560xgb200": 2 / 3,
    # session 40 (wt40_unseent): MLPerf v5.0's 405B and v4.1's and v3.0's GPT-3 submitters, no overlap dp stated
    "mlperf-v5.0-nvidia llama3.1-405b fp8 tp8 512xh100": 2 / 3,
    "mlperf-v5.0-coreweave llama3.1-405b fp8 tp4 512xgb200": 2 / 3,
    "mlperf-v4.1-nvidia gpt3-175b vp6 512xh100": 2 / 3,
    "mlperf-v4.1-oracle gpt3-175b vp4 1536xh100": 2 / 3,
    "mlperf-v3.0-nvidia gpt3-175b 512xh100": 2 / 3,
    "mlperf-v3.0-coreweave gpt3-175b 768xh100": 2 / 3,
    "swissai-megatron-pr10 llama3.2-3b mbs1 4xgh200": 2 / 3,  # session 40: the Swiss AI fork's --overlap-grad-reduce
    # session 41 (wt41_unseent2): DGX Cloud benchmarking's Grok-1 and Llama 4 Maverick under NeMo 25.04's performance
    # recipes, which turn overlap_grad_reduce on as the other NeMo 2 dgxc rows' (the Overlap default, 2/3)
    "dgxc-grok1 grok1-314b bf16 tp4 ep8 etp4 128xgb200": 2 / 3,
    "dgxc-llama4 llama4-maverick bf16 pp2 vp12 ep64 128xgb200": 2 / 3,
    # session 42: the NeMo launcher's T5 and BERT tables as typed (wt42_unseent: the gradient reduction after the
    # backward, not read in NeMo's encoder-decoder code; FINDINGS says so), the NeMo NVFP4 reproduction's and the
    # Swiss AI fork's PR #23 overlap_grad_reduce (wt42_unseent2)
    "nemo-launcher-2022-t5 t5-3b tp2 8xa100-80gb": 0.0,
    "nemo-launcher-2023-bert bert-4b 8xa100-80gb": 0.0,
    "nemo-perf-nvfp4 llama3-8b bf16 8xb200": 2 / 3,
    "swissai-megatron-pr23 llama3-300m mbs2 32xgh200": 2 / 3,
    # session 44: DeepLearningExamples' SQuAD fine-tuning rows, DDP's bucketed all-reduce under the backward typed as
    # --framework megatron --zero 0 with overlap_grad_reduce (wt44_unseent; their pre-training rows are deepspeed)
    "dle-bert-pytorch bert-large fp16 squad 384 1xa100-80gb": 2 / 3,
    "dle-bert-paddle bert-large amp squad 384 1xa100-80gb": 2 / 3,
    "dle-bert-tf bert-large amp squad 384 1xa100-40gb": 2 / 3,
}


def test_each_megatron_source_reduces_as_its_recipe_states():
    """One row a source (58 sources: all whose framework is megatron, session 31's StarCoderBase GPU-hours row
    among them since its one KV head is replicated under TP 4, session 32's Megatron-LLaMA and Llama 4 rows,
    session 34's DGX Cloud, MLPerf and Aquila2 rows and, since session 34, LLaMA-1's four GPU-hours rows; session 35's
    Aquila2 fine-tune rows; session 36's four llm.c rows, its ms-swift and BioNeMo Megatron rows; session 37's two nanochat rows and MLPerf v5.1's 21 rows of 8 submitters: 68 sources), and the counts over the 503 Megatron training rows: 422 reduce under the backward (Megatron-LLaMA's two overlapped rows,
    session 34's 55 NeMo and MLPerf rows, LLaMA-1's four and llm.c's four among them), 68
    after it (session 34's four Aquila2 rows, session 35's three Aquila2 fine-tune rows, Megatron-LLaMA's three DistributedOptimizer rows and the two
    Llama 4 GPU-hours rows among them; session 36's five ms-swift and BioNeMo rows, session 37's two nanochat rows) (the 6 whose recipes turn it off, the 16 nanotron ZeRO-1
    rows, Megatron-LM of 2021, Nemotron-4 340B's, the three DeepSeek and session 30's Falcon-180B and session
    31's Falcon-7B, -40B and StarCoderBase GPU-hours rows by Megatron-LM's default, session 31's two FlashAttention-paper
    Megatron-LM rows, and session 29's 18 FlagPerf rows), and the
    11 ZeRO-3 rows, whose sharded data parallelism reads no Overlap.dp, take 2/3."""
    from reports.published_runs import other_runs_data, stated, train_setup

    data = other_runs_data()
    shares, sources, refused = {}, set(), []
    for run in data["runs"]:
        source = data["sources"][run["id"].split()[0]]
        if run["kind"] == "decode" or stated(run, source, "framework", "megatron") != "megatron":
            continue
        try:
            estimate, _, options = train_setup(run, source)
        except ConfigError:  # a row `published` marks not expressible has no step to share
            refused.append(run["id"])
            continue
        shares[run["id"]] = (options.get("overlap", Overlap()).dp, estimate.layout.zero)
        sources.add(run["id"].split()[0])
    # session 37: MLPerf v5.1's 8 submitters; session 40: MLPerf v5.0's 2, v4.1's 2 and v3.0's 2, Swiss AI's (wt40_unseent)
    # session 41: DGX Cloud's Grok-1 and Llama 4 Maverick (wt41_unseent2)
    # session 42: the launcher's T5/BERT, the NVFP4 reproduction and the Swiss AI PR #23 (its MXFP8 row refused: MXFP8
    # parameter gather is not modelled, wt42_unseent2)
    assert refused == ["nemo-perf-nvfp4 llama3-8b mxfp8 8xb200"]
    assert len(sources) == 90 and {row.split()[0] for row in ROWS} == sources  # 89 before session 46's 1 (wt46_unseent); 84 before session 45's 5 (wt45_unseent); 81 before session 44's 3 SQuAD sources
    assert {row: shares[row][0] for row in ROWS} == ROWS
    assert len(shares) == 598  # session 46: the MoE report's 9 rows; session 45: wt45_unseent's 30 Megatron-LM rows; session 44: DeepLearningExamples' 6 SQuAD rows; session 42: the launcher's 4 T5 and 2 BERT rows, 3 NVFP4-reproduction rows, Swiss AI's PR #23; session 41: DGX Cloud's 16 Grok-1 and Maverick rows; session 37: nanochat's two rows, MLPerf v5.1's 21; session 40: MLPerf's 22, Swiss AI's 2
    assert sum(dp == 2 / 3 and zero != 3 for dp, zero in shares.values()) == 496  # session 46's 9 (the MoE report); session 45's 15 (6 CI speed, 6 CI distopt, 3 Llama example); session 44's 6 SQuAD rows; session 42's 4; session 41's 16; session 37: MLPerf v5.1's 21; session 40's 24
    assert sum(dp == 0.0 for dp, _ in shares.values()) == 91  # session 45: the 15 CI rows without --overlap-grad-reduce; session 42: the launcher's six T5/BERT rows; session 37: nanochat's two, after the backward
    assert sum(zero == 3 for _, zero in shares.values()) == 11
