"""An analytic cost model for Transformers: parameters, FLOPs, memory and time, block by block,
every formula proven against real PyTorch code. The Python API (costmodel/api.py):

    import costmodel
    costmodel.estimate("llama2-7b", seq_len=4096, batch=8, dtype="bf16").to_dict()
    costmodel.sweep("llama2-7b", seq_len=[512, 2048], batch=[1, 8])
    costmodel.serve("llama3-8b", "h100-sxm", rate=5).summary()   # serving under load (docs/serving.md)

Importing the package loads nothing heavy: sympy, numpy and pandas are imported when a function
needs them.
"""

from .api import estimate, load_model, make_layout, make_workload, serve, sweep

__all__ = ["estimate", "load_model", "make_layout", "make_workload", "serve", "sweep"]
