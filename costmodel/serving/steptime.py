"""The seconds one engine step takes: a mix of prefill chunks and decode tokens, each sequence
with its own query tokens and context, timed from the cost tree's leaves.

This is the one place the serving simulator asks for time (the event loop only calls
StepTime.seconds and StepTime.decode_run). Both time models read the tree's "chunk" phase
(costmodel/tree.py: a decode step with n new tokens per sequence attending to c keys; n = 1 is
the decode step exactly) and split its leaves the same way:

- leaves whose work depends on the context (attention scores, softmax, weighted sum) are
  evaluated per sequence at (n = its query tokens, c = its keys);
- the other leaves (projections, FFN, norms, embeddings) do the same work per token whichever
  sequence it belongs to: evaluated once at b = 1, n = the step's tokens (weights read once);
- a context leaf that holds weights (naive MLA's projections: kv_b up-projects every key) reads
  them once per step, not once per sequence;
- the LM head runs on the tokens that emit a token (engines keep only their logits).

StepTime(..., time_model=None) picks the model as every command does
(costmodel.hardware.time_model_for): the kernel-level model where the hardware file has sm_count
(the SMs a GEMM's tiles fill) or a measured GEMM efficiency by rows (a CPU's), else the roofline.

The two models live in their own modules, each with its docstring: the kernel-level model in
kernel_steptime.py (KernelStepTime), the roofline in roofline_steptime.py (RooflineStepTime); the
base class both derive from, which picks one, in step_base.py. This module is where callers import
them from.

CUDA graphs (graphs.py; StepTime.with_graphs, as build_replica applies the engine's): a graphed
step runs its per-token leaves at the padded size, each leaf inside the graph paying graph_kernel_s
per kernel (KernelTimer(cuda_graphs=True); the roofline: no per-block overhead); the rest eager.

Speed: a decode sequence's context work is looked up in a table over c (one row per context: the
roofline's leaf quantities from one vectorised evaluation; the kernel model's per-kernel
seconds), the per-token leaves are kept by token count, chunks by (tokens, keys), so a step costs
a numpy sum. The kernel model reads no sympy per step: each leaf's kernels are fitted once as
affine in (n, c) from the tree and checked against it (LeafKernels); a leaf that is not affine
(the experts a token count touches) is read from the tree once per (n, c) it meets.
"""

from .kernel_steptime import KernelStepTime  # noqa: F401 (re-exported)
from .leaf_kernels import LeafKernels  # noqa: F401 (re-exported)
from .profile import check_tensor_parallel_groups, serving_profile  # noqa: F401 (re-exported)
from .roofline_steptime import RooflineStepTime  # noqa: F401 (re-exported)
from .step_base import QUANTITIES, StepTime  # noqa: F401 (re-exported)
