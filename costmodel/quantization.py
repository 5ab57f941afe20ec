"""Quantized weight formats as data: what one quantized weight matrix stores.

A format says how many bits a stored value takes and how its scales, zeros and lookup tables are
laid out; blocks.quantized_bytes() turns a block's weight matrices into bytes of data, scales,
zeros and tables with it. The layouts (validate/FINDINGS.md section 12; R output rows, C input
columns, N = R C values per matrix):

  int8  bitsandbytes' LLM.int8: one byte per value and one fp32 absmax per output row (measured:
        validate/quantized.py). With a group size g: GPTQ's 8-bit layout, an fp16 scale and an
        8-bit zero point per group of g input columns of a row (stated, not measured).
  int4  GPTQ / AWQ: values packed two per byte, per group of g (128) input columns of a row an
        fp16 scale and a 4-bit zero point, packed (stated: their kernels need a GPU; quanto's int4,
        measured here, keeps a bf16 scale and shift per group, 4 bytes, section 12).
  fp8   float8 e4m3, one byte per value and one fp32 scale per output row (torchao's float8
        weight-only, measured). With a group size g: one fp32 scale per g x g block of the matrix,
        ceil(R/g) ceil(C/g) of them, as DeepSeek-V3's checkpoint keeps its `weight_scale_inv`
        (quantization_config weight_block_size [128, 128]) and vLLM's block fp8 allocates it
        (Fp8LinearMethod.create_weights: weight_scale_inv of (ceil(R/128), ceil(C/128)), fp32;
        vllm/model_executor/layers/quantization/fp8.py). Its activations' per-token-group
        quantization (one fp32 scale per 128 values, not per tensor) is timed as the per-tensor
        pass below.
  nf4   bitsandbytes NF4: values packed two per byte, one absmax per block of g (64) values, the
        16-entry fp32 code per matrix; with double quantisation (the default, as QLoRA runs it)
        the absmax is one uint8 per block plus one fp32 per 256 blocks and an fp32 offset, and
        the 256-entry fp32 second code adds 1,024 bytes per matrix (measured).
  mxfp4 OCP Microscaling FP4 (E2M1 values packed two per byte, one E8M0 scale byte per block of
        g = 32 consecutive values along a row's input columns: 4.25 bits a weight), as the gpt-oss
        checkpoints store their routed experts (*_blocks and *_scales, uint8) and vLLM holds them:
        Mxfp4MoEMethod.create_weights allocates w13_weight (E, 2 I, H // 2) and w13_weight_scale
        (E, 2 I, H // mxfp4_block) with mxfp4_block = 32, both uint8, and likewise w2 over I; its
        biases stay bf16. It quantizes the routed experts only (WEIGHT_SCOPES): Mxfp4Config
        .get_quant_method returns UnquantizedLinearMethod for every linear layer ("MXFP4 linear
        layer is not implemented") and Mxfp4MoEMethod for FusedMoE (vllm-project/vllm
        vllm/model_executor/layers/quantization/mxfp4.py, commit 007d5005), and the checkpoints
        leave self_attn, the router, embed_tokens and lm_head in bf16 (quantization_config
        .modules_to_not_convert of openai/gpt-oss-20b and -120b's config.json). The padding some
        of vLLM's MXFP4 backends add (hidden and intermediate sizes rounded up to 64-256) is not
        modelled.
  exl2  ExLlamaV2's EXL2 at the file's bits a weight, its head at head_bits 6: costmodel/exl2.py.

What stays in the activation dtype (the integrations' defaults): the embeddings, the output head,
norms, biases, routers and Qwen2-MoE's shared-expert gate; every other matrix a layer multiplies
by is quantized, each routed expert as its own matrix.

The output head too where the weights are quantized as gpt-fast and torchao do it (--quantize-head,
Workload.quantize_head, WeightFormat.head): gpt-fast's replace_linear_weight_only_int8_per_channel
and replace_linear_int4 replace every nn.Linear child, the Transformer's untied `output` included
(int4 where `_check_linear_int4_k(child.in_features, groupsize, inner_k_tiles)` holds, padded
otherwise; pytorch-labs/gpt-fast quantize.py, commit 32971d3, the same loops at c5d3454), and
torchao's generate.py calls quantize_(model, int8_weight_only()) or int4_weight_only(group_size=...)
with no filter_fn, so quant_api's _is_linear selects every nn.Linear, its model's untied `output`
included (pytorch/ao torchao/_models/llama/generate.py and quantization/quant_api.py, commit
b4d0768). The head's matrix
is then stored, read and multiplied in the format like a layer's (blocks.LMHead.quantized). The
embedding lookup stays 16-bit; a head tied to the embedding is refused (quantizing it would keep a
second, quantized copy of the table, which is not modelled). gpt-fast's bandwidth column confirms
it: tests/test_quantize_head.py.

How int8 and int4 weights are stored (--quant-layout, Workload.quant_layout, QUANT_LAYOUTS): the
layouts above are GPTQ's, AWQ's and bitsandbytes' ("gptq", the default). gpt-fast and torchao
store the same bits with other scales, zeros and padding:
  gpt-fast  int8: `self.register_buffer("scales", torch.ones(out_features, dtype=torch.bfloat16))`
            (WeightOnlyInt8Linear): one bf16 scale per output row, 2 bytes. int4 (tinygemm,
            torch's `_weight_int4pack_mm`): `weight` int32 (out_features // 8, in_features //
            (inner_k_tiles * 16), 32, inner_k_tiles // 2), half a byte per value, and
            `scales_and_zeros` bf16 (in_features // groupsize, out_features, 2): a bf16 scale and a
            bf16 zero per group, 4 bytes, no packed zero (WeightOnlyInt4Linear). K is padded to a
            multiple of 1024 only where `_check_linear_int4_k(k, groupsize, inner_k_tiles)` fails,
            `k % groupsize == 0 and k % (inner_k_tiles * 16) == 0` with inner_k_tiles 8
            (replace_linear_int4, WeightOnlyInt4QuantHandler; groupsize in [32, 64, 128, 256]).
            pytorch-labs/gpt-fast quantize.py, commit 0055c42 (the same classes at 32971d3).
  torchao   int8_weight_only: a scale per output row in the weight's dtype (bf16, 2 bytes);
            int4_weight_only(group_size): TensorCoreTiledLayoutType (tinygemm) stores the same
            packed weight and bf16 (scale, zero) pair per group as gpt-fast's, and its pre_process
            pads every matrix, aligned or not: `in_features = find_multiple(orig_in_features,
            1024)`, `out_features = find_multiple(orig_out_features, 8)` (pytorch/ao
            torchao/quantization/quant_api.py and torchao/dtypes/affine_quantized_tensor.py as of
            its 2024-09 releases, the benchmarks' b4d0768). Llama-2-7B's down_proj (K = 11008) is
            stored as 11264 columns there and as 11008 in gpt-fast's. Not modelled: the int64 zero
            point torchao's int8_weight_only also keeps per row (8 bytes a row, stored but not read by
            its weight-only matmul), and the padding's split under tensor parallelism (gpt-fast pads
            before sharding; here a rank's shard is padded as its own matrix).
  deepspeed DeepSpeed-Inference's int8 (0.7.3 to 0.9.0, the kernel-injected layers): GroupQuantizer
            (deepspeed/module_inject/replace_module.py at v0.7.3, num_groups=32) keeps one int8 per
            value and, per matrix, `out.scale` of (32, 3) fp32 (a scale per 1/32 of the matrix, and
            the same for each half of it): 384 bytes a matrix, whatever its rows (matrix_scale_bytes);
            a tensor-parallel checkpoint (microsoft/bloom-deepspeed-inference-int8) stores it per
            rank (load_checkpoint.py: p.scale = scale, each shard's own). Its GEMMs do not multiply
            int8: quantized_gemm (csrc/transformer/inference/csrc/pt_binding.cpp at v0.7.3, 15923810;
            the same at 00d3be68) allocates `weight16 = at::empty({weight.size(0), weight.size(1)})`
            in the activations' dtype, runs launch_dequantize (csrc/.../dequantize.cu: each thread
            reads four int8 values as one float, multiplies them by its group's fp32 scale and writes
            four halves) and then cublas_gemm_ex (CUBLAS_OP_T, CUBLAS_GEMM_DEFAULT_TENSOR_OP) on the
            fp16 copy: the fp16 GEMM, reading 2 bytes a weight, after a memory-bound pass that reads
            the stored bytes and writes 2 bytes a weight (quantized_matmul.in_memory_dequant). Every
            call dequantizes again: no fp16 copy is kept between calls (v0.7.4 to v0.8.0 write it into
            the workspace, GetWorkSpace() + 12 hidden bsz; v0.8.3 and v0.9.0 a temporary again).
            qkv_gemm_fp16, vector_matmul_fp16 and mlp_gemm_fp16 with q_int8 (transformer_inference.py
            selfAttention_fp and the MLP at v0.7.3) send the fused QKV, the attention output and both
            MLP matrices through it. int8 only (DeepSpeed 0.7 has no int4 kernel), no weight_group.
            Not modelled: the scales' read (the kernel reads 32 of the 96 fp32, 128 bytes; the
            stored 384 are counted) and the transient fp16 copy's memory (one matrix a rank).
  - vllm-rtn-torch: vLLM's RTN (`-q rtn`, RTN_NUM_BITS 8 or 4, RTN_GROUP_SIZE 128) before PR #26051
    (rtn.py at 03346f0b): RTNLinearMethod.create_weights keeps `weight` uint8 (out / 2 for int4: two
    values a byte, out for int8) by in, and `scale` (out, in / group) in params_dtype (bf16: 2 bytes a
    group, no zero; a row's one where RTN_GROUP_SIZE is -1); apply() runs rtn_dequantize (unpack, shift,
    multiply by the group's scale into a new bf16 tensor) then F.linear on that copy, every call: an
    in-memory dequantization, int8 in groups too (grouped_int8). TorchInductor (torch.compile, vLLM V1's
    default) fuses rtn_dequantize into one kernel before the mm for both widths (validate/rtn_inductor.py,
    CPU backend): one pass, quantized_matmul.dequant_bytes.
  - gptq-exllama and gptq-cuda-old: GPTQ's bytes, run by AutoGPTQ's (v0.4.2, 2023-08-24: the
    release optimum's GPTQ integration of that month loads) exllama QuantLinear and its cuda-old
    QuantLinear (optimum's load_quantized_model, desc_act False, --disable-exllama). exllama's
    q4_matmul (autogptq_cuda/exllama/exllama_ext.cpp) runs q4_matmul_cuda below
    matmul_recons_thd rows, 8 as autogptq_post_init sets it (auto_gptq/modeling/_utils.py), on a
    grid of (width / 32, rows / THREADS_Y = 1, dim / block_size_z) blocks (cuda_func/q4_matmul.cu,
    .cuh): the weight read once a row; from 8 rows q4_matmul_recons_cuda, w->reconstruct into the
    temp_dq buffer (fp16) and cublasHgemm on it: an in-memory dequantization (dequant_rows 8).
    cuda-old's vecquant4matmul_cuda_old (autogptq_cuda_kernel_256.cu) launches
    (height / 32, width / 256, batch) blocks: the weight read once a row, below the module's
    kernel_switch_threshold of 128 rows; from 128 rows its forward's torch branch dequantizes the
    whole weight (shifts, masks, scales * (weight - zeros)) and runs torch.matmul on it: an
    in-memory dequantization (dequant_rows 128; one pass counted, a lower bound of the branch's
    several). Before the review of session 37 those rows ran the int4 tile model, no dequantization.
The layout changes the stored bytes (quantized_bytes), which every path reads: estimate's weights,
both time models' weight reads (the weight-only GEMV kernel's included) and memory; deepspeed's also
how its GEMMs run (quantized_matmul.in_memory_dequant: the roofline's Leaf.matmul_bytes_as_stored and the kernel
model's leaf_kernels read it).

How the formats multiply (W8A8 on FP8 tensor cores, --fp8-gemm; in-memory dequantization) is
costmodel/quantized_matmul.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ConfigError, show
from .spec import DEFAULT_FP8_GEMM, DEFAULT_QUANT_LAYOUT, FP8_GEMMS, QUANT_LAYOUTS
from .spec import KV_DTYPES  # noqa: F401 (--kv-dtype: one byte per cached element, plus two fp32 scales per layer)

#: --weight-dtype -> (bits per value, the default group: None is one scale per output row).
WEIGHT_DTYPES = {"int8": (8, None), "int4": (4, 128), "fp8": (8, None), "nf4": (4, 64),
                 "mxfp4": (4, 32), "exl2": (None, None)}  # exl2: --weight-bits, its groups its own (exl2.py)
#: Formats that quantize only some of a model's matrices (the module's docstring): "experts", the
#: routed experts' (vLLM's Mxfp4Config); "linear", all but the routed experts (bitsandbytes' nf4
#: replaces nn.Linear layers, and transformers 5.24 holds a layer's routed experts as fused 3-D
#: parameters, which stay in the activation dtype: measured in tests/test_finetune_families.py).
#: Every other format: all of a layer's matrices.
WEIGHT_SCOPES = {"mxfp4": "experts", "nf4": "linear"}
#: The blocks bitsandbytes quantizes NF4 in (--weight-group for nf4): bitsandbytes 0.50.2 (the version pyproject's
#: test extra pins), bitsandbytes/_ops.py, quantize_4bit's check `blocksize in (32, 64, 128, 256, 512, 1024,
#: 2048, 4096)`; functional.quantize_4bit(x, blocksize=100) raised "ValueError: invalid blocksize 100" here (CPU),
#: as 16 and 8192 did. Round 45 left `--weight-dtype nf4 --weight-group 100` accepted and sized.
NF4_BLOCKSIZES = (32, 64, 128, 256, 512, 1024, 2048, 4096)
#: The kinds of weight matrix a checkpoint's ignore list can keep in the unquantized dtype
#: (costmodel/checkpoint_ignore.py; tree.weight_kind names each leaf's): a layer's attention projections,
#: a dense layer's MLP, a MoE layer's shared and routed experts.
WEIGHT_KINDS = ("attention", "dense_mlp", "shared_experts", "routed_experts")


@dataclass(frozen=True)
class QuantLayout:
    """How one engine stores an int8 or int4 matrix beside its packed values (the module's
    docstring): bytes of a per-row scale; bytes of a group's (scale, zero) pair where the zero is
    16-bit (None: an fp16 scale and a zero packed in the format's bits, GPTQ's); and whether K
    (input columns) is padded to a multiple of pad_k, "never", "unaligned" (where K is not a
    multiple of both the group and aligned_k) or "always" (N then padded to a multiple of pad_n)."""

    row_scale_bytes: int
    group_pair_bytes: int | None
    pad: str = "never"
    pad_k: int = 1024
    aligned_k: int = 128  # tinygemm's inner_k_tiles (8) x 16
    pad_n: int = 1
    groups: tuple[int, ...] | None = None  # the group sizes the engine accepts (None: any)
    matrix_scale_bytes: int = 0  # scale bytes a matrix keeps whatever its rows (DeepSpeed's 32 x 3 fp32)
    group_matrix_bytes: int = 0  # bytes a grouped matrix keeps beside its values and scales (compressed-tensors' weight_shape)
    dtypes: tuple[str, ...] = ("int8", "int4")  # the formats the engine stores this way
    grouped_int8: bool = False  # int8 in groups of weight_group input columns too (vLLM's RTN), else per row
    # the engine dequantizes each matrix into a copy in the activations' dtype in memory, then runs
    # the unquantized GEMM on it (DeepSpeed's quantized_gemm); False: dequantized in the GEMM's registers
    in_memory_dequant: bool = False
    # from this many rows of a product the engine dequantizes into memory as above (exllama's
    # matmul_recons_thd; the kernel model's in_memory_dequant), below them in registers; 0: never
    dequant_rows: int = 0
    # the weight-only kernel its int4 products run (kernel_facts.json "weight_only_by_rows": its time by rows):
    # vLLM's Marlin for GPTQ/AWQ checkpoints, tinygemm for gpt-fast and torchao, AutoAWQ's own two
    kernel: str = "marlin"


#: --quant-layout -> its storage (spec.QUANT_LAYOUTS says each in words; sources: the docstring).
QUANT_LAYOUT_FACTS = {
    "gptq": QuantLayout(row_scale_bytes=4, group_pair_bytes=None),
    "gpt-fast": QuantLayout(row_scale_bytes=2, group_pair_bytes=4, pad="unaligned", groups=(32, 64, 128, 256),
                            kernel="tinygemm"),
    "torchao": QuantLayout(row_scale_bytes=2, group_pair_bytes=4, pad="always", pad_n=8,
                           groups=(32, 64, 128, 256), kernel="tinygemm"),
    # AutoAWQ's GEMM and GEMV versions (quant_config "version"): GPTQ's bytes (an fp16 scale and a packed 4-bit
    # zero a group: awq/modules/linear.py at 5c7e368, qweight, qzeros int32, scales fp16), each its own kernel
    "awq-gemm": QuantLayout(row_scale_bytes=4, group_pair_bytes=None, dtypes=("int4",), kernel="awq-gemm"),
    "awq-gemv": QuantLayout(row_scale_bytes=4, group_pair_bytes=None, dtypes=("int4",), kernel="awq-gemv"),
    # compressed-tensors' symmetric pack-quantized (checkpoint.py: RedHatAI's W4A16 and W8A16): vLLM's
    # CompressedTensorsWNA16.create_weights allocates weight_packed int32 (R, C // pack_factor), weight_scale
    # (R, C // g) in params_dtype (2 bytes), weight_shape int64 (2,): 16 bytes a matrix, and weight_zero_point
    # only `if not self.symmetric` (vllm-project/vllm compressed_tensors/schemes/compressed_tensors_wNA16.py);
    # Marlin runs it (choose_mp_linear_kernel). Per-channel int8 (W8A8): an fp32 scale a row, as LLM.int8's.
    "compressed-tensors": QuantLayout(row_scale_bytes=4, group_pair_bytes=2, group_matrix_bytes=2 * 8),
    # AutoGPTQ v0.4.2's exllama and cuda-old QuantLinear over GPTQ's bytes (the module's docstring)
    "gptq-exllama": QuantLayout(row_scale_bytes=4, group_pair_bytes=None, dtypes=("int4",), kernel="exllama",
                                dequant_rows=8),
    # cuda-old: `x.shape[0] < self.kernel_switch_threshold` (128) runs the extension, else the torch dequantization
    "gptq-cuda-old": QuantLayout(row_scale_bytes=4, group_pair_bytes=None, dtypes=("int4",), kernel="autogptq-cuda-old",
                                 dequant_rows=128),
    "deepspeed": QuantLayout(row_scale_bytes=0, group_pair_bytes=None, matrix_scale_bytes=32 * 3 * 4,
                             dtypes=("int8",), in_memory_dequant=True),
    # vLLM's RTN before #26051 (the module's docstring): a bf16 scale a group (or a row), no zero, every call
    # dequantized into a bf16 copy for F.linear (no weight-only kernel runs it)
    "vllm-rtn-torch": QuantLayout(row_scale_bytes=2, group_pair_bytes=2, grouped_int8=True, in_memory_dequant=True,
                                  kernel=""),
    # EXL2's own storage (--weight-dtype exl2, costmodel/exl2.py; not a --quant-layout choice): its kernel to 50
    # rows, reconstruct() and cublasHgemm from 51 (MAX_Q_GEMM_ROWS)
    "exl2": QuantLayout(row_scale_bytes=0, group_pair_bytes=None, dtypes=("exl2",), dequant_rows=51,
                        kernel="exllamav2"),
}


def stored_shape(rows: Any, cols: Any, fmt: "WeightFormat") -> tuple[Any, Any]:
    """(rows, columns) of a matrix as its format's layout stores it: the layout's padding of K
    (and N) for int4; int8 and the other formats are stored unpadded."""
    import sympy as sp

    facts = QUANT_LAYOUT_FACTS[fmt.quant_layout]
    if fmt.dtype != "int4" or facts.pad == "never":
        return rows, cols
    padded = facts.pad_k * sp.ceiling(cols / facts.pad_k)
    if facts.pad == "always":
        return facts.pad_n * sp.ceiling(rows / facts.pad_n), padded
    aligned = sp.ilcm(fmt.group, facts.aligned_k)
    return rows, sp.Piecewise((cols, sp.Eq(sp.Mod(cols, aligned), 0)), (padded, True))


@dataclass(frozen=True)
class WeightFormat:
    """One quantized weight format (see the module's docstring)."""

    dtype: str
    bits: Any  # bits a stored value (int); EXL2's: the file's bits a weight, a sympy Rational (exl2.py)
    group: int | None  # input columns per scale (gptq), values per block (nf4), block side (fp8), None: per row
    layout: str  # "row": a scale per output row; "gptq": scale and zero per group; "block"; "nf4"; "mx"
    double_quant: bool = False
    gemm: str = DEFAULT_FP8_GEMM  # fp8: how its GEMMs multiply (spec.FP8_GEMMS; quantized_matmul.runs_w8a8)
    scope: str = "all"  # which matrices it quantizes: "all", "experts" (the routed experts') or "linear" (all but them)
    head: bool = False  # the output head's matrix too (gpt-fast's and torchao's; the module's docstring)
    quant_layout: str = DEFAULT_QUANT_LAYOUT  # how int8/int4 scales, zeros and padding are stored (QUANT_LAYOUTS)
    kept: tuple[str, ...] = ()  # WEIGHT_KINDS a checkpoint's ignore list keeps in the unquantized dtype

    @property
    def storage(self) -> QuantLayout:
        """The layout's storage facts (QUANT_LAYOUT_FACTS)."""
        return QUANT_LAYOUT_FACTS[self.quant_layout]

    def quantizes(self, kind: str | None) -> bool:
        """Whether a block's matrices are stored in this format (kind: its WEIGHT_KINDS entry, None
        for another block): not where the checkpoint keeps the kind (kept), else as the scope says."""
        if kind in self.kept:
            return False
        return self.scope == "all" or (kind == "routed_experts") == (self.scope == "experts")

    @property
    def label(self) -> str:
        if self.dtype == "exl2":
            return f"exl2 at {float(self.bits):g} bits a weight, the head at the converter's head_bits 6"
        grouped = (f", blocks of {self.group} x {self.group}" if self.layout == "block" else
                   f", groups of {self.group}" if self.group else ", per output row")
        double = ", double quantisation" if self.double_quant else ""
        scope = ", routed experts only" if self.scope == "experts" else ""
        head = ", the head too" if self.head else ""
        stored = f", {self.quant_layout}'s layout" if self.quant_layout != DEFAULT_QUANT_LAYOUT else ""
        kept = f", {' and '.join(k.replace('_', ' ') for k in self.kept)} unquantized" if self.kept else ""
        return f"{self.dtype}{grouped}{double}{scope}{head}{stored}{kept}"


def weight_format(dtype: str | None, group: int | None = None,
                  double_quant: bool = True, fp8_gemm: str = DEFAULT_FP8_GEMM,
                  head: bool = False, quant_layout: str = DEFAULT_QUANT_LAYOUT,
                  kept: tuple[str, ...] = (), bits: float | None = None) -> WeightFormat | None:
    """The format of --weight-dtype (None: unquantized), with its group size and, for nf4,
    whether the absmax is quantized again; for fp8, how its GEMMs multiply (--fp8-gemm); head:
    the output head's matrix quantized too (--quantize-head); quant_layout: how int8 and int4 are
    stored (--quant-layout, QUANT_LAYOUTS); kept: the WEIGHT_KINDS a checkpoint's ignore list keeps
    unquantized (checkpoint_ignore.py); bits: EXL2's bits a weight (--weight-bits, exl2.py)."""
    check_quant_layout(dtype, group, quant_layout)
    if bits is not None and dtype != "exl2":
        raise ConfigError("workload: weight_bits applies only to exl2 weights (--weight-dtype exl2).")
    if not isinstance(kept, tuple) or not set(kept) <= set(WEIGHT_KINDS):
        raise ConfigError(f"workload: weight_kept must name some of {', '.join(WEIGHT_KINDS)}, got {kept!r}.")
    if head and dtype is None:
        raise ConfigError("workload: quantize_head applies only with a weight_dtype.")
    if head and WEIGHT_SCOPES.get(dtype) == "experts":
        raise ConfigError(f"workload: {dtype} quantizes the routed experts only; no quantize_head.")
    if fp8_gemm not in FP8_GEMMS:
        raise ConfigError(f"workload: unknown fp8_gemm {fp8_gemm!r}; use one of {FP8_GEMMS.listed()}.")
    if fp8_gemm != DEFAULT_FP8_GEMM and dtype != "fp8":
        raise ConfigError(f"workload: fp8_gemm {fp8_gemm} applies only to fp8 weights (--weight-dtype fp8).")
    if dtype is None:
        if group is not None:
            raise ConfigError("workload: weight_group applies only with a weight_dtype.")
        return None
    if dtype not in WEIGHT_DTYPES:
        raise ConfigError(f"workload: unknown weight_dtype {dtype!r}; use one of "
                          f"{', '.join(WEIGHT_DTYPES)}.")
    if dtype == "exl2":
        return exl2_format(group, head, kept, bits)
    bits, default = WEIGHT_DTYPES[dtype]
    if dtype == "mxfp4" and group not in (None, default):
        raise ConfigError(f"workload: mxfp4 scales blocks of {default} values; no other weight_group.")
    if dtype == "nf4" and group not in (None, *NF4_BLOCKSIZES):
        raise ConfigError(f"workload: nf4 quantizes blocks of {', '.join(map(str, NF4_BLOCKSIZES))} values "
                          f"(bitsandbytes' quantize_4bit), not {show(group)}; the default is {default}.")
    group = default if group is None else group
    if dtype == "nf4":
        return WeightFormat(dtype, bits, group, "nf4", double_quant, scope=WEIGHT_SCOPES[dtype], head=head, kept=kept)
    if dtype == "mxfp4":
        return WeightFormat(dtype, bits, group, "mx", scope=WEIGHT_SCOPES[dtype], kept=kept)
    layout = "row" if not group else "block" if dtype == "fp8" else "gptq"
    return WeightFormat(dtype, bits, group, layout, gemm=fp8_gemm, head=head, quant_layout=quant_layout, kept=kept)


def exl2_format(group: int | None, head: bool, kept: tuple[str, ...], bits: float | None) -> WeightFormat:
    """EXL2 at `bits` a weight (default the converter's 4.125), every decoder matrix and the head (its own
    bits: tree.leaf_format); its groups are the converter's, per layer (no weight_group)."""
    from . import exl2

    if group is not None:
        raise ConfigError("workload: exl2 chooses its groups per layer (32-128 input rows); no weight_group.")
    if head:
        raise ConfigError("workload: exl2 always quantizes the head (the converter's head_bits 6); no quantize_head.")
    rational = exl2.check_bits(exl2.DEFAULT_BITS if bits is None else bits)
    return WeightFormat("exl2", rational, None, "exl2", head=True, quant_layout="exl2", kept=kept)


def check_quant_layout(dtype: str | None, group: int | None, quant_layout: str) -> None:
    """An error sentence where --quant-layout is unknown, or names an engine's layout for a
    format or grouping that engine does not store (gpt-fast and torchao: int8 per output row,
    int4 in groups)."""
    if quant_layout not in QUANT_LAYOUTS:
        raise ConfigError(f"workload: unknown quant_layout {quant_layout!r}; use one of "
                          f"{QUANT_LAYOUTS.listed(first=DEFAULT_QUANT_LAYOUT)}.")
    if quant_layout == DEFAULT_QUANT_LAYOUT:
        return
    dtypes = QUANT_LAYOUT_FACTS[quant_layout].dtypes
    if dtype not in dtypes:
        raise ConfigError(f"workload: quant_layout {quant_layout} applies to {' and '.join(dtypes)} weights "
                          f"(--weight-dtype {' or '.join(dtypes)}), not {dtype or 'unquantized ones'}.")
    if dtype == "int8" and group is not None and not QUANT_LAYOUT_FACTS[quant_layout].grouped_int8:
        scales = "32 groups of scales a matrix" if quant_layout == "deepspeed" else "one scale per output row"
        raise ConfigError(f"workload: {quant_layout}'s int8 keeps {scales}; no weight_group.")
    groups = QUANT_LAYOUT_FACTS[quant_layout].groups
    if dtype == "int4" and group is not None and groups and group not in groups:
        raise ConfigError(f"workload: {quant_layout}'s int4 takes groups of {', '.join(map(str, groups))} "
                          f"input columns, not {group}.")


def check_whole_groups(fmt: WeightFormat | None, widths: Any) -> None:
    """A format with groups along a matrix's input columns, stored unpadded (--quant-layout gptq: GPTQ's
    and AWQ's checkpoints as vLLM loads them), needs a group that divides each quantized matrix's K
    (`widths`, in the model's order): vLLM's GPTQ and AWQ linear methods refuse an input size that
    is not a multiple of the group (create_weights; the check check_shard_groups makes per rank);
    an error sentence naming the first K the group does not divide. gpt-fast's and torchao's
    layouts pad K (stored_shape), and take groups of 32-256 only (check_quant_layout)."""
    if fmt is None or fmt.layout != "gptq" or fmt.storage.pad != "never":
        return
    for width in widths:
        if width % fmt.group:
            raise ConfigError(f"--weight-group {fmt.group}: {fmt.dtype} groups of {fmt.group} input columns do not "
                              f"divide a quantized matrix's K = {width} (GPTQ and AWQ kernels need whole groups); "
                              "use a --weight-group that divides every K.")


def check_shard_groups(fmt: WeightFormat | None, widths: Any, tp: int) -> None:
    """A format with groups along a matrix's input columns (int4, a grouped int8) needs whole groups
    on each row-parallel shard of tensor parallelism (K / tp columns of each of `widths`' K): an
    error sentence where a group straddles two ranks. Both engines that shard these formats require
    it: gpt-fast's tp.py shards int4's scales_and_zeros (K / g groups) along K and asserts they
    split evenly (pytorch-labs/gpt-fast tp.py, _apply_tp_linear's shard(), commit 141c69e1); vLLM's
    GPTQ and AWQ linear methods refuse an input_size_per_partition that is not a multiple of the group
    ("The input size is not aligned with the quantized weight shape. This can be caused by too large
    tensor parallel size.": create_weights; vllm-project/vllm issue #2699)."""
    if fmt is None or fmt.layout != "gptq" or tp == 1:
        return
    for width in widths:
        if width % (tp * fmt.group):
            raise ConfigError(f"--tp {tp}: {fmt.dtype} groups of {fmt.group} input columns do not divide a "
                              f"row-parallel shard's {width} / {tp} = {width / tp:g} columns (gpt-fast and vLLM "
                              f"need whole groups on each rank); use a --weight-group that divides "
                              f"{width // tp} or another --tp.")
