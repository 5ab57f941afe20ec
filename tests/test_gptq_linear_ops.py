"""AutoGPTQ v0.4.2's int4 modules as optimum's GPTQ integration runs them (optimum-gptq-bench's rows): their host
calls a forward beside nn.Linear's (validate/gptq_linear_ops.py, kernel_facts.json eager_step_ops "quantized_linears"
extra_calls_by_layout), their kernels by rows (weight_only_by_rows "exllama" and "autogptq-cuda-old": the weight read
once a row; exllama from 8 rows dequantized into an fp16 copy for cuBLAS, QuantLayout.dequant_rows) and the rows they
move. Before this, both kernels took the gptq layout's Marlin rule (flat in the rows) and nn.Linear's four calls."""

from __future__ import annotations

import pytest

from costmodel.eager_ops import step_ops
from costmodel.kernel_facts_file import kernel_facts
from costmodel.kernel_rates import RowsRule
from costmodel.kernel_shapes import Gemm, Pointwise
from costmodel.presets import load_preset
from costmodel.quantization import QUANT_LAYOUT_FACTS, weight_format
from costmodel.quantized_matmul import in_memory_dequant
from tests.unseen_rows import ratios, runs_of


@pytest.mark.slow
def test_the_host_calls_counted_from_the_modules():
    pytest.importorskip("torch")
    from validate.gptq_linear_ops import host_calls

    # nn.Linear: t, view, mm, _unsafe_view; exllama: view, empty, q4_matmul, view, add_ (optimum's bias buffer);
    # cuda-old: view, zeros, _to_copy x2 (x.float(), scales.float()), vecquant4matmul_old, _to_copy, view, add
    assert host_calls() == {"nn.Linear": 4, "gptq-exllama": 5, "gptq-cuda-old": 8}
    assert host_calls(rows=4) == host_calls()  # the same lines below both modules' row thresholds
    extra = kernel_facts()["eager_step_ops"]["quantized_linears"]["extra_calls_by_layout"]
    assert extra == {name: calls - 4 for name, calls in host_calls().items() if name != "nn.Linear"}


def test_a_step_adds_each_linears_extra_calls():
    cfg = load_preset("llama2-13b")  # 40 layers x 7 linears (q, k, v, o, gate, up, down)
    int4 = {"weight_dtype": "int4", "weight_group": 128}
    counts = {layout: step_ops(cfg, "transformers", "fp16", "eager", "dynamic", {**int4, "quant_layout": layout})
              for layout in ("gptq", "gptq-exllama", "gptq-cuda-old")}
    assert counts == {"gptq": 3759, "gptq-exllama": 3759 + 280, "gptq-cuda-old": 3759 + 4 * 280}
    assert step_ops(cfg, "transformers", "fp16", "eager", "dynamic") == 3759  # unquantized: nothing added


def test_the_kernels_by_rows_from_the_code():
    rules = {e["kernel"]: RowsRule(e["rows_a_pass"], e.get("max_rows", 0))
             for e in kernel_facts()["weight_only_by_rows"]["entries"] if "rows_a_pass" in e}
    assert [rules["exllama"].factor(m) for m in (1, 2, 4, 7, 8)] == [1.0, 2.0, 4.0, 7.0, None]  # THREADS_Y = 1
    assert [rules["autogptq-cuda-old"].factor(m) for m in (1, 16, 127, 128)] == [1.0, 16.0, 127.0, None]  # grid z = batch
    # each module's switch: exllama's matmul_recons_thd 8; cuda-old's kernel_switch_threshold 128 (its torch branch)
    assert (QUANT_LAYOUT_FACTS["gptq-exllama"].dequant_rows, QUANT_LAYOUT_FACTS["gptq-cuda-old"].dequant_rows) == (8, 128)


def test_exllama_dequantizes_into_memory_from_eight_rows():
    """Llama-2-13B's up projection (5,120 x 13,824, int4 g128 as stored: 35,942,400 bytes): from 8 rows a pass reading
    them and writing 2 bytes a weight, then the fp16 GEMM; at 7 rows the int4 kernel as it is."""
    fmt = weight_format("int4", 128, quant_layout="gptq-exllama")
    stored = 35942400.0

    def gemm(m):
        return Gemm(m, 13824, 5120, weight_bytes=stored, weight_dtype="int4", weight_kernel="exllama")

    assert in_memory_dequant(fmt, [gemm(7)], 2.0) == [gemm(7)]
    assert in_memory_dequant(fmt, [gemm(8)], 2.0) == [Pointwise(stored + 2 * 5120 * 13824, 0.0),
                                                      Gemm(8, 13824, 5120, weight_kernel="exllama")]
    old = weight_format("int4", 128, quant_layout="gptq-cuda-old")
    assert in_memory_dequant(old, [gemm(127)], 2.0) == [gemm(127)]  # cuda-old's extension to 127 rows
    # from 128 rows (a prefill) qlinear_cuda_old's torch branch: the whole weight dequantized, then torch.matmul
    # (review of session 37: these rows had run the int4 tile model, reading 4-bit weights no kernel read)
    assert in_memory_dequant(old, [gemm(128)], 2.0) == [Pointwise(stored + 2 * 5120 * 13824, 0.0),
                                                        Gemm(128, 13824, 5120, weight_kernel="exllama")]


@pytest.mark.slow
def test_the_optimum_gptq_rows_moved(published_tables):
    """ours / published, batch 1, 2, 4, 8, 16: before (wt35's host floor, every int4 product Marlin's flat rule and
    nn.Linear's calls) exllama 1.26/1.39/2.00/2.67/3.20, cuda-old 1.74/1.77/2.25/3.80/6.45; the fp16 rows unmoved.
    wt38_sweep (the eager kernels keep their GPU-side launch cost): exllama 4, 8, 16 1.71/1.57/1.67 -> 1.65/1.53/1.63,
    cuda-old 8, 16 1.66/1.53 -> 1.64/1.52, fp16 8, 16 1.68/1.86 -> 1.65/1.81. wt41_hfgen (session 41): the step's ops
    counted under transformers 4.32.1 (the source's assumed release; eager Llama 100 ops a layer and 47 a step, where
    5.24's were 92 and 79): exllama 1, 2 1.17/1.29 -> 1.09/1.20, cuda-old 1, 2, 4 1.34/1.36/1.74 -> 1.26/1.29/1.64,
    fp16 1, 2, 4, 8 1.38/1.39/1.40/1.65 -> 1.28/1.29/1.30/1.59 (the host-bound steps slower, 4,047 ops in place of 3,759)."""
    every = ratios(("optimum-gptq-bench",), tables=published_tables)
    by = {(kernel, batch): round(every[f"optimum-gptq-bench llama2-13b {kernel} batch {batch} 512/512 a100"], 2)
          for kernel in ("fp16", "gptq-exllama", "gptq-cuda-old") for batch in (1, 2, 4, 8, 16)}
    assert [by["gptq-exllama", b] for b in (1, 2, 4, 8, 16)] == [1.09, 1.20, 1.65, 1.53, 1.63]
    assert [by["gptq-cuda-old", b] for b in (1, 2, 4, 8, 16)] == [1.26, 1.29, 1.64, 1.64, 1.52]
    assert [by["fp16", b] for b in (1, 2, 4, 8, 16)] == [1.28, 1.29, 1.30, 1.59, 1.81]
    layouts = {r["id"].split()[2]: r.get("quant_layout") for r in runs_of("optimum-gptq-bench")}
    assert layouts == {"fp16": None, "gptq-exllama": "gptq-exllama", "gptq-cuda-old": "gptq-cuda-old"}
