"""Session 38's unseen quantized-weight decoding rows (costmodel/published_runs.json sources "oobabooga-quant-2023",
"vllm-pr26051-rtn", "autoawq-pr320" and "autoawq-pr365"), typed before any of their rows was computed (48087779,
8b010c20): each row's figure as its source prints it, the setup the model reads, the rows the model cannot express
and why, and the kernel model's ratios as first computed (ours over published), the figures validate/FINDINGS.md
quotes ("Unseen quantized decoding rows (wt38_unseend2, session 38)"). The four vLLM RTN Int8 rows were refused at
the first computation (their typed compressed-tensors layout holds int8 per channel only) and amended to the gptq
layout before any figure of theirs was seen (the source's "amended"): FIRST_STATS leaves them out, NOW_STATS holds
them. The two AutoAWQ rows of oobabooga's page were amended to eager attention after their first figures (their own
'assumed' text types them as autoawq-v0.1.6's rows, whose attention is eager): MOVED."""

from __future__ import annotations

import pytest

from tests.unseen_rows import (assert_first_computed, assert_summaries, decode_groups, decode_setup_of, ratios,
                               runs_of, source_of)

SOURCES = ("oobabooga-quant-2023", "vllm-pr26051-rtn", "autoawq-pr320", "autoawq-pr365")

# oobabooga/oobabooga.github.io blog/posts/gptq-awq-exl2-llamacpp/index.html (ef07cfe1, the update bc761989):
# llama-2-13b on an RTX 3090, 3,200 prompt tokens, 800 new: id tail -> (Evaluation time (800 tokens), Tokens/second)
OOBABOOGA = {"exl2 4.900b": (15.37, 52.05), "exl2 4.650b": (14.17, 56.46), "awq g32 autoawq": (20.27, 39.47),
             "q4_k_m llama.cpp": (25.95, 30.83), "gptq g32 exllama": (18.85, 42.44), "exl2 4.400b": (14.12, 56.66),
             "q4_k_s llama.cpp": (22.66, 35.30), "awq g128 autoawq": (19.70, 40.61), "exl2 4.250b": (14.06, 56.90),
             "gptq g128 exllama": (15.41, 51.91), "nf4 load_in_4bit transformers": (34.70, 23.05),
             "exl2 4.125b": (14.13, 56.62), "exl2 4.000b": (14.09, 56.78), "gptq g128 exllamav2": (12.48, 64.10)}
# vllm-project/vllm PR #26051's Llama3.1-8B table on one H100 (input 256, output 32): seconds at batch 1, 4, 8, 16
RTN = {"old rtn int8": (0.458, 0.490, 0.516, 0.570), "new rtn int8": (0.174, 0.222, 0.285, 0.402),
       "old rtn int4": (0.720, 0.761, 0.794, 0.847), "new rtn int4": (0.139, 0.180, 0.230, 0.331)}
# casper-hansen/AutoAWQ PR #320 (A100-SXM4-80GB, vicuna-7b-v1.5 AWQ GEMM) and PR #365 (RTX 4090, Mistral 7B
# Instruct, the new GEMVFast kernels): prefill = decode length -> Decode tokens/s at batch 1
PR320 = {32: 93.0104, 64: 93.7882, 128: 93.2005, 256: 93.2399, 512: 92.5384, 1024: 92.893, 2048: 76.1673,
         4096: 77.43}
PR365 = {32: 181.792, 64: 184.787, 128: 183.334, 256: 178.064, 512: 168.751, 1024: 152.792, 2048: 128.262}


def test_the_four_sources_hold_45_rows():
    assert [len(runs_of(s)) for s in SOURCES] == [14, 16, 8, 7]


def test_the_oobabooga_rows_are_its_table():
    rows = {r["id"]: r for r in runs_of("oobabooga-quant-2023")}
    assert set(rows) == {f"oobabooga-quant-2023 llama2-13b {tail} rtx3090" for tail in OOBABOOGA}
    for tail, (seconds, figure) in OOBABOOGA.items():
        run = rows[f"oobabooga-quant-2023 llama2-13b {tail} rtx3090"]
        assert (run["published_latency_s"], run["published_tokens_per_s"]) == (seconds, figure)
        assert round(800 / seconds, 1) == round(figure, 1)  # 'tokens/second = 800 / (evaluation time)'
        if tail.startswith("exl2"):
            continue
        cfg, hardware, settings, quantization = decode_setup_of(run)
        assert (cfg.name, hardware.name, settings["prompt"], settings["gen"], settings["batch"]) == \
            ("llama2-13b", "rtx-3090", 3200, 800, 1)
        assert settings["cuda_graphs"] is False and settings["dtype"] == "fp16"
    setup = {tail: decode_setup_of(rows[f"oobabooga-quant-2023 llama2-13b {tail} rtx3090"]) for tail in OOBABOOGA
             if not tail.startswith("exl2")}
    assert setup["gptq g32 exllama"][3] == {"weight_dtype": "int4", "weight_group": 32, "quant_layout": "gptq-exllama"}
    assert setup["gptq g128 exllamav2"][3] == {"weight_dtype": "int4", "weight_group": 128}  # the default gptq layout
    assert setup["awq g128 autoawq"][3]["quant_layout"] == "awq-gemm"
    assert (setup["awq g128 autoawq"][2]["decode_kernel"], setup["awq g128 autoawq"][2]["attention"]) == \
        ("trtllm-mmha", "eager")  # amended: as autoawq-v0.1.6 (flash-attention 'used by ExLlamav2 only')
    nf4 = setup["nf4 load_in_4bit transformers"]  # bitsandbytes 0.41.1 under transformers 4.34's generate
    assert nf4[3] == {"weight_dtype": "nf4", "weight_group": 64}
    assert (nf4[2]["implementation"], nf4[2]["kv_cache"], nf4[2]["attention"]) == ("transformers", "dynamic", "eager")


def test_the_vllm_and_autoawq_rows_are_their_tables():
    rows = {r["id"]: r for r in runs_of("vllm-pr26051-rtn")}
    for name, latencies in RTN.items():
        for batch, latency in zip((1, 4, 8, 16), latencies):
            run = rows[f"vllm-pr26051-rtn llama3.1-8b {name} batch {batch} h100"]
            assert (run["published_latency_s"], run["published_tokens_per_s"]) == (latency, round(32 / latency, 4))
            assert (run["batch"], run["weight_dtype"], run["weight_group"]) == (batch, name[-4:], 128)
    new = decode_setup_of(rows["vllm-pr26051-rtn llama3.1-8b new rtn int4 batch 16 h100"])
    assert (new[0].name, new[1].name, new[2]["prompt"], new[2]["gen"], new[2]["batch"], new[2]["cuda_graphs"]) == \
        ("llama3.1-8b", "h100-sxm", 256, 32, 16, True)
    assert new[3]["quant_layout"] == "compressed-tensors" and source_of("vllm-pr26051-rtn")["vllm_engine"] == "v1"
    for batch in (1, 4, 8, 16):  # amended: compressed-tensors holds int8 per channel only; gptq holds it in groups
        run = rows[f"vllm-pr26051-rtn llama3.1-8b new rtn int8 batch {batch} h100"]
        assert (run["quant_layout"], run["quant_layout_first"]) == ("gptq", "compressed-tensors")
    # wt43_eagerops: autoawq-pr320's code amended to autoawq-fused (tensorrt-llm's cache and kernels, its calls counted)
    for source, table, hardware, preset, layout, code in (
            ("autoawq-pr320", PR320, "a100-80gb", "llama2-7b", "awq-gemm", "autoawq-fused"),
            ("autoawq-pr365", PR365, "rtx-4090", "mistral-7b-v0.2", "awq-gemv", "tensorrt-llm")):
        runs = runs_of(source)
        assert [(r["prompt"], r["published_tokens_per_s"]) for r in runs] == list(table.items())
        for run in runs:
            cfg, hw, settings, quantization = decode_setup_of(run)
            assert (cfg.name, hw.name, settings["gen"], settings["batch"], settings["implementation"]) == \
                (preset, hardware, run["prompt"], 1, code)
            assert quantization == {"weight_dtype": "int4", "weight_group": 128, "quant_layout": layout}


def test_the_rows_the_model_could_not_express_are_expressed(published_tables):
    """EXL2's mixed bit widths and vLLM's pre-PR RTN (a torch dequantization a forward) were no format or layout here,
    and `published` marked those 14 rows not expressible (`unknown weight_dtype 'exl2'`, `unknown quant_layout
    'vllm-rtn-torch'`). wt40_expressible made both expressible from their code (--weight-dtype exl2 --weight-bits,
    --quant-layout vllm-rtn-torch: tests/test_expressible_exl2_rtn.py pins their first figures): none is refused now."""
    refused = {}
    ratios(("oobabooga-quant-2023", "vllm-pr26051-rtn"), refused=refused, tables=published_tables)
    assert refused == {}


# As first computed (kernel model, before any change to the model): id -> ours / published
FIRST = {
    "oobabooga-quant-2023 llama2-13b q4_k_m llama.cpp rtx3090": 1.972,
    "oobabooga-quant-2023 llama2-13b awq g128 autoawq rtx3090": 1.601,
    "oobabooga-quant-2023 llama2-13b gptq g128 exllama rtx3090": 1.253,
    "oobabooga-quant-2023 llama2-13b gptq g128 exllamav2 rtx3090": 1.015,
    "oobabooga-quant-2023 llama2-13b nf4 load_in_4bit transformers rtx3090": 0.906,
    "vllm-pr26051-rtn llama3.1-8b new rtn int4 batch 1 h100": 1.221,
    "vllm-pr26051-rtn llama3.1-8b new rtn int4 batch 16 h100": 1.625,
    "autoawq-pr320 vicuna llama2-7b gemm batch 1 128/128 a100": 1.435,
    "autoawq-pr320 vicuna llama2-7b gemm batch 1 2048/2048 a100": 1.552,
    "autoawq-pr365 mistral-7b-instruct gemv-fast batch 1 128/128 rtx4090": 0.83,
    "autoawq-pr365 mistral-7b-instruct gemv-fast batch 1 2048/2048 rtx4090": 0.917,
}
# the two AutoAWQ rows of oobabooga's page, amended to eager attention (their 'assumed' text's autoawq-v0.1.6 typing;
# the page: flash-attention 'used by ExLlamav2 only'): g32 1.541 -> 1.499, g128 1.601 -> 1.556
# wt39_rowcheckd: autoawq-pr320's rows amended, AutoAWQ's fused cache a window of n_generate keys (its source's
# "amended": from_quantized(max_new_tokens=n_generate) and prepare_cache's roll at 34085ed), config_changes
# sliding_window: 128/128 1.435 -> 1.439, 2048/2048 1.552 -> 1.619
# wt43_eagerops: autoawq-pr320's host calls counted (kernel_facts.json eager_step_ops autoawq-fused) in place of the
# per-block launch term: 128/128 1.439 -> 1.420, 2048/2048 1.619 -> 1.738 (the launches gone, the kernels longer than the host)
MOVED = {"oobabooga-quant-2023 llama2-13b awq g128 autoawq rtx3090": 1.556,
         "autoawq-pr320 vicuna llama2-7b gemm batch 1 128/128 a100": 1.42,
         "autoawq-pr320 vicuna llama2-7b gemm batch 1 2048/2048 a100": 1.738}
# the amended Int8 rows, first computed after the amendment (refused before it)
AMENDED = {"vllm-pr26051-rtn llama3.1-8b new rtn int8 batch 1 h100": 1.36,
           "vllm-pr26051-rtn llama3.1-8b new rtn int8 batch 16 h100": 1.843}


#: the 14 rows the model could not express until wt40_expressible (EXL2's and the pre-PR RTN's; their first figures:
#: tests/test_expressible_exl2_rtn.py): computed since, left out of this session's summaries below
EXPRESSED_LATER = tuple(f"oobabooga-quant-2023 llama2-13b {t} rtx3090" for t in OOBABOOGA if "exl2" in t) + tuple(
    f"vllm-pr26051-rtn llama3.1-8b old rtn {d} batch {b} h100" for d in ("int8", "int4") for b in (1, 4, 8, 16))


def test_first_computed_ratios_of_a_few_rows(published_tables):
    assert_first_computed(SOURCES, {**FIRST, **AMENDED}, MOVED, refused=(), tables=published_tables)  # wt40_expressible: none refused


# (rows, median error %, within 0.75-1.33x, within 10%, within 5%) and (lowest, highest): the first computation
# (31 of 45 rows expressible less the 4 Int8 rows it refused)
FIRST_STATS = {"all": ((27, 36.6, 11, 3, 1), (0.83, 1.972)),
               "oobabooga-quant-2023": ((8, 48.7, 3, 2, 1), (0.906, 1.972)),  # 46.6 with eager AutoAWQ rows
               "vllm-pr26051-rtn": ((4, 42.1, 1, 0, 0), (1.221, 1.625)),
               "autoawq-pr320": ((8, 42.7, 0, 0, 0), (1.357, 1.552)),
               "autoawq-pr365": ((7, 15.0, 7, 1, 0), (0.83, 0.917))}
# with the amended Int8 rows (1.36-1.84) and the two AutoAWQ rows under eager attention; wt39_rowcheckd's window on
# autoawq-pr320 (its eight rows 1.357-1.552 -> 1.387-1.619, median error 42.7% -> 43.7%; all 40.8% -> 43.0%)
# wt43_eagerops: autoawq-pr320's host calls counted: its rows 1.387-1.619 -> 1.411-1.738, median error 43.7% -> 42.4%;
# all 43.0% -> 42.0%
NOW_STATS = {**FIRST_STATS, "all": ((31, 42.0, 11, 3, 1), (0.83, 1.972)),
             "oobabooga-quant-2023": ((8, 46.6, 3, 2, 1), (0.906, 1.972)),
             "vllm-pr26051-rtn": ((8, 49.8, 1, 0, 0), (1.221, 1.843)),
             "autoawq-pr320": ((8, 42.4, 0, 0, 0), (1.411, 1.738))}
# the 27 rows of the first computation as they read now: the AutoAWQ pair of oobabooga's page amended (eager), and
# autoawq-pr320's window (36.6% -> 42.5%: the median row is one of its eight)
# (wt43_eagerops: all 42.5% -> 42.0%, autoawq-pr320's counted host calls)
FIRST_ROWS_NOW = {**FIRST_STATS, "all": ((27, 42.0, 11, 3, 1), (0.83, 1.972)),
                  "oobabooga-quant-2023": NOW_STATS["oobabooga-quant-2023"], "autoawq-pr320": NOW_STATS["autoawq-pr320"]}


@pytest.mark.slow  # the 45 rows computed (31 expressible)
def test_the_rows_as_first_computed(published_tables):
    computed = ratios(SOURCES, refused={}, tables=published_tables)
    every = {k: v for k, v in computed.items() if k not in EXPRESSED_LATER}  # this session's 31 (wt40: +14)
    assert len(computed) == 45 and len(every) == 31
    assert_summaries(every, decode_groups(every, SOURCES), NOW_STATS)
    first = {k: v for k, v in every.items() if " new rtn int8 " not in k}
    assert_summaries(first, decode_groups(first, SOURCES), FIRST_ROWS_NOW)  # the 27 first rows, as amended since
    assert sum(v > 1 for v in every.values()) == 23  # too fast but the NF4 row and AutoAWQ's GEMVFast rows
    # the model prices every int4 kernel on the RTX 3090 alike (one rate a byte): the six int4 engines' 30.8-64.1
    # tokens/s are 60.8 (group 32) or 65.0 (group 128) in ours; only ExLlamaV2 reaches it
    ooba = {k: v for k, v in every.items() if k.startswith("oobabooga")}
    assert min(ooba, key=ooba.get) == "oobabooga-quant-2023 llama2-13b nf4 load_in_4bit transformers rtx3090"
    assert every["oobabooga-quant-2023 llama2-13b gptq g128 exllamav2 rtx3090"] < 1.05
    # vLLM's RTN Marlin rows run further from ours as the batch grows (the 16 x 256-token prefill in the latency)
    for dtype in ("int8", "int4"):
        by_batch = [every[f"vllm-pr26051-rtn llama3.1-8b new rtn {dtype} batch {b} h100"] for b in (1, 4, 8, 16)]
        assert by_batch == sorted(by_batch)
    # AutoAWQ's benchmark: its A100 GEMM rows too fast (1.36-1.55; 1.41-1.74 since wt43_eagerops), its RTX 4090
    # GEMVFast rows too slow (0.83-0.92)
    assert all(v > 1.35 for k, v in every.items() if k.startswith("autoawq-pr320"))
    assert all(v < 0.92 for k, v in every.items() if k.startswith("autoawq-pr365"))


def test_a_row_that_starts_being_refused_fails_the_pin(monkeypatch):
    """Review (wt38_review): assert_first_computed passed refused={} and dropped it, so a row outside `first` that
    the model started refusing left every fast pin green (15 sessions' tests call it). Now the refused rows must be
    the ones stated: one AutoAWQ GEMVFast row refused here (decode_run patched to raise for it) fails the pin."""
    import tests.rows_summary
    from costmodel.config import ConfigError

    computed = tests.rows_summary.decode_run
    gone = "autoawq-pr365 mistral-7b-instruct gemv-fast batch 1 64/64 rtx4090"

    def decode_run(run, source, time_model):
        if run["id"] == gone:
            raise ConfigError(f"{gone}: refused for this test")
        return computed(run, source, time_model)

    assert gone in {r["id"] for r in runs_of("autoawq-pr365")} and gone not in FIRST
    monkeypatch.setattr(tests.rows_summary, "decode_run", decode_run)
    with pytest.raises(AssertionError):
        assert_first_computed(("autoawq-pr365",), {}, {})
