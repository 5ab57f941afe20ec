"""Serving as engines run it: a discrete-event simulation of one engine replica (or several behind
a router) under a stream of requests.

    import costmodel
    run = costmodel.serve("llama3-8b", "h100-sxm", rate=5, requests=1000)   # or costmodel.serving.serve
    run.requests    # pandas DataFrame: one row per request (queueing, TTFT, TPOT, e2e, ...)
    run.summary()   # p50/p90/p99 and means, throughput, goodput (a dict; .to_dict(): `serve --json`)

The parts, each in its module and each replaceable on its own:
  workload.py   the requests: Poisson arrivals, a JSONL trace, synthetic length distributions
  kvcache.py    the paged KV cache: blocks of --block-size tokens, sized from the cost tree
  scheduler_state.py  a sequence's state and the moves every scheduler makes (blocks, preemption)
  schedulers.py one class per engine's policy (vLLM v1, Sarathi-Serve, Orca, static batching,
                transformers' FIFO and prefill-first), each with its source
  vllm_v0.py    vLLM v0's scheduler and its multi-step scheduling (--num-scheduler-steps)
  steptime.py   the seconds of one step's mix of prefill chunks and decode tokens, from the tree
                (step_base.py the base class; kernel_steptime.py and roofline_steptime.py the two models)
  engine.py     the event loop: arrivals, step start, step end
  metrics.py    per-request and aggregate figures
  replica.py    one replica: options checked, KV cache sized, scheduler class and step time built
  api.py        serve(): the requests, the replicas behind the router, the frames
  capacity.py   `plan --serve`: the deployments that meet an SLO at a rate, in a process pool
Pure Python and numpy (the step time evaluates the tree's lambdified leaves): no torch.
"""

from .api import ServeRun, serve

__all__ = ["ServeRun", "serve"]
