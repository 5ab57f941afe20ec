"""The embedding's dense weight gradient, priced as the bytes each training micro-batch's backward moves for it
on the rank that holds the embedding (the first pipeline stage; on one device without a layout,
roofline_training.training_step adds the zeroed table to the embedding leaves' bytes), beside the rows' scatter the embedding
block's own backward already counts (blocks/embedding.py: twice the forward's gather). Memory-bound, on the
compute stream, at the step's memory-bound rate; StepTime.microbatch_accumulation adds it to each micro-batch.

Read in the code the frameworks run:
  torch's embedding backward on CUDA (pytorch/pytorch d2999467 aten/src/ATen/native/cuda/Embedding.cu
      embedding_dense_backward_cuda: `auto grad_weight = at::zeros({num_weights, grad_.size(-1)},
      grad_.options())` on its small-batch path (num_indices <= 3072), and EmbeddingBackwardKernel.cu
      embedding_backward_cuda_kernel the same `at::zeros` on the sorted path every training batch here takes):
      the whole (rows x hidden) gradient of the table the rank holds is written as zeros before the
      tokens' rows are added in                                           write e a table element
      (Megatron-Core core_v0.6.0's `self.weight[masked_input]`, its deterministic path in r0.8.0, is
      aten.index, whose backward is index_put_ into `grad.new_zeros(self.sizes())`: the same zeroed table;
      r0.8.0's F.embedding is the above: megatron/core/tensor_parallel/layers.py VocabParallelEmbedding
      .forward lines 230-234 at baf94af3)
  Megatron-Core's DistributedDataParallel (framework megatron, ZeRO 0 or 1, its own flat buffers: not
      nanotron's or InternLM's ZeRO-1, Layout.zero_optimizer), the hook
      each parameter's AccumulateGrad fires (megatron/core/distributed/distributed_data_parallel.py
      _make_param_hook, line 224 at baf94af3, line 199 at cac60ce4): `param.main_grad.add_(param.grad.data)`
      then `param.grad = None`, every micro-batch: read e, read g, write g a table element
      (g the gradient buffer's bytes, fp32 under Megatron-LM's bf16 default: bytes.gradients)
e is the parameter's dtype (the workload's; fp32 under torch.autocast, whose parameters are fp32).
The tables are every parameter of the model's "embedding" part on the rank: the vocabulary's (its tp
shard under a vocabulary-parallel embedding) and, where the model has them, learned positions' and token
types' (each an nn.Embedding, the same backward); a norm inside that part (BERT's, 2 x hidden) counts as a
table too (under 1e-4 of it). Not priced here: what other frameworks do with the gradient after (FSDP2's
reduce-scatter copy and DeepSpeed's bucket copies are their own rules); a tied embedding at pp 1, where
autograd adds the head's weight gradient to this one before the hook (an add of two tables, e + e + e),
is priced as an untied one. Assumed: the NeMo 24.07 rows (Apex's DistributedFusedAdam, whose own grad hook
copies or adds each gradient into its buckets: not read) as Megatron-Core's hook. nanotron's ZeRO-0 rows
(framework megatron, the flat default) take the add too, as nanotron's FP32GradientAccumulator runs it
(huggingface/nanotron c2528430 src/nanotron/optim/gradient_accumulator.py lines 219 and 341: each gradient
added into its fp32 buffer); its ZeRO-1 rows (zero_optimizer nanotron) the zero alone, as InternLM's.
"""

from __future__ import annotations

from typing import Any

FP32 = 4


def zeroed_table_bytes(tables: float, element: int) -> float:
    """torch's zeroed table gradient each backward: e bytes a table element (one rule for both step paths: the
    layouts' StepTime and the single device's roofline_training.training_step)."""
    return tables * element


def dense_grad_bytes(estimate: Any, stage: Any, autocast: bool = False) -> int:
    """Bytes one micro-batch's backward moves for the embedding's dense gradient on this stage's rank:
    torch's zeroed table (e a table element) and, on Megatron-Core's DDP buffers, the hook's add into
    main_grad (e + 2 g); 0 off the first stage and outside training."""
    if estimate.phase != "train" or not stage.first:
        return 0
    tables = int(estimate.part("embedding", "params"))
    element = FP32 if autocast else estimate.workload.bytes_per_element
    added = 0
    layout = estimate.layout
    if layout.framework == "megatron" and layout.zero <= 1 and layout.zero_optimizer == "flat":
        added = tables * (element + 2 * int(estimate.numbers["bytes.gradients"]))
    return int(zeroed_table_bytes(tables, element)) + added
