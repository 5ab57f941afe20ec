"""Megatron-Bridge's mixture-of-experts pre-training rows (issue 18): each row of
costmodel/published_runs.json "megatron-bridge-moe" against the page's line
(tests/megatron_bridge_moe_page.py), the setup built from it, and why the rest are not expressible."""

from __future__ import annotations

import pytest

from reports.published_runs import train_setup
from tests.megatron_bridge_moe_page import HEADERS, PAGE_ROWS
from tests.megatron_bridge_pages import named_cells, refusal as _reason, runs_and_source

SYSTEMS = {"DGX-H100": "h100-sxm", "DGX-B200": "b200", "DGX-GB200": "gb200"}
#: the page's precision -> the row's --fp8 (None: bf16); 25.09 prints none (FP8 current, as its dense rows)
PRECISIONS = {"BF16": None, "FP8": "current", "FP8-CS": "current", None: "current", "MXFP8": "mxfp8",
              "FP8-MX": "mxfp8", "NVFP4": "nvfp4"}
MODELS = {"DeepSeekV3": "deepseek-v3", "DeepSeekV4 Flash": "deepseek-v4-flash", "GPT OSS 120B": "gpt-oss-120b",
          "Qwen3_30B_a3B": "qwen3-30b-a3b", "Qwen3_235B_a22B": "qwen3-235b-a22b",
          "Nemotron_3_Nano": "nemotron-3-nano", "Nemotron_3_Super": "nemotron-3-super",
          "Nemotron_3_Ultra": "nemotron-3-ultra", "Nemotron_3_5_Lightning": "nemotron-3.5-lightning"}


def _cells(header: int, line: str, heading: str) -> dict[str, str]:
    """The row's cells by column name; a 25.09 cell's figure before its parentheses (another
    quantization granularity), a footnote mark dropped; the table's heading as System or Model."""
    values = [c.split("(")[0].split("[^")[0].strip() for c in line.strip().strip("|").split("|")]
    return named_cells(HEADERS[header], values, heading)


def _runs() -> tuple[dict, dict]:
    return runs_and_source("megatron-bridge-moe")


def test_every_moe_row_of_the_page_is_in_the_json():
    runs, _ = _runs()
    ours = [i for i in runs if i.startswith("megatron-bridge-moe ")]
    assert sorted(ours) == sorted(r[0] for r in PAGE_ROWS) and len(ours) == 103


# The rows whose recipe, read at the release's commit, sets moe_a2a_overlap=True
# (scripts/performance/configs in NVIDIA-NeMo/Megatron-Bridge): 21d102f5e (26.04.01)
# QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_FP8_CS_V1/V2, GPT_OSS_120B_PRETRAIN_CONFIG_GB200_BF16_V2,
# DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2; 97ad8cc6f (25.11) QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_FP8_CS_,
# _B200_FP8_CS_ (FP8_MX the same) and QWEN3_30B_A3B_PRETRAIN_CONFIG_H100_FP8_CS_BASE_CONFIG. Not 26.04.01's
# Qwen3 30B H100 (moe_a2a_overlap=False). Read later at the tags v0.3.0 (26.02), v0.3.1 and cfeddcd94 (the
# commit that printed 26.02.01's table) and v0.4.0 (26.04): QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_FP8_CS_V1
# sets it True at each, so 26.02, 26.02.01 and 26.04's 235B H100 rows; v0.3.0's
# QWEN3_30B_A3B_PRETRAIN_CONFIG_H100_FP8_CS_V1 (PP 2 VP 12 EP 8, the 26.02 row's layout) True, but not
# v0.3.1's or cfeddcd94's (EP 16, False: the 26.02.01 row prints PP 2 VP 12 EP 8, so neither is stated);
# v0.4.0's GPT_OSS_120B_PRETRAIN_CONFIG_GB200_BF16_V2 True (the 26.04 GB200 row, GBS 1,280). 25.09's release
# branch (a28844195 'Cherry pick perf 2509', the same at v0.1.0rc4) scripts/performance/run_script.py sets
# comm_overlap.overlap_moe_expert_parallel_comm True for DeepSeek-V3 on H100 alone (A2A_1F1B).
MOE_A2A_OVERLAP = {"megatron-bridge-moe 25.09 deepseek-v3 fp8 1024xh100",
                   "megatron-bridge-moe 26.04 qwen3-235b-a22b fp8 256xh100",
                   "megatron-bridge-moe 26.02.01 qwen3-235b-a22b fp8 256xh100",
                   "megatron-bridge-moe 26.02 qwen3-235b-a22b fp8 256xh100",
                   "megatron-bridge-moe 26.02 qwen3-30b-a3b fp8 16xh100",
                   "megatron-bridge-moe 26.04 gpt-oss-120b bf16 64xgb200",
                   "megatron-bridge-moe 26.04.01 qwen3-235b-a22b fp8 256xh100",
                   "megatron-bridge-moe 26.04.01 gpt-oss-120b bf16 64xgb200",
                   "megatron-bridge-moe 26.04.01 deepseek-v3 mxfp8 256xb200",
                   "megatron-bridge-moe 25.11 qwen3-235b-a22b fp8-cs 256xh100",
                   "megatron-bridge-moe 25.11 qwen3-235b-a22b fp8-mx 64xb200",
                   "megatron-bridge-moe 25.11 qwen3-30b-a3b fp8-cs 16xh100",
                   # 63b08b397 (the commit that printed the 26.06 table): every GB200 MXFP8 MoE recipe of
                   # these four models sets moe_a2a_overlap True (and hybridep, full-iteration CUDA graphs)
                   "megatron-bridge-moe 26.06 deepseek-v3 mxfp8 256xgb200",
                   "megatron-bridge-moe 26.06 gpt-oss-120b mxfp8 64xgb200",
                   "megatron-bridge-moe 26.06 qwen3-30b-a3b mxfp8 8xgb200",
                   "megatron-bridge-moe 26.06 qwen3-235b-a22b mxfp8 256xgb200",
                   # 381d0b825 (26.06.01) and 4ab94dfad (26.08): the perf recipes' full-iteration MXFP8
                   # helpers set overlap_moe_expert_parallel_comm True (src/megatron/bridge/perf_recipes)
                   *(f"megatron-bridge-moe {release} {row}" for release in ("26.06.01", "26.08")
                     for row in ("deepseek-v3 mxfp8 256xgb200", "gpt-oss-120b mxfp8 64xgb200",
                                 "qwen3-30b-a3b mxfp8 8xgb200", "qwen3-235b-a22b mxfp8 256xgb200"))}

# GPT-OSS 120B's recompute_modules ['layernorm', 'moe_act'] on its GB200, B200 and H100 BF16 configs
# (V2 replaces V1's, keeping them) at every Megatron-Bridge tag v0.2.0 (2025-11-26) to v0.4.2 and at
# 21d102f5e (26.04.01): whichever tag a 25.11-26.04.01 container holds, the same.
GPT_OSS_RECOMPUTE_RELEASES = ("25.11", "26.02", "26.02.01", "26.04", "26.04.01")


@pytest.mark.parametrize("run_id, release, heading, header, line", PAGE_ROWS, ids=[r[0] for r in PAGE_ROWS])
def test_each_moe_row_is_expressed_as_the_page_prints_it(run_id, release, heading, header, line):
    runs, source = _runs()
    run, cells = runs[run_id], _cells(header, line, heading)
    assert run_id.split()[1] == release
    assert run["model"] == MODELS[cells["Model"].split("(")[0].strip()]
    assert run.get("hardware", source["hardware"]) == SYSTEMS[cells["System"]]
    assert run["published_tokens_per_s_per_gpu"] == int(cells["Tokens / sec / GPU"])
    assert run["published_model_tflops_per_gpu"] == int(cells["Model TFLOP / sec / GPU"])
    vp = 1 if cells["VP"] == "n/a" else int(cells["VP"])
    assert (run["gpus"], run["tp"], run["pp"], run.get("cp", 1), run.get("virtual_stages", 1), run["ep"]) == \
        (int(cells["#-GPUs"]), int(cells["TP"]), int(cells["PP"]), int(cells["CP"]), vp, int(cells["EP"]))
    assert run["tp"] * run["pp"] * run.get("cp", 1) * run["dp"] == run["gpus"]
    assert (run["micro_batch"], run["global_batch"], run["seq_len"]) == \
        (int(cells["MBS"]), int(cells["GBS"]), int(cells["Sequence Length"]))
    assert cells.get("FSDP", "0") == "0" and "framework" not in run  # DDP + distributed optimizer
    assert run.get("fp8") == PRECISIONS[cells.get("Precision")]
    assert run.get("schedule", "1f1b") == ("interleaved" if vp > 1 else "1f1b")
    # overlap_p2p_comm wherever pp > 1 and vp > 1 (Megatron-Bridge training/comm_overlap.py), and the
    # EP all-to-all overlap where a recipe read sets moe_a2a_overlap True (MOE_A2A_OVERLAP)
    stated = {**({"pp": 1.0} if run["pp"] > 1 and vp > 1 else {}), **({"ep": 1.0} if run_id in MOE_A2A_OVERLAP else {})}
    assert run.get("overlap") == (stated or None)
    gpt_oss_bf16 = run["model"] == "gpt-oss-120b" and "fp8" not in run and release in GPT_OSS_RECOMPUTE_RELEASES
    # DeepSeek-V3's recompute_modules ['mla_up_proj'] on GB200 and B200: 97ad8cc6f's configs (25.11, every
    # precision) and v0.1.0rc4's run_script.py for the token-drop runs (25.09); its H100 run's
    # ['mla_up_proj', 'mlp'] (the same script) as mla-up-proj, 'mlp' (the 3 dense layers' MLP) not modelled;
    # 63b08b397's DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_FP8_MX_V2 (26.06); deepseek_v3_pretrain_256gpu_gb200_fp8mx_config
    # at 381d0b825 (26.06.01) and 4ab94dfad (26.08); the B200 V2 configs at v0.3.0 (26.02), v0.3.1 and
    # cfeddcd94 (26.02.01), v0.4.0 (26.04) and 21d102f5e (26.04.01, B200_FP8_MX_V2 ['mla_up_proj', 'mlp']),
    # and the GB200 V2 configs at v0.3.0, v0.3.1 and cfeddcd94; 26.04's and 26.04.01's GB200 FP8_MX_V2
    # recompute ['mlp'] alone (the 3 dense layers' MLP): not modelled, none
    deepseek = run["model"] == "deepseek-v3" and (release in ("25.11", "25.09", "26.02", "26.02.01")
                                                  or release in ("26.06", "26.06.01", "26.08") and run["hardware"] == "gb200"
                                                  or release in ("26.04", "26.04.01") and run["hardware"] == "b200")
    # Nemotron 3 Super's B200 FP8_MX_V1 = BASE_NEMOTRON_3_SUPER_CONFIG_B200, recompute_modules ['moe_act',
    # 'layernorm'] (scripts/performance/configs/nemotronh/nemotron_3_workload_base_configs.py at 21d102f5e
    # and v0.4.0); its NVFP4_V1 None, its GB200 configs none
    super_b200 = run["model"] == "nemotron-3-super" and run["hardware"] == "b200" and run.get("fp8") == "mxfp8"
    # Nemotron 3 Nano's H100 FP8_CS_V1, recompute_modules ['moe', 'layernorm', 'core_attn', 'moe_act'] (the
    # whole MoE layer, its norm and the attention core: layernorm-moe-core-attn) at v0.3.1 and cfeddcd94
    # (nemotron_3_nano_workload_base_configs.py), v0.4.0, 21d102f5e and 63b08b397 (nemotron_3_workload_base_configs.py);
    # its Blackwell configs (BASE_NEMOTRON_3_NANO_CONFIG, no recompute_modules) none
    nano_h100 = run["model"] == "nemotron-3-nano" and run.get("hardware") == "h100-sxm"
    assert run.get("recompute") == ("layernorm-moe-act" if gpt_oss_bf16 or super_b200
                                    else "mla-up-proj" if deepseek
                                    else "layernorm-moe-core-attn" if nano_h100 else None)
    # Every Nemotron 3 Super and Ultra recipe read (v0.4.0, 21d102f5e, 067f987df) states
    # expert_tensor_parallel_size 1 and the hybridep flex dispatcher
    if run["model"] in ("nemotron-3-super", "nemotron-3-ultra"):
        assert (run.get("etp"), run.get("ep_dispatcher")) == (1 if run["tp"] > 1 else None, "hybridep")
    # DeepSeek-V3's recipe layout_map (recipes/deepseek/deepseek_v3.py at 97ad8cc6f, v0.3.0, v0.3.1,
    # cfeddcd94, v0.4.0, 21d102f5e, 63b08b397; recipes/deepseek/h100/deepseek_v3.py at 381d0b825 and
    # 4ab94dfad), applied on every release's rows: (PP, VP) (4, 4) and (16, 1) give the embedding + 4
    # layers, 14 chunks of 4, then 1 + the MTP module + the loss, and so does (8, 2), 26.04.01's B200 row
    # (21d102f5e's deepseek_v3_pretrain_config_b200 calls the map; its config's pp_layout "Et*4|(t*4|)*14tmL"
    # says the same)
    if run["model"] == "deepseek-v3" and (run["pp"], vp) in ((4, 4), (16, 1), (8, 2)):
        assert run["stage_layers"] == [4] * 15 + [1] and sum(run["stage_layers"]) == 61
        assert len(run["stage_layers"]) == run["pp"] * vp
    else:
        assert run["model"] != "deepseek-v3" or run_id in (
            "megatron-bridge-moe 25.09 deepseek-v3 fp8 1024xh100", "megatron-bridge-moe 25.11 deepseek-v3 fp8-mx 256xgb200")
    # The flex dispatcher's backend where the release's recipe was read for it (the source's 'assumed'):
    # Nemotron 3 Nano's recipe sets moe_token_dispatcher_type 'flex' and its perf configs the backend
    # 'hybridep' (BASE_NEMOTRON_3_NANO_CONFIG at v0.3.1, cfeddcd94, v0.4.0, 21d102f5e, 63b08b397;
    # nemotron_3_nano_pretrain_8gpu_gb200_fp8mx_config at 381d0b825): every Nano row
    if run["model"] == "nemotron-3-nano" or (run["model"] == "deepseek-v3" and release in ("26.02", "26.02.01")):
        assert run["ep_dispatcher"] == "hybridep"
    # 25.09's H100 run: run_script.py's pipeline_model_parallel_layout "Et|(tt|)*30mL" at PP 8 VP 4 (32
    # chunks): the embedding and a layer, 30 chunks of 2, the MTP module and the loss with no layer
    if run_id == "megatron-bridge-moe 25.09 deepseek-v3 fp8 1024xh100":
        assert run["stage_layers"] == [1] + [2] * 30 + [0] and len(run["stage_layers"]) == run["pp"] * vp == 32
        assert run["ep_dispatcher"] == "deepep"  # enable_deepep on H100: the flex dispatcher with DeepEP


def test_why_the_other_moe_rows_are_not_expressible():
    """Every Megatron-Bridge MoE row builds since session 24: DeepSeek-V4 Flash's and Nemotron 3.5
    Lightning's with their presets, and Nemotron 3 Ultra's Megatron-FSDP (its 26.08 GB200 recipe,
    _apply_nemotron_3_ultra_fsdp_hsdp: data_parallel_sharding_strategy 'optim_grads_params' with HFSDP
    over 4 NVLink domains) as megatron --zero 3 with dp_shard 32 (costmodel/layout/megatron_fsdp.py).
    A refusal would be the model's own sentence. DeepSeek-V3's 25.09 H100 row, TP 2 beside EP 64 folded, is expressible: its
    shared expert (tests/test_parallel_folding.py) and its latent attention under sequence
    parallelism (tests/test_mla_sequence_parallel.py). The other TP 2 rows, Qwen3 235B on H100 and
    25.09's on GB200 and Nemotron 3 Super's, run folded: etp 1, as every recipe states it."""
    runs, source = _runs()
    reasons = {run_id: _reason(runs[run_id], source) for run_id, *_ in PAGE_ROWS}
    kinds: dict[str, list[str]] = {"expressible": [], "preset": []}
    for run_id, reason in reasons.items():
        kind = "expressible" if reason is None else "preset" if "unknown model" in reason else reason
        kinds.setdefault(kind, []).append(run_id)
    assert sorted(kinds) == ["expressible", "preset"] and kinds["preset"] == []
    ultra = runs["megatron-bridge-moe 26.08 nemotron-3-ultra mxfp8 256xgb200"]
    assert (ultra["zero"], ultra["dp_shard"], ultra["dp"]) == (3, 32, 128)
    # 103 that build (Nemotron 3 Nano's 10, Nemotron 3.5 Lightning's 1, Super's 14, Ultra's 1,
    # DeepSeek-V4 Flash's 1 and DeepSeek-V3's 25.09 H100 row among them), 55 of them MXFP8 / FP8-MX
    # (--fp8 mxfp8), Super's 7 NVFP4
    assert len(kinds["expressible"]) == 103
    assert sum(runs[i]["model"] == "nemotron-3.5-lightning" for i in kinds["expressible"]) == 1
    assert sum(runs[i]["model"] == "deepseek-v4-flash" for i in kinds["expressible"]) == 1
    assert sum(runs[i]["model"] == "nemotron-3-nano" for i in kinds["expressible"]) == 10
    assert sum(runs[i]["model"] == "nemotron-3-super" for i in kinds["expressible"]) == 14
    recipes = [runs[i].get("fp8") for i in kinds["expressible"]]
    assert set(recipes) == {None, "current", "mxfp8", "nvfp4"} and recipes.count("mxfp8") == 55
    assert all(runs[i]["model"] == "nemotron-3-super" for i in kinds["expressible"] if runs[i].get("fp8") == "nvfp4")
    assert recipes.count("nvfp4") == 7
    folded = [i for i in kinds["expressible"] if runs[i]["tp"] > 1]
    assert len(folded) == 21 and all(runs[i]["etp"] == 1 for i in folded)
    assert [i for i in folded if runs[i]["model"] not in ("qwen3-235b-a22b", "nemotron-3-super")] == [
        "megatron-bridge-moe 26.08 nemotron-3-ultra mxfp8 256xgb200", "megatron-bridge-moe 25.09 deepseek-v3 fp8 1024xh100"]


@pytest.mark.parametrize("run_id", ["megatron-bridge-moe 26.04.01 qwen3-235b-a22b fp8 256xh100",
                                    "megatron-bridge-moe 26.04.01 qwen3-30b-a3b fp8 16xh100",
                                    "megatron-bridge-moe 26.04.01 gpt-oss-120b bf16 64xh100",
                                    "megatron-bridge-moe 25.11 qwen3-235b-a22b bf16 256xgb200"])
def test_an_expressible_moe_row_builds_the_recipes_layout(run_id):
    """The setup: Megatron-Core with the distributed optimizer, EP drawn from dp (each rank E / ep
    whole experts, the expert-data-parallel group dp / ep), or under parallel folding (TP 2, etp 1,
    SP) from tp x dp (the 235B H100 row: 2 x 16 / 32, one rank), the row's micro-batches, cuDNN
    attention."""
    runs, source = _runs()
    run = runs[run_id]
    estimate, hardware, options = train_setup(run, source)
    layout, workload = estimate.layout, estimate.workload
    assert (layout.tp, layout.pp, layout.dp, layout.ep, layout.virtual_stages) == \
        (run["tp"], run["pp"], run["dp"], run["ep"], run.get("virtual_stages", 1))
    assert (layout.framework, layout.zero, layout.fp8) == ("megatron", 1, run.get("fp8"))
    assert workload.batch * layout.microbatches * layout.dp == run["global_batch"]
    assert (workload.seq_len, workload.recompute) == (4096, run.get("recompute", "none"))
    assert hardware.name == run["hardware"] and workload.recompute == ("layernorm-moe-act" if "gpt-oss" in run_id else "none")
    experts = estimate.experts()
    assert experts["experts_per_rank"] * run["ep"] == estimate.cfg.n_experts
    assert experts["expert_data_parallel"] == run["tp"] * run["dp"] // run["ep"]
    assert layout.folded == (run["tp"] > 1) == layout.sp and layout.etp == run.get("etp")
    assert options["attention_kernel"] == "cudnn"


#: docs/checked.md's command for the 26.04.01 Qwen3 30B-A3B H100 row (its recipe's FP8_CS_V1).
QWEN3_30B_COMMAND = ("simulate --train --model qwen3-30b-a3b --hardware h100-sxm --seq-len 4096 --batch 1 "
                     "--dtype bf16 --attention flash --impl megatron --framework megatron --zero 1 --dp 16 "
                     "--ep 16 --global-batch 1024 --fp8 current --ep-dispatcher hybridep --grad-reduce-dtype bf16 "
                     "--fp8-param-gather --overlap-grad-reduce --json")


def test_the_documented_command_is_the_row_with_flash_attention(capsys):
    """The command a user types for the row is the row's setup but for the attention kernel (the
    row's cuDNN fused attention has no flag): the same step to the token under the kernel model."""
    import json

    import cli
    from costmodel.layout.timing import step_time

    runs, source = _runs()
    estimate, hardware, options = train_setup(runs["megatron-bridge-moe 26.04.01 qwen3-30b-a3b fp8 16xh100"], source)
    assert options.pop("attention_kernel") == "cudnn"
    ours = step_time(estimate, hardware, time_model="kernels", **options).step()["tokens_per_second"]
    assert cli.main(QWEN3_30B_COMMAND.split()) == 0
    typed = json.loads(capsys.readouterr().out)["step"]["tokens_per_second"]
    assert typed == pytest.approx(ours, rel=1e-12)


def test_tp_beside_ep_is_refused_for_the_folding_before_ep_against_dp(capsys):
    """Megatron-Bridge's Qwen3 235B H100 layout in small: TP 2 x DP 2 with EP 4, where Megatron-Core
    draws the EP group from tp x dp (parallel folding). Without --etp 1 the refusal names the tensor
    parallelism and parallel folding, not ep > dp, which would send the user to the wrong fix."""
    import cli

    assert cli.main(["estimate", "--model", "mixtral-8x7b", "--dp", "2", "--ep", "4", "--tp", "2"]) == 2
    err = capsys.readouterr().err
    # (wt41_etp: the refusal names both of Megatron-Core's --etp choices, folding's 1 and tp's 2)
    assert len(err.strip().splitlines()) == 1 and "needs --etp 1 with --sp" in err and "parallel folding" in err \
        and "--etp 2 with them" in err and "must divide dp" not in err


def test_the_25_09_h100_deepseek_row_runs_its_release_scripts_settings():
    """25.09's DeepSeek-V3 H100 row as the release branch's run_script.py sets it (a28844195, the same
    at v0.1.0rc4): DeepEP's flex dispatcher, the EP all-to-all overlapped (A2A_1F1B), mla_up_proj
    recomputed and the layout 'Et|(tt|)*30mL' over PP 8 x VP 4, so pipeline rank 0 holds the chunks
    0, 8, 16, 24 (1 + 2 + 2 + 2 layers) and rank 7 the chunks 7, 15, 23, 31 (the last with no layer).
    The busiest rank is pipeline rank 2 (11 micro-batches in flight on its first chunk); its 'mlp'
    recomputation (the dense layers, on ranks 0 and 1) is not modelled and would not free memory
    there. The recipe's bf16 gradient reduce (mixed_precision grad_reduce_in_fp32 false in
    scripts/performance/configs/deepseek/deepseek_v3_llm_pretrain.yaml at a28844195; the row's
    grad_reduce_dtype) keeps its gradient buffer in bf16 beside the fp32 copy of its shard, and the
    recipe's precision-aware optimizer its moments in bf16 (recipes/deepseek/deepseek_v3.py
    pretrain_config at a28844195 lines 240-244, exp_avg_dtype and exp_avg_sq_dtype bf16; the row's
    precision_aware_optimizer 'bf16-moments'): 8 bytes a shard parameter in place of 12, 80,863,747,072
    bytes, under the H100's training memory (83,744,816,128 with fp32 moments, 85,682,215,936 with
    fp32 gradients too, over it), with bf16 weights; its FP8 parameters (the recipe's fp8_param_gather)
    take 2,055,208,960 bytes off: 78,808,538,112."""
    runs, source = _runs()
    estimate, hardware, options = train_setup(runs["megatron-bridge-moe 25.09 deepseek-v3 fp8 1024xh100"], source)
    assert (estimate.layout.ep_dispatcher, estimate.workload.recompute) == ("deepep", "mla-up-proj")
    assert (options["overlap"].ep, options["overlap"].pp) == (1.0, 1.0)
    parallel = estimate.to_dict()
    stages = parallel["stages"]
    assert [s["virtual_stage_layers"] for s in (stages[0], stages[1], stages[7])] == [[1, 2, 2, 2], [2, 2, 2, 2],
                                                                                        [2, 2, 2, 0]]
    assert [s["layers"] for s in stages] == [7, 8, 8, 8, 8, 8, 8, 6]
    assert parallel["per_rank"]["stage"] == 2 and stages[2]["micro_batches_in_flight"][0] == 11
    # its FP8 parameters (the recipe's fp8_param_gather): 2,055,208,960 of the rank's weights one byte each
    assert estimate.fp8_parameter_saving(estimate.stages[2]) == 2_055_208_960
    assert parallel["per_rank"]["total"] == 80_863_747_072 - 2_055_208_960 < hardware.training_memory_bytes
    assert parallel["per_rank"]["optimizer"] == 8 * 720_267_264  # 12 x 720,267,264 with fp32 moments
    assert parallel["per_rank"]["gradients"] == 7_699_537_920  # 9,636,937,728 with fp32 gradients
