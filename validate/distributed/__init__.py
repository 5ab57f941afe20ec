"""Measurements of PyTorch's own distributed code on the CPU: the numbers a layout model must equal.

comm.py             a TorchDispatchMode that records the payload of every c10d collective and
                    point-to-point op, by process group ("tp", "dp", "pp") and by collective
launch.py           running a function on every rank: real gloo in spawned processes, or one rank of
                    the fake process group in this process
state.py            per-rank bytes of parameters, gradients and optimizer state (unique storages)
fsdp.py             FSDP2 fully_shard: shards, padding, all-gathers, reduce-scatters, FSDPMemTracker
tensor_parallel.py  DTensor parallelize_module (Colwise/Rowwise/SequenceParallel) on the reference
                    model and Hugging Face Llama
pipeline.py         torch.distributed.pipelining: GPipe, 1F1B, interleaved 1F1B on the reference model
mla_sequence_parallel.py  latent attention under Megatron-Core's sequence parallelism, its mappings
                    re-implemented as autograd functions: payloads, and gradients against one process

What each number means is written in validate/FINDINGS.md, section 10.
"""
