"""Counts the aten ops one real Megatron-Core MoE layer (MoELayer, the all-to-all dispatcher) dispatches
in a forward and a backward, on a CPU (session 22; validate/FINDINGS.md "why Megatron MoE training rows
are too fast"): each is one call the host makes, so the count x a per-op host time is what the layer's
host work would cost where a sync keeps it from hiding under the GPU's.

Megatron-Core is not a dependency: point MEGATRON_SRC at a directory holding megatron/core
(NVIDIA/Megatron-LM d98e8a64dd was used). Without Transformer Engine the layer runs Megatron's own
modules: SequentialMLP (one GEMM per local expert and projection) and the unfused permute
(moe_permute_fusion False); the recipes' fused TE paths issue fewer, larger calls, so this is the
eager upper end. The dispatcher's CUDA side stream and event become no-ops on a CPU (they dispatch no
aten op); its sync point is "before_finish" here (ep = tp = 1), "before_ep_alltoall" under EP.

    MEGATRON_SRC=build/megatron_src PYTHONPATH=. python validate/moe_layer_host.py [--experts E] [--topk K]
        [--tokens N] [--hidden H] [--ffn F]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import types
from collections import Counter


def _import_megatron(src: str):
    """megatron.core from `src`; its paged-stash ops import triton at module level, which only that
    feature uses: stubbed where triton is missing."""
    sys.path.insert(0, src)
    try:
        import triton  # noqa: F401
    except ImportError:
        class _Absent(types.ModuleType):
            def __getattr__(self, name):
                if name.startswith("__"):
                    raise AttributeError(name)
                return None
        name = "megatron.core.transformer.moe.ops.paged_stash"
        sys.modules[name] = _Absent(name)
    import torch

    from megatron.core import parallel_state

    _cpu_stand_ins(torch)
    return parallel_state


def _cpu_stand_ins(torch) -> None:
    """On the CPU: the dispatcher's side stream and DtoH event as no-ops (they dispatch no aten op),
    and the router's weights kept on the CPU (router.py moves them to torch.cuda.current_device())."""
    class _Stream:
        def wait_stream(self, *_):
            pass

        def record_event(self):
            return types.SimpleNamespace(synchronize=lambda: None)

    class _Ctx:
        def __init__(self, *_):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *_):
            return False
    torch.cuda.Stream = _Stream
    torch.cuda.current_stream = lambda *a, **k: _Stream()
    torch.cuda.stream = _Ctx
    torch.cuda.current_device = lambda: "cpu"


def build_layer(args, device):
    import torch
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_config import TransformerConfig

    cfg = TransformerConfig(num_layers=1, hidden_size=args.hidden, num_attention_heads=16, ffn_hidden_size=args.ffn,
                            moe_ffn_hidden_size=args.ffn, num_moe_experts=args.experts, moe_router_topk=args.topk,
                            moe_token_dispatcher_type="alltoall", moe_grouped_gemm=False, moe_permute_fusion=False,
                            add_bias_linear=False, gated_linear_unit=True, activation_func=torch.nn.functional.silu,
                            use_cpu_initialization=True,
                            moe_router_load_balancing_type="aux_loss", moe_aux_loss_coeff=1e-3)
    spec = get_gpt_layer_local_spec(num_experts=args.experts, moe_grouped_gemm=False)
    layer = spec.submodules.mlp(cfg)
    return layer.to(device=device), cfg.params_dtype


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--experts", type=int, default=16)
    parser.add_argument("--topk", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--ffn", type=int, default=768)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    src = os.environ.get("MEGATRON_SRC")
    if not src or not os.path.isdir(os.path.join(src, "megatron", "core")):
        print("error: set MEGATRON_SRC to a directory holding megatron/core (NVIDIA/Megatron-LM)", file=sys.stderr)
        return 2
    parallel_state = _import_megatron(src)
    import torch
    import torch.distributed as dist
    from torch.utils._python_dispatch import TorchDispatchMode

    device = "cpu"  # the counts are the host's calls; the GPU is not needed
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29561")
    dist.init_process_group("gloo", rank=0, world_size=1)
    parallel_state.initialize_model_parallel()
    torch.manual_seed(0)
    layer, dtype = build_layer(args, device)
    x = torch.randn(args.tokens, 1, args.hidden, device=device, dtype=dtype, requires_grad=True)

    def step():
        out, _ = layer(x)
        out.backward(torch.ones_like(out))

    def _is_view(name: str) -> bool:
        return name.endswith(" (view)") or name == "aten::_unsafe_view"

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = Counter()

        def __torch_dispatch__(self, func, types_, args_=(), kwargs=None):
            self.ops[str(func._schema.name) + ("" if not func.is_view else " (view)")] += 1
            return func(*args_, **(kwargs or {}))

    step()  # a first pass: lazy state (the router's device move, the dispatcher's buffers)
    x.grad = None
    counts = {}
    with Count() as counter:  # the layer's forward alone
        out, _ = layer(x)
    counts["forward"] = counter.ops
    gradient = torch.ones_like(out)
    with Count() as counter:  # its backward alone (the output's gradient given)
        out.backward(gradient)
    counts["backward"] = counter.ops
    result = {"args": vars(args)}
    for phase, ops in counts.items():
        views = sum(n for name, n in ops.items() if _is_view(name))
        result[phase] = {"aten_ops": sum(ops.values()), "non_view_ops": sum(ops.values()) - views}
    result["aten_ops_per_pass"] = sum(sum(ops.values()) for ops in counts.values())
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as handle:
            handle.write(text)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
