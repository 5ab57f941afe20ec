"""Session 43's unseen decoding rows (costmodel/published_runs.json sources "exllamav2-readme-61e3092",
"optimum-benchmark-llamas", "optimum-benchmark-vicunas" and "optimum-benchmark-mistrals"), typed before any of their
rows was computed (dd562f66: the first two; e3d2d334: the other two): each row's figure as its page prints it, the
setup the model reads, and the kernel model's ratios as first computed (ours over published), the error estimate
validate/FINDINGS.md quotes ("Unseen decoding rows, session 43 (wt43_unseend, session 43)"). One change followed, a
gap the int4 rows under transformers 4.34/4.35 showed: kernel_facts.json eager_step_ops "quantized_linears" names
every counted transformers release (its own rule: AutoGPTQ's and AutoAWQ's modules issue their host calls whatever
the release around them), so those steps keep the host floor; MOVED and NOW_STATS hold the figures after it."""

from __future__ import annotations

import pytest

from tests.unseen_rows import assert_first_computed, assert_summaries, decode_groups, decode_setup_of, ratios, runs_of

SOURCES = ("exllamav2-readme-61e3092", "optimum-benchmark-llamas", "optimum-benchmark-vicunas",
           "optimum-benchmark-mistrals")

# ExLlamaV2's README at 61e3092 ('Update benchmarks after graphs'), the 4090 column: id tag -> (preset, weights, t/s)
EXLLAMAV2 = {"llama-7b gptq g128": ("llama-7b", ("int4", 128), 205), "llama-13b gptq g128": ("llama-13b", ("int4", 128), 114),
             "llama-30b gptq g128": ("llama-30b", ("int4", 128), 48),
             "codellama-34b exl2 4.0b": ("codellama-34b", ("exl2", 4.0), 50),
             "llama2-7b exl2 3.0b": ("llama2-7b", ("exl2", 3.0), 252), "llama2-7b exl2 4.0b": ("llama2-7b", ("exl2", 4.0), 210),
             "llama2-7b exl2 5.0b": ("llama2-7b", ("exl2", 5.0), 178), "llama2-70b exl2 2.5b": ("llama2-70b", ("exl2", 2.5), 38),
             "tinyllama-1.1b exl2 3.0b": ("tinyllama-1.1b", ("exl2", 3.0), 761),
             "tinyllama-1.1b exl2 4.0b": ("tinyllama-1.1b", ("exl2", 4.0), 698)}

# optimum-benchmark's running-llamas short_report.csv at c8bbe4ef on one A100-SXM4-80GB: (preset, weights, batch) ->
# (Decode Latency s, Decode Throughput tokens/s)
OPTIMUM = {("llama2-7b", "fp16", 1): (13.2, 38.7), ("llama2-7b", "fp16", 4): (13.7, 149.0),
           ("llama2-7b", "fp16", 16): (17.1, 478.0), ("llama2-13b", "fp16", 1): (17.0, 30.1),
           ("llama2-13b", "fp16", 4): (17.6, 116.0), ("llama2-13b", "fp16", 16): (27.5, 297.0),
           ("llama-7b", "gptq", 1): (14.5, 35.2), ("llama-7b", "gptq", 4): (15.0, 136.0),
           ("llama-13b", "gptq", 1): (18.3, 27.9), ("llama-13b", "gptq", 4): (18.6, 110.0),
           ("llama-65b", "gptq", 1): (36.0, 14.2), ("llama-65b", "gptq", 4): (40.4, 50.6)}


# optimum-benchmark's running-vicunas and running-mistrals reports at 014c97e0 on one A100-SXM4-80GB: source ->
# (preset, prompt/gen) and {(weights, batch): (generate latency s, Generate Throughput tokens/s)}
GENERATE = {"optimum-benchmark-vicunas": (("llama2-7b", 128, 256),
                                          {("fp16", 1): (6.67, 38.4), ("fp16", 4): (6.69, 153.0),
                                           ("gptq-exllama", 1): (7.29, 35.1), ("awq-gemm", 1): (7.61, 33.6),
                                           ("awq-gemm", 4): (7.67, 134.0), ("awq-gemv", 1): (6.85, 37.4),
                                           ("awq-gemv", 4): (7.01, 146.0)}),
            "optimum-benchmark-mistrals": (("mistral-7b", 512, 1000),
                                           {("fp16", 1): (28.3, 35.3), ("fp16", 4): (29.2, 137.0),
                                            ("gptq-exllama", 1): (31.5, 31.7), ("gptq-exllama", 4): (36.0, 111.0),
                                            ("awq-gemm", 1): (32.1, 31.2), ("awq-gemm", 4): (32.8, 122.0)})}


def test_the_four_sources_hold_35_rows():
    assert [len(runs_of(s)) for s in SOURCES] == [10, 12, 7, 6]


def test_the_exllamav2_rows_are_the_4090_column():
    """test_inference.py -s's first window (a 1-token prompt, 128 tokens) at batch 1, the decode steps' rate, fp16,
    flash, a static cache, the tensorrt-llm code replayed from graphs (0.1.8's QAttn/QMLP graphs); GPTQ as int4 g128
    in the default layout, EXL2 at the stated bits."""
    from tests.unseen_rows import source_of

    rows = {r["id"]: r for r in runs_of("exllamav2-readme-61e3092")}
    assert source_of("exllamav2-readme-61e3092")["rate"] == "decode"
    for tag, (preset, (weights, size), rate) in EXLLAMAV2.items():
        run = rows[f"exllamav2-readme-61e3092 {tag} rtx4090"]
        assert run["published_tokens_per_s"] == rate
        cfg, hw, settings, quantization = decode_setup_of(run)
        assert (cfg.name, hw.name, run["tp"], settings["prompt"], settings["gen"], settings["batch"], settings["dtype"],
                settings["cuda_graphs"], settings["kv_cache"], settings["attention"], settings["implementation"]) == \
            (preset, "rtx-4090", 1, 1, 128, 1, "fp16", True, "static", "flash", "tensorrt-llm")
        assert quantization == ({"weight_dtype": "int4", "weight_group": size} if weights == "int4"
                                else {"weight_dtype": "exl2", "weight_bits": size})
    assert len(rows) == len(EXLLAMAV2)


def test_the_optimum_benchmark_rows_are_the_short_reports():
    """One sequence's rate = Decode Throughput / batch (batch x 511 / Decode Latency, the 511 decode steps after the
    prefill's token); 256-token prompts, 512 new tokens, fp16, eager attention, the growing cache, no graphs, under
    transformers 4.35.2 taken as the transformers-4.34 code; the GPTQ rows int4 g128 in the default layout."""
    rows = {r["id"]: r for r in runs_of("optimum-benchmark-llamas")}
    for (preset, weights, batch), (latency, throughput) in OPTIMUM.items():
        tag = "fp16" if weights == "fp16" else "gptq-exllamav2 g128"
        run = rows[f"optimum-benchmark-llamas {preset} {tag} batch {batch} 256/512 a100"]
        assert (run["published_decode_latency_s"], run["published_decode_throughput"], run["published_tokens_per_s"]) == \
            (latency, throughput, round(throughput / batch, 4))
        assert abs(batch * 511 / latency / throughput - 1) < 0.015  # the page's own definition, to its rounding
        cfg, hw, settings, quantization = decode_setup_of(run)
        assert (cfg.name, hw.name, run["tp"], settings["prompt"], settings["gen"], settings["batch"], settings["dtype"],
                settings["cuda_graphs"], settings["kv_cache"], settings["attention"], settings["implementation"]) == \
            (preset, "a100-80gb", 1, 256, 512, batch, "fp16", False, "dynamic", "eager", "transformers-4.34")
        assert quantization == ({} if weights == "fp16" else {"weight_dtype": "int4", "weight_group": 128})
    assert len(rows) == len(OPTIMUM)


def test_the_vicuna_and_mistral_rows_are_the_generate_throughputs():
    """Generate Throughput = batch x new_tokens / generate latency (the prefill and gen - 1 steps: end to end); one
    sequence's rate its batch's share; fp16, eager, dynamic, no graphs, the transformers-4.34 code; GPTQ under the
    exllama (v1) module, AWQ under AutoAWQ's GEMM or GEMV module, int4 g128."""
    from tests.unseen_rows import source_of

    for name, ((preset, prompt, gen), table) in GENERATE.items():
        assert source_of(name)["rate"] == "end_to_end"
        rows = {r["id"]: r for r in runs_of(name)}
        assert len(rows) == len(table)
        for (weights, batch), (latency, throughput) in table.items():
            tag = "fp16" if weights == "fp16" else f"{weights} g128"
            run = rows[f"{name} {preset} {tag} batch {batch} {prompt}/{gen} a100"]
            assert (run["published_latency_s"], run["published_generate_throughput"], run["published_tokens_per_s"]) == \
                (latency, throughput, round(throughput / batch, 4))
            assert abs(batch * gen / latency / throughput - 1) < 0.01  # the page's own definition, to its rounding
            cfg, hw, settings, quantization = decode_setup_of(run)
            assert (cfg.name, hw.name, settings["prompt"], settings["gen"], settings["batch"], settings["dtype"],
                    settings["cuda_graphs"], settings["kv_cache"], settings["attention"], settings["implementation"]) == \
                (preset, "a100-80gb", prompt, gen, batch, "fp16", False, "dynamic", "eager", "transformers-4.34")
            assert quantization == ({} if weights == "fp16" else
                                    {"weight_dtype": "int4", "weight_group": 128, "quant_layout": weights})


def test_int4_steps_under_every_counted_transformers_release_keep_the_host_floor():
    """kernel_facts.json eager_step_ops "quantized_linears": an int4 step under transformers 4.31-4.39's counted codes
    issues the unquantized step's ops (AutoGPTQ's exllama module one add_ more a linear: 7 linears x 32 layers = 224);
    before session 43 only transformers, 4.32, 4.46 and 4.51 were listed and 4.34's int4 step was None (no floor)."""
    from costmodel.eager_ops import step_ops

    cfg = decode_setup_of(runs_of("optimum-benchmark-vicunas")[0])[0]
    int4 = {"weight_dtype": "int4", "weight_group": 128}
    fp16 = step_ops(cfg, "transformers-4.34", "fp16", "eager", "dynamic")
    assert fp16 == 3250  # Llama 2 7B's 32 layers under transformers 4.34.1's counted eager step
    assert step_ops(cfg, "transformers-4.34", "fp16", "eager", "dynamic", {**int4, "quant_layout": "awq-gemm"}) == fp16
    assert step_ops(cfg, "transformers-4.34", "fp16", "eager", "dynamic", {**int4, "quant_layout": "gptq-exllama"}) \
        == fp16 + 224
    for release in ("transformers-4.31", "transformers-4.36", "transformers-4.39"):
        assert step_ops(cfg, release, "fp16", "eager", "dynamic", int4) == step_ops(cfg, release, "fp16", "eager",
                                                                                     "dynamic")


# As first computed (kernel model, before any change to the model): id -> ours / published
FIRST = {
    "exllamav2-readme-61e3092 llama-7b gptq g128 rtx4090": 0.916,
    "exllamav2-readme-61e3092 llama-30b gptq g128 rtx4090": 0.865,
    "exllamav2-readme-61e3092 llama2-7b exl2 3.0b rtx4090": 0.401,
    "exllamav2-readme-61e3092 llama2-7b exl2 5.0b rtx4090": 0.568,
    "exllamav2-readme-61e3092 llama2-70b exl2 2.5b rtx4090": 0.315,
    "exllamav2-readme-61e3092 tinyllama-1.1b exl2 4.0b rtx4090": 0.942,
    "optimum-benchmark-llamas llama2-7b fp16 batch 1 256/512 a100": 1.12,
    "optimum-benchmark-llamas llama2-13b fp16 batch 16 256/512 a100": 1.713,
    "optimum-benchmark-llamas llama-7b gptq-exllamav2 g128 batch 1 256/512 a100": 3.492,
    "optimum-benchmark-llamas llama-65b gptq-exllamav2 g128 batch 4 256/512 a100": 1.511,
    "optimum-benchmark-vicunas llama2-7b fp16 batch 1 128/256 a100": 1.129,
    "optimum-benchmark-vicunas llama2-7b awq-gemm g128 batch 1 128/256 a100": 3.764,
    "optimum-benchmark-vicunas llama2-7b awq-gemv g128 batch 4 128/256 a100": 1.457,
    "optimum-benchmark-mistrals mistral-7b fp16 batch 4 512/1000 a100": 1.223,
    "optimum-benchmark-mistrals mistral-7b gptq-exllama g128 batch 1 512/1000 a100": 3.786,
}
# moved by the int4 host floor under every counted transformers release (wt43_unseend, kernel_facts.json
# "quantized_linears"): the int4 rows' steps issue the counted ops, as the fp16 rows' beside them
MOVED: dict[str, float] = {
    "optimum-benchmark-llamas llama-7b gptq-exllamav2 g128 batch 1 256/512 a100": 1.231,
    "optimum-benchmark-llamas llama-65b gptq-exllamav2 g128 batch 4 256/512 a100": 1.383,
    "optimum-benchmark-vicunas llama2-7b awq-gemm g128 batch 1 128/256 a100": 1.29,
    "optimum-benchmark-vicunas llama2-7b awq-gemv g128 batch 4 128/256 a100": 1.186,
    "optimum-benchmark-mistrals mistral-7b gptq-exllama g128 batch 1 512/1000 a100": 1.243,
    # moved by EXL2's kernel on Ada (wt43_exllama, kernel_facts.json weight_only_gemv's exl2 "ada" entry): the one-row
    # product reads its stored bits at the kernel's rate, not a tensor-core tile flat in the bits
    "exllamav2-readme-61e3092 llama2-7b exl2 3.0b rtx4090": 1.089,
    "exllamav2-readme-61e3092 llama2-7b exl2 5.0b rtx4090": 0.986,
    "exllamav2-readme-61e3092 llama2-70b exl2 2.5b rtx4090": 0.925,
    "exllamav2-readme-61e3092 tinyllama-1.1b exl2 4.0b rtx4090": 1.524,
}


def test_first_computed_ratios_of_a_few_rows(published_tables):
    assert_first_computed(SOURCES, FIRST, MOVED, tables=published_tables)


# (rows, median error %, within 0.75-1.33x, within 10%, within 5%) and (lowest, highest), as first computed
FIRST_STATS = {"all": ((35, 51.1, 13, 2, 0), (0.315, 3.851)),
               "exllamav2-readme-61e3092": ((10, 28.4, 5, 2, 0), (0.315, 0.942)),
               "optimum-benchmark-llamas": ((12, 54.4, 4, 0, 0), (1.12, 3.492)),
               "optimum-benchmark-vicunas": ((7, 238.2, 2, 0, 0), (1.129, 3.764)),
               "optimum-benchmark-mistrals": ((6, 152.3, 2, 0, 0), (1.191, 3.851))}
# after the int4 host floor (the 15 int4 rows of the three optimum-benchmark sources moved) and EXL2's kernel on Ada
# (wt43_exllama: the 7 EXL2 rows; all was ((35, 23.2, 24, 2, 0), (0.315, 1.713)), ExLlamaV2's FIRST_STATS' own)
NOW_STATS = {**FIRST_STATS, "all": ((35, 19.9, 27, 6, 2), (0.865, 1.713)),
             "exllamav2-readme-61e3092": ((10, 9.0, 8, 6, 2), (0.865, 1.671)),
             "optimum-benchmark-llamas": ((12, 23.9, 9, 0, 0), (1.12, 1.713)),
             "optimum-benchmark-vicunas": ((7, 15.9, 7, 0, 0), (1.129, 1.292)),
             "optimum-benchmark-mistrals": ((6, 29.5, 3, 0, 0), (1.191, 1.414))}


@pytest.mark.slow  # the 35 rows computed
def test_the_rows_as_first_computed(published_tables):
    every = ratios(SOURCES, tables=published_tables)
    assert_summaries(every, decode_groups(every, SOURCES), NOW_STATS)
    ex = {k.split()[1] + " " + k.split()[3]: v for k, v in every.items() if k.startswith("exllamav2-readme-61e3092")}
    # ExLlamaV2 0.1.8 on the RTX 4090: the GPTQ rows 0.86-0.92; the EXL2 rows of a 7B-70B model 0.9-1.1 (their bytes
    # at the kernel's borrowed rate, wt43_exllama; 0.315-0.568 before, a one-row tile flat in the bits), Llama 2 7B's
    # falling with the bits; TinyLlama's 1.5-1.7, too fast (the ungraphed host the model does not charge)
    assert all(0.86 < ex[f"{m} g128"] < 0.92 for m in ("llama-7b", "llama-13b", "llama-30b"))
    assert all(0.9 < ex[k] < 1.1 for k in ("codellama-34b 4.0b", "llama2-70b 2.5b", "llama2-7b 3.0b", "llama2-7b 5.0b"))
    assert ex["llama2-7b 3.0b"] > ex["llama2-7b 4.0b"] > ex["llama2-7b 5.0b"]
    assert all(1.5 < ex[f"tinyllama-1.1b {b}"] < 1.7 for b in ("3.0b", "4.0b"))
    # optimum-benchmark under transformers 4.34/4.35 on an EPYC 7742 host: every row too fast, fp16 1.12-1.23 at
    # batch 1-4, the int4 rows (with their host floor now) 1.15-1.42, Llama 2 13B fp16 at batch 16 the highest
    ob = {k: v for k, v in every.items() if k.startswith("optimum-benchmark")}
    assert all(1.1 < v < 1.24 for k, v in ob.items() if " fp16 " in k and " batch 16 " not in k)
    assert all(1.15 < v < 1.42 for k, v in ob.items() if " fp16 " not in k)
    assert max(ob.values()) == ob["optimum-benchmark-llamas llama2-13b fp16 batch 16 256/512 a100"]
    # every optimum-benchmark row too fast, and four EXL2 rows (Llama 2 7B 3.0b and 4.0b, TinyLlama's two)
    assert sum(v > 1 for v in every.values()) == 29
