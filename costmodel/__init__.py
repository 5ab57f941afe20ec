"""An analytic cost model for Transformers: parameters, FLOPs, memory and time, block by block,
every formula proven against real PyTorch code. The Python API (costmodel/api.py):

    import costmodel
    costmodel.estimate("llama2-7b", seq_len=4096, batch=8, dtype="bf16").to_dict()
    costmodel.sweep("llama2-7b", seq_len=[512, 2048], batch=[1, 8])
    costmodel.simulate("llama3-8b", hardware="h100-sxm", train=True, tokens=1e12)  # prints its text
    costmodel.plan("llama2-7b", gpus=[8, 16], tokens=1e12, price=2.5, rank_by="cost")
    costmodel.serve("llama3-8b", "h100-sxm", rate=5).summary()   # serving under load (docs/serving.md)

Importing the package loads nothing heavy: sympy, numpy and pandas are imported when a function
needs them.
"""

from .api import estimate, load_model, make_layout, make_workload, sweep
from .planning import plan
from .simulate_api import simulate

__all__ = ["estimate", "load_model", "make_layout", "make_workload", "plan", "serve", "simulate", "sweep"]


def __getattr__(name: str):
    """costmodel.serve, loaded when first asked for: the serving simulator imports numpy; and any
    submodule, imported when first named, as the docs call them after `import costmodel`
    (costmodel.verdict.verdict, costmodel.layout.Layout, costmodel.finetune.finetune_memory raised
    AttributeError until something else had imported them)."""
    if name == "serve":  # serving under load (costmodel/serving, docs/serving.md)
        from .serving import serve

        return serve
    import importlib
    import importlib.util

    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'costmodel' has no attribute {name!r}")
