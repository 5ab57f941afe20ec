"""validate/host_calls.py: the one rule the counting scripts (exllama_v1_ops.py, tinychat_ops.py) split a step's
calls by: a model of two layers less one of one is a layer's calls, one layer's model less them the step's own."""

from collections import Counter

from validate.host_calls import layer_split


def test_two_models_give_a_layers_calls_and_the_steps_own():
    one = Counter({"view": 7, "mm": 3, "argmax": 1})  # the step's own: 3 view, 1 mm, argmax
    two = Counter({"view": 11, "mm": 5, "argmax": 1})  # a layer: 4 view, 2 mm
    assert layer_split(one, two) == {"per_layer": 6, "per_step": 5, "by_op": {"mm": 2, "view": 4},
                                     "step_by_op": {"argmax": 1, "mm": 1, "view": 3}}


# wt46_eagerhost (session 46): one counting rule whatever mode the counted code runs in
def test_a_composite_op_counts_as_its_decomposition_under_inference_mode_and_no_grad():
    """TinyChat's models run under @torch.inference_mode, where a TorchDispatchMode sees nn.Linear as one aten::linear;
    under no_grad (calibrate.module_seconds_per_op's count, the op time's units) as t, view, mm, _unsafe_view.
    torch.profiler shows the dispatcher running the same calls in both modes: 11 for a bias-free nn.Linear on a (1, 1,
    d) activation (linear, t, transpose, as_strided, matmul, reshape, view, mm, resolve_conj twice, _unsafe_view)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from validate.host_calls import Calls, mode

    linear, norm = torch.nn.Linear(24, 40, bias=False), torch.nn.LayerNorm(24)
    x = torch.randn(1, 1, 24)
    seen, profiled = {}, {}
    for context in (torch.no_grad, torch.inference_mode):
        record = Calls()
        record.on = True
        with context():
            with mode(record):
                linear(x), norm(x), x.float(), x.half(), x.reshape(24)
            with profile(activities=[ProfilerActivity.CPU]) as trace:
                linear(x)
        seen[context.__name__] = dict(record.calls)
        profiled[context.__name__] = [event.name for event in trace.events() if event.name.startswith("aten::")]
    assert seen["no_grad"] == seen["inference_mode"] == {"t": 1, "view": 2, "mm": 1, "_unsafe_view": 1,
                                                         "native_layer_norm": 1, "_to_copy": 1}  # x.float(): none
    assert profiled["no_grad"] == profiled["inference_mode"]
    assert len(profiled["inference_mode"]) == 11 and profiled["inference_mode"][0] == "aten::linear"
