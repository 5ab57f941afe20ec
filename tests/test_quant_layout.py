"""How int8 and int4 weights are stored (--quant-layout, Workload.quant_layout,
costmodel/quantization.py QUANT_LAYOUTS): GPTQ's (the default) against gpt-fast's and torchao's,
whose int8 keeps a bf16 scale per row and whose int4 (tinygemm) keeps a bf16 (scale, zero) pair per
group and pads K. Exact bytes, each derived by hand below from the code the layout cites."""

from __future__ import annotations

import json

import pytest
import sympy as sp
from click.testing import CliRunner

import cli
from costmodel.blocks import quantized_bytes
from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from costmodel.kernel_time import KernelTimer
from costmodel.presets import load_preset
from costmodel.quantization import weight_format
from costmodel.tree import CostModel, model_values, profile_for, workload_values
from costmodel.workload import Workload
from reports.published_decode import decode_setup
from reports.published_runs import other_runs_data
from tests.cli_run import run_main

PARTS = ("weight_data_bytes", "weight_scale_bytes", "weight_zero_bytes", "weight_unquantized_bytes")
# Llama-2-7B: 32 layers of 202,375,168 linear weights (4 x 4096^2 + 3 x 4096 x 11008); the head
# 32000 x 4096 = 131,072,000; the embedding 131,072,000 and the norms 266,240 stay bf16.
LAYER, HEAD, UNQUANTIZED = 202_375_168, 131_072_000, 2 * (131_072_000 + 266_240)


def _parts(quant_layout: str, weight_dtype: str = "int4", group: int | None = 32) -> dict[str, int]:
    cfg = load_preset("llama2-7b")
    workload = Workload(seq_len=5, gen_tokens=200, dtype="bf16", quantize_head=True, weight_dtype=weight_dtype,
                        weight_group=group, quant_layout=quant_layout)
    tree = CostModel(cfg, profile_for(cfg, workload), "decode")
    values = {**model_values(cfg), **workload_values(cfg, workload)}
    return {part: int(tree.total(part).subs(values)) for part in PARTS}


def test_llama2_7b_int4_g32_as_gpt_fast_stores_it():
    """Half a byte a value (the int4pack weight), 4 bytes a group of 32 (scales_and_zeros, a bf16
    pair), no zeros part; K = 4096 and 11008 are multiples of 32 and of inner_k_tiles x 16 = 128,
    so nothing is padded: 3,303,538,688 + 825,884,672 + 262,676,480 = 4,392,099,840 bytes, the
    figure tests/test_quantize_head.py checks against gpt-fast's bandwidth column."""
    p = _parts("gpt-fast")
    values = 32 * LAYER + HEAD
    assert p == {"weight_data_bytes": values // 2, "weight_scale_bytes": 4 * (values // 32),
                 "weight_zero_bytes": 0, "weight_unquantized_bytes": UNQUANTIZED}
    assert sum(p.values()) == 4_392_099_840


def test_torchao_pads_every_k_to_1024():
    """torchao's TensorCoreTiledLayoutType pads in_features to a multiple of 1024 whether or not it
    is aligned: down_proj's 11008 columns are stored as 11264, 256 more per row of 4096, in all 32
    layers: 32 x 4096 x 256 / 2 = 16,777,216 more data bytes and 32 x 4096 x 8 groups x 4 =
    4,194,304 more scale bytes than gpt-fast's."""
    assert sum(_parts("torchao").values()) - sum(_parts("gpt-fast").values()) == 16_777_216 + 4_194_304


def test_default_is_gptqs_unchanged():
    """No --quant-layout: GPTQ's (an fp16 scale, 2 bytes, and a packed 4-bit zero a group):
    3,303,538,688 + 412,942,336 + 103,235,584 + 262,676,480 = 4,082,393,088, as before."""
    assert Workload().quant_layout == "gptq" and "quant_layout" not in Workload(weight_dtype="int4").options()
    groups = (32 * LAYER + HEAD) // 32
    p = _parts("gptq")
    assert p["weight_scale_bytes"] == 2 * groups and p["weight_zero_bytes"] == groups // 2
    assert sum(p.values()) == 4_082_393_088


def test_int8_with_bf16_row_scales():
    """gpt-fast's WeightOnlyInt8Linear keeps `scales` in bf16, one per output row: 32 layers' 42,496
    rows (3 x 4096 + 4096 + 2 x 11008 + 4096) and the head's 32,000, 2 bytes each, half LLM.int8's
    fp32: 2,783,744 against 5,567,488."""
    rows = 32 * 42_496 + 32_000
    assert _parts("gpt-fast", "int8", None)["weight_scale_bytes"] == 2 * rows == 2_783_744
    assert _parts("gptq", "int8", None)["weight_scale_bytes"] == 4 * rows


@pytest.mark.parametrize("rows, cols, layout, data, scales", [
    (12, 1000, "gpt-fast", 12 * 1024 // 2, 12 * 32 * 4),   # 1000 % 128 != 0: padded to 1024
    (12, 1152, "gpt-fast", 12 * 1152 // 2, 12 * 36 * 4),   # 1152 = 9 x 128: stored as it is
    (12, 1152, "torchao", 16 * 2048 // 2, 16 * 64 * 4),    # always to 1024s, the rows to 8s
    (12, 1152, "gptq", 12 * 1152 // 2, 12 * 36 * 2),       # no padding, an fp16 scale (and zeros)
])
def test_int4_padding_on_odd_sizes(rows, cols, layout, data, scales):
    """One int4 matrix in groups of 32, as each layout stores it (gpt-fast's replace_linear_int4
    pads only where _check_linear_int4_k fails; torchao's pre_process always)."""
    fmt = weight_format("int4", 32, quant_layout=layout)
    parts = quantized_bytes(((sp.Integer(rows), sp.Integer(cols), sp.Integer(1)),), fmt)
    assert (parts["data"], parts["scales"]) == (data, scales)


def test_bad_layouts_refused():
    """An unknown name, or a layout an engine does not store: one ConfigError each."""
    for kwargs, match in (({"quant_layout": "marlin", "weight_dtype": "int4"}, "unknown quant_layout"),
                          ({"quant_layout": "torchao", "weight_dtype": "fp8"}, "applies to int8 and int4"),
                          ({"quant_layout": "torchao"}, "applies to int8 and int4"),
                          ({"quant_layout": "gpt-fast", "weight_dtype": "int8", "weight_group": 64}, "one scale per"),
                          ({"quant_layout": "gpt-fast", "weight_dtype": "int4", "weight_group": 48}, "groups of 32")):
        with pytest.raises(ConfigError, match=match):
            Workload(**kwargs)


def _simulate(*args: str) -> tuple[int, object]:
    result = CliRunner().invoke(cli.cli, ["simulate", "-m", "llama2-7b", "--hardware", "a100-80gb", "--prompt", "5",
                                          "--gen", "20", "--kv-cache", "static", "--cuda-graphs", "--weight-dtype",
                                          "int4", "--weight-group", "32", "--quantize-head", *args, "--json"])
    return result.exit_code, (json.loads(result.output) if result.exit_code == 0 else result.output)


def test_the_kernel_models_int4_gemv_reads_the_stored_bytes():
    """simulate (the kernel model): a decode step in gpt-fast's layout reads 309,706,752 bytes more
    than in GPTQ's (4,392,099,840 - 4,082,393,088: the scales' pairs, no packed zeros: 1.5 bytes a
    group of 32 more), and takes exactly those bytes longer, each matrix's at the int4 weight-only
    GEMV's rate for its width (kernel_facts.json weight_only_gemv, the A100 entry: by its N / 8
    thread blocks): the fact moves the stored bytes."""
    code, gptq = _simulate()
    code_fast, fast = _simulate("--quant-layout", "gpt-fast")
    assert code == code_fast == 0
    step, step_fast = gptq["decode"]["last_token"], fast["decode"]["last_token"]
    assert step_fast["bytes"] - step["bytes"] == 4_392_099_840 - 4_082_393_088 == 309_706_752
    # Llama-2-7B's int4 matrices (N, K, how many): 32 layers' Q, K, V and O (no --decode-code: three
    # projections, not gpt-fast's fused wqkv), w1 and w3, w2; the head.
    matrices = ((4096, 4096, 128), (11008, 4096, 64), (4096, 11008, 32), (32000, 4096, 1))
    extra = {(n, k): count * n * (k // 32) * 1.5 for n, k, count in matrices}
    assert sum(extra.values()) == 309_706_752
    kernel = KernelTimer(load_hardware("a100-80gb"), "bf16").weight_only_gemv["int4"]
    seconds = sum(b / kernel.rate_at(n, 108) for (n, _), b in extra.items())
    assert step_fast["seconds"] - step["seconds"] == pytest.approx(seconds, rel=1e-9)
    assert fast["memory"]["weights"] - gptq["memory"]["weights"] == 309_706_752


@pytest.mark.parametrize("command", [
    ["simulate", "-m", "llama2-7b", "--weight-dtype", "int4", "--quant-layout", "marlin"],  # no such name
    ["simulate", "-m", "llama2-7b", "--quant-layout", "torchao"],                           # no int8/int4
    ["estimate", "-m", "llama2-7b", "--weight-dtype", "int4", "--quant-layout", "marlin"],
    ["plan", "-m", "llama2-7b", "--gpus", "1", "--quant-layout", "gpt-fast"],                # not --serve
    ["serve", "-m", "llama2-7b", "--rate", "1", "--quant-layout", "torchao"],                # no int8/int4
])
def test_bad_layout_one_line_exit_2(capsys, command):
    code, _, err = run_main(command, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("error: "), err


def test_published_gpt_fast_and_torchao_rows_take_their_sources_layout():
    """Each gpt-fast and torchao source states its layout with the code it quotes; its int8 and
    int4 rows take it, its float8 rows keep theirs (the layout applies to int8 and int4 only)."""
    data = other_runs_data()
    expected = {"gpt-fast": "gpt-fast", "gpt-fast-mixtral": "gpt-fast", "gpt-fast-amd": "gpt-fast",
                "torchao": "torchao", "torchao-h100": "torchao", "rocm-int8": "gpt-fast"}
    for name, layout in expected.items():
        quote = data["sources"][name]["quant_layout_source"]
        assert data["sources"][name]["quant_layout"] == layout and ("bfloat16" in quote or "bf16" in quote)
    seen = set()
    for run in data["runs"]:
        source = data["sources"].get(run.get("source") or run["id"].split()[0])
        if source is None or run["id"].split()[0] not in expected or run.get("kind") != "decode":
            continue
        quantization = decode_setup(run, source)[3]
        stored = quantization.get("quant_layout")
        assert stored == (expected[run["id"].split()[0]] if run.get("weight_dtype") in ("int8", "int4") else None), run["id"]
        seen.add(run.get("weight_dtype"))
    assert {"int8", "int4", "fp8"} <= seen
