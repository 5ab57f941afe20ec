"""transformers' own continuous-batching engine, run on the CPU and recorded step by step, so the
serving simulator's schedule (costmodel/serving) can be compared with a real engine's.

A tiny random Llama runs in transformers 5.24's ContinuousBatchingManager with a paged cache,
greedy decoding and no EOS, synchronous batching, no CUDA graphs and no block sharing: then the
engine is deterministic. The generation loop is driven here, one `_generation_loop_body` call per
step in this thread (the manager's own body, not a copy), so requests can arrive at given steps:
before step k every request whose arrival is <= the clock joins (the clock counts steps; an idle
engine jumps to the next arrival, as the simulator does). Hooks record, per step, the batch the
scheduler returned (request, query tokens), the free cache blocks when the forward runs, and the
requests that finished; `seconds` is each step's measured wall time and `faults` the minor page
faults the process took during it (resource.getrusage's ru_minflt, read outside the timed span):
a step whose tensors land on pages the C allocator had returned to the kernel pays the kernel's
first touch of each page (validate/FINDINGS.md, "Issue 19, round 7").
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass, field
from typing import Any

TINY_LLAMA = dict(vocab_size=101, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)


@dataclass(frozen=True)
class EngineRun:
    schedule: list[tuple[tuple[tuple[int, int], ...], int, tuple[int, ...]]]
    num_blocks: int
    max_batch_tokens: int
    seconds: list[float]
    faults: list[int] = field(default_factory=list)
    num_sectors: int = 0  # the pool's units: one per block when every layer is full attention


def tiny_model(seed: int = 0, **changes: Any) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(LlamaConfig(**{**TINY_LLAMA, **changes})).eval()


def tiny_windowed_model(window: int, hybrid: bool, seed: int = 0) -> Any:
    """TINY_LLAMA's sizes with sliding-window attention: a Qwen2 whose layer_types are
    [sliding, full] (hybrid: one sliding and one full allocator, a layer each) or a Mistral with a
    sliding_window and no layer_types (every layer slides: one sliding allocator)."""
    import torch
    from transformers import MistralConfig, MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    if hybrid:
        config = Qwen2Config(**TINY_LLAMA, layer_types=["sliding_attention", "full_attention"],
                             sliding_window=window, use_sliding_window=True)
        return Qwen2ForCausalLM(config).eval()
    return MistralForCausalLM(MistralConfig(**TINY_LLAMA, sliding_window=window)).eval()


def run_engine(requests: list[tuple[int, int, int]], *, scheduler: str = "fifo", block_size: int = 4,
               num_blocks: int = 16, max_batch_tokens: int = 16, max_requests: int = 8,
               safety_margin: float | None = None, model: Any = None, seed: int = 0) -> EngineRun:
    """Run requests (arrival step, prompt tokens, output tokens) through the engine; request i is
    named r{i}. Returns the recorded schedule, comparable with costmodel.serving's Timeline."""
    import random

    import torch
    from transformers import GenerationConfig
    from transformers.generation.configuration_utils import ContinuousBatchingConfig

    model = model or tiny_model(seed)
    generation = GenerationConfig(do_sample=False, eos_token_id=-1, max_new_tokens=1)
    config = ContinuousBatchingConfig(
        page_size=block_size, num_blocks=num_blocks, max_batch_tokens=max_batch_tokens,
        max_requests_per_batch=max_requests, scheduler_type=scheduler, safety_margin=safety_margin,
        use_async_batching=False, use_cuda_graph=False, allow_block_sharing=False,
        max_blocks_per_request=0, cpu_offload_space=0.0)
    manager = model.init_continuous_batching(generation_config=generation, continuous_batching_config=config)
    with torch.no_grad():
        processor = manager._create_batch_processor()
    manager.batch_processor, manager.current_batch = processor, 0
    cache = processor.cache
    blocks = {a.bytes_per_block for a in cache.cache_allocators.values()}
    if blocks != {cache.bytes_per_sector}:
        raise ValueError("choose a model whose cache block is a whole sector (bytes a multiple of 128).")

    scheduled: list[Any] = []
    original_schedule = processor.scheduler.schedule_batch

    def schedule_batch(token_budget: int, cache_budget: int) -> Any:
        out = original_schedule(token_budget, cache_budget)
        scheduled.append(out[0])
        return out

    steps: list[list[Any]] = []
    original_step = processor._generation_step

    def generation_step(model_: Any) -> None:
        batch = scheduled[-1]
        entries = tuple((int(f.state.request_id[1:]), f.query_length) for f in batch)
        free = int(cache.compute_free_capacity(relative=False)) // cache.bytes_per_sector
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.perf_counter()
        original_step(model_)
        seconds = time.perf_counter() - start
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        steps.append([entries, free, [f.state for f in batch], seconds, faults])

    processor.scheduler.schedule_batch = schedule_batch
    processor._generation_step = generation_step

    rng = random.Random(seed)
    order = sorted(range(len(requests)), key=lambda i: (requests[i][0], i))
    clock, next_index, records = 0, 0, []
    with torch.no_grad():
        while next_index < len(order) or processor.has_pending_requests() or not manager.input_queue.empty():
            while next_index < len(order) and requests[order[next_index]][0] <= clock:
                _add(manager, rng, order[next_index], requests[order[next_index]])
                next_index += 1
            if not processor.has_pending_requests() and manager.input_queue.empty():
                clock = requests[order[next_index]][0]
                continue
            done = len(steps)
            manager._generation_loop_body(processor, bootstrapping=False)
            if len(steps) == done:
                raise RuntimeError("the engine ran no step while requests were pending.")
            entries, free, states, seconds, faults = steps[-1]
            finished = tuple(int(s.request_id[1:]) for s in states if s.status.name == "FINISHED")
            records.append(((entries, free, finished), seconds, faults))
            clock += 1
    return EngineRun([r for r, _, _ in records], cache.num_blocks, cache.max_batch_tokens,
                     [s for _, s, _ in records], [f for _, _, f in records], cache.num_sectors)


def _add(manager: Any, rng: Any, index: int, request: tuple[int, int, int]) -> None:
    _, prompt, output = request
    vocab = manager.model.config.vocab_size
    manager.add_request(input_ids=[rng.randrange(vocab) for _ in range(prompt)], request_id=f"r{index}",
                        max_new_tokens=output)


def step_features(run: EngineRun, requests: list[tuple[int, int, int]], block_size: int) -> list[dict]:
    """What each recorded step of a run_engine(requests) was, for telling its misses apart: its
    query tokens and keys per sequence (what each request has cached after the step), `emitting`
    (the sequences whose logits the engine keeps: a prompt's last chunk and every decode token;
    input_outputs.py's logits_indices), `kind` (decode when every query is one token, else
    mixed), `first` (the run's first step), `joined` (a request's first chunk is in it),
    `after_finish` (a request finished in the step before), `blocks` (cache blocks the step's
    tokens open: the paged cache allocates them), `alone` (one sequence decoding alone: no mask)
    and `faults` (minor page faults during the step). A run whose requests were preempted (and
    recomputed) is refused."""
    cached: dict[int, int] = {}
    out, finished_before = [], False
    for index, (entries, _, finished) in enumerate(run.schedule):
        queries, keys, emitting, joined, blocks = [], [], 0, False, 0
        for request, q in entries:
            before = cached.get(request, 0)
            cached[request] = before + q
            if cached[request] > sum(requests[request][1:]):
                raise ValueError(f"request {request} ran more tokens than its prompt and output: it was "
                                 "preempted and recomputed, which step_features does not follow.")
            queries.append(q)
            keys.append(cached[request])
            emitting += cached[request] >= requests[request][1]
            joined = joined or before == 0
            blocks += -(-cached[request] // block_size) - -(-before // block_size)
        out.append({"queries": queries, "keys": keys, "emitting": emitting,
                    "kind": "decode" if max(queries) == 1 else "mixed", "first": index == 0,
                    "joined": joined, "after_finish": finished_before, "blocks": blocks,
                    "alone": queries == [1], "faults": run.faults[index] if run.faults else None})
        for request in finished:
            cached.pop(request, None)
        finished_before = bool(finished)
    return out
