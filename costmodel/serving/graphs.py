"""Which of an engine's steps replay a CUDA graph, and at what padded size: each scheduler's
engine default as data with its source (ENGINE_GRAPHS), and `serve --cuda-graphs on|off|auto`.

A step replayed from a graph pays the hardware's graph_kernel_s per kernel instead of the eager
per-block launch overhead (costmodel/kernel_time.py KernelTimer(cuda_graphs=True); the roofline:
no launch term, as simulate --cuda-graphs), for the leaves inside the graph; the rest of the step
runs eagerly as before. A graph is captured at fixed sizes, so the step's tokens are padded to
the next captured size and the captured leaves (the projections, FFN, norms and the all-reduces
between them) run the padded rows.

The engines (sources read for this module):

- vLLM v0 ("vllm-v0"): enforce_eager False by default; a decode-only batch runs through
  CUDAGraphRunner, captured at batch sizes 1, 2, 4 and multiples of 8 up to 256 (vLLM v0.6.0's
  _BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [8 * i for i in range(1, 33)], the sizes up to
  _get_graph_batch_size(max_num_seqs)), when its longest sequence is at most
  max_seq_len_to_capture (EngineArgs default 8,192; serve --max-capture-len): ModelInputForGPUBuilder._use_captured_graph
  (decode_only and not enforce_eager and batch_size <= the largest captured size and
  max_decode_seq_len <= max_seq_len_to_capture); the batch is padded to _get_graph_batch_size
  (build: cuda_graph_pad_size). Prefill and mixed batches run eagerly (capture_model's docstring:
  "vLLM only captures decoding requests. Mixed batch (chunked prefill + decoding) or prefill
  requests are not captured"). The graph holds the model's forward, attention included; the LM
  head (model.compute_logits) and sampling run after it, eagerly (ModelRunner.execute_model).
  Read in vllm-project/vllm vllm/worker/model_runner.py as this index stores it (commit
  002a0ba9645e705311e4cbaab24282448240419a, a v0.6.x tree; the v0.6.0 tag itself could not be
  brought here: the repository's snapshot is over the fetch limit), with the stored copies of
  v0.5-v0.6's model_runner.py for the capture list.
- vLLM v1 ("vllm"): torch.compile with piecewise CUDA graphs (CompilationConfig, level PIECEWISE,
  the v1 default up to v0.10; cudagraph_mode PIECEWISE): the graph is split at the attention op
  (splitting_ops: vllm.unified_attention...), which runs eagerly between the captured pieces, so
  every batch whose scheduled tokens fit the largest capture size replays its pieces, mixed
  batches included, padded to the next capture size (VllmConfig.pad_for_cudagraph); a larger one
  runs eagerly. Capture sizes: [1, 2, 4] + range(8, cuda_graph_sizes + 1, 8) with cuda_graph_sizes
  defaulting to [min(max_num_seqs * 2, 512)], those above max_num_batched_tokens dropped
  (vllm/config.py VllmConfig._set_cudagraph_sizes; SchedulerConfig/CompilationConfig
  cuda_graph_sizes' docstring). The LM head (compute_logits) runs on the sampled rows after the
  forward, eagerly (vllm/v1/worker/gpu_model_runner.py execute_model). Later releases default to
  FULL_AND_PIECEWISE (decode-only batches as one full graph, attention inside): not modelled.
- Sarathi-Serve ("sarathi"; its vLLM-v0 baseline is "vllm-v0" above): no CUDA graph anywhere in
  microsoft/sarathi-serve (branches main 96f9911 and osdi-sarathi-serve ceaa066: no cuda_graph,
  CUDAGraph or enforce_eager in the tree); sarathi/model_executor/model_runner.py run() calls
  the model eagerly every step.
- Orca ("orca"): the paper (OSDI 2022) describes no CUDA graphs: eager.
- TensorRT-LLM's PyTorch backend ("trtllm"): a generation-only batch replays one CUDA graph of the
  whole forward, attention included (tensorrt_llm/_torch/pyexecutor/cuda_graph_runner.py,
  DecodingCUDAGraphRunner), captured at cuda_graph_config's batch_sizes up to min(max_batch_size,
  max_num_tokens), plus that limit itself when padding is on and a larger size was listed
  (model_engine.py _filter_cuda_graph_batch_sizes, at NVIDIA/TensorRT-LLM 000a01d); a batch is padded
  to the next captured size. The sizes are those of perf-overview.md's llm_options.yml (commit
  00f37686: enable_padding true, batch_sizes 1, 2, 4, ..., 256, 384, 512, 1024, ..., 8192). Context
  and mixed batches run eagerly. The LM head is inside TensorRT-LLM's graph; here, as for vLLM v0,
  it is left eager.
- static (transformers generate()) and transformers' continuous batching ("hf-fifo",
  "hf-prefill-first"): eager, as their CPU-proven tests run them.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

from ..config import ConfigError, show
from ..spec import CUDA_GRAPHS

#: vLLM's EngineArgs.max_seq_len_to_capture default (vllm/engine/arg_utils.py, v0.6: 8192); serve
#: --max-capture-len sets it, as vLLM's --max-seq-len-to-capture does (Krai's MLPerf commands: 1024).
VLLM_V0_MAX_CAPTURE_LEN = 8192
VLLM_V0_SOURCE = ("vLLM v0.6 vllm/worker/model_runner.py: decode-only batches replay CUDAGraphRunner at "
                  "_BATCH_SIZES_TO_CAPTURE (1, 2, 4, 8..256), padded to the next; longest sequence <= "
                  "max_seq_len_to_capture {}; prefill and mixed batches and the LM head eager")
VLLM_V1_SOURCE = ("vLLM v1 CompilationConfig PIECEWISE: every batch of at most the largest capture size "
                  "(1, 2, 4, 8..min(2 x max_num_seqs, 512), <= max_num_batched_tokens) replays its pieces, "
                  "padded to the next; attention and the LM head eager")


@dataclass(frozen=True)
class Graphed:
    """How one step runs under its engine's graphs: its per-token leaves at `tokens` rows (the
    padded size) inside a graph; the attention (context) leaves inside it or not."""

    tokens: int
    context: bool


@dataclass(frozen=True)
class CudaGraphs:
    """An engine's CUDA graph policy. mode: "none" (eager), "decode" (a decode-only step whose
    sequences fit the captured sizes and whose longest context is at most max_context replays
    the whole forward but the LM head) or "piecewise" (a step of at most the largest captured
    size of tokens replays everything but the attention and the LM head). sizes: the captured
    sizes, ascending."""

    mode: str = "none"
    sizes: tuple[int, ...] = ()
    max_context: int | None = None
    source: str = "eager"

    def pad(self, count: int) -> int:
        """The captured size a step of `count` rows runs at (the next one up)."""
        return self.sizes[bisect_left(self.sizes, count)]

    def plan(self, query: Any, context: Any, tokens: int | None = None) -> Graphed | None:
        """The step's graph (None: eager). query, context: integer arrays, one entry per sequence;
        tokens: query's sum where the caller has it."""
        if self.mode == "none" or not len(query):
            return None
        if self.mode == "decode":
            if int(query.max()) != 1 or len(query) > self.sizes[-1]:
                return None
            if self.max_context is not None and int(context.max()) > self.max_context:
                return None
            return Graphed(self.pad(len(query)), True)
        tokens = int(query.sum()) if tokens is None else tokens
        return Graphed(self.pad(tokens), False) if tokens <= self.sizes[-1] else None

    def run_plans(self, keys: Any, steps: int) -> list[Graphed | None]:
        """The graph of each of `steps` decode-only steps of sequences at `keys` keys (one more
        per step): one plan for all unless the run crosses the context limit."""
        import numpy as np

        ones = np.ones(len(keys), dtype=np.int64)
        if self.mode != "decode":  # the plan reads the token count only, the same each step
            return [self.plan(ones, keys, len(keys))] * steps
        first, last = self.plan(ones, keys), self.plan(ones, keys + steps - 1)
        if first == last:
            return [first] * steps
        return [self.plan(ones, keys + j) for j in range(steps)]


EAGER = CudaGraphs()


def vllm_v0_graphs(max_num_seqs: int, max_capture_len: int = VLLM_V0_MAX_CAPTURE_LEN) -> CudaGraphs:
    """vLLM v0.6's decode graphs: sizes [1, 2, 4] + 8..256 up to _get_graph_batch_size(max_num_seqs),
    for steps whose longest sequence is at most max_capture_len (max_seq_len_to_capture)."""
    possible = [1, 2, 4] + [8 * i for i in range(1, 33)]
    top = max_num_seqs if max_num_seqs <= 2 else 4 if max_num_seqs <= 4 else -(-max_num_seqs // 8) * 8
    sizes = tuple(s for s in possible if s <= top) or (1,)
    return CudaGraphs("decode", sizes, max_capture_len, VLLM_V0_SOURCE.format(max_capture_len))


def vllm_v1_graphs(max_num_seqs: int, max_batched_tokens: int) -> CudaGraphs:
    """vLLM v1's piecewise graphs: [1, 2, 4] + 8..min(2 x max_num_seqs, 512), at most the token budget."""
    top = min(2 * max_num_seqs, 512)
    sizes = tuple(s for s in [1, 2, 4] + list(range(8, top + 1, 8)) if s <= max_batched_tokens) or (1,)
    return CudaGraphs("piecewise", sizes, None, VLLM_V1_SOURCE)


TRTLLM_SOURCE = ("TensorRT-LLM PyTorch backend: generation-only batches replay DecodingCUDAGraphRunner at "
                 "cuda_graph_config batch_sizes <= min(max_batch_size, max_num_tokens) (+ that limit, padding on), "
                 "padded to the next; context and mixed batches eager")
#: perf-overview.md's llm_options.yml (NVIDIA/TensorRT-LLM commit 00f37686), cuda_graph_config.batch_sizes.
TRTLLM_CAPTURE_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048, 4096, 8192)


def trtllm_graphs(max_num_seqs: int, max_batched_tokens: int) -> CudaGraphs:
    """TensorRT-LLM's decode graphs: the listed sizes up to min(max_batch_size, max_num_tokens),
    and that limit itself where a larger size was listed (padding on)."""
    top = min(max_num_seqs, max_batched_tokens)
    sizes = [size for size in TRTLLM_CAPTURE_SIZES if size <= top]
    if top not in sizes and top < TRTLLM_CAPTURE_SIZES[-1]:
        sizes.append(top)
    return CudaGraphs("decode", tuple(sizes), None, TRTLLM_SOURCE)


def sglang_graphs(max_num_seqs: int) -> CudaGraphs:
    """SGLang's decode graphs (its cuda_graph_runner.py captures decode batches; prefill runs eager): its capture
    sizes not read, vLLM v0's stand for them, as the SGLang tables assumed before serve had the engine
    (benchmarks/published_sglang_v030.py, published_sglang_h200.py)."""
    graphs = vllm_v0_graphs(max_num_seqs)
    return CudaGraphs(graphs.mode, graphs.sizes, graphs.max_context,
                      "SGLang's decode graphs, at vLLM v0.6's capture sizes (SGLang's own list not read): "
                      + graphs.source)


#: Per scheduler: its engine's default graphs, from (max_num_seqs, max_batched_tokens).
ENGINE_GRAPHS = {
    "vllm": lambda seqs, tokens: vllm_v1_graphs(seqs, tokens),
    "vllm-v0": lambda seqs, tokens: vllm_v0_graphs(seqs),
    "sarathi": lambda seqs, tokens: EAGER,  # microsoft/sarathi-serve: no CUDA graphs in the tree
    "orca": lambda seqs, tokens: EAGER,  # Orca, OSDI 2022: none described
    "trtllm": trtllm_graphs,
    "static": lambda seqs, tokens: EAGER,  # transformers generate(): eager
    "hf-fifo": lambda seqs, tokens: EAGER,  # transformers continuous batching: eager (CPU-proven)
    "hf-prefill-first": lambda seqs, tokens: EAGER,
    "sglang": lambda seqs, tokens: sglang_graphs(seqs),
}


def check_capture_len(max_capture_len: int | None, scheduler: str, choice: str) -> None:
    """serve --max-capture-len: a whole number of tokens, at least 1, read by vLLM v0's decode graphs
    alone (vLLM v1's piecewise graphs leave attention eager, so a context never sends a step eager)."""
    if max_capture_len is None:
        return
    if isinstance(max_capture_len, bool) or not isinstance(max_capture_len, int) or max_capture_len < 1:
        raise ConfigError(f"--max-capture-len must be a whole number of tokens, at least 1; got {show(max_capture_len)}.")
    if scheduler != "vllm-v0":
        raise ConfigError(f"--max-capture-len is vLLM v0's max_seq_len_to_capture, read by its decode graphs "
                          f"(--scheduler vllm-v0); the {scheduler} scheduler's engine has no such limit.")
    if choice == "off":
        raise ConfigError("--max-capture-len sets which decode steps replay a CUDA graph; --cuda-graphs off runs "
                          "none: drop one of them.")


def engine_graphs(choice: str, scheduler: str, max_num_seqs: int, max_batched_tokens: int,
                  hardware: Any, max_capture_len: int | None = None) -> CudaGraphs:
    """The graphs a replica runs: `auto` the engine's default (eager on a hardware without
    sm_count, a CPU's file: no CUDA there), `on` the same but an error where the engine has none,
    `off` eager. max_capture_len: vLLM v0's max_seq_len_to_capture (None: its default)."""
    if choice not in CUDA_GRAPHS:
        raise ConfigError(f"--cuda-graphs must be {CUDA_GRAPHS.listed()}, got {show(choice)}.")
    check_capture_len(max_capture_len, scheduler, choice)
    if choice == "off":
        return EAGER
    graphs = ENGINE_GRAPHS[scheduler](max_num_seqs, max_batched_tokens)
    if max_capture_len is not None:
        graphs = vllm_v0_graphs(max_num_seqs, max_capture_len)
    if choice == "on":
        if graphs.mode == "none":
            raise ConfigError(f"--cuda-graphs on: the {scheduler} scheduler's engine runs no CUDA graphs; "
                              "use auto or off.")
        if not hardware.sm_count:
            raise ConfigError(f"--cuda-graphs on needs a GPU; {hardware.name} has no sm_count.")
    return graphs if hardware.sm_count else EAGER
