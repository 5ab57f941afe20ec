"""validate/host_calls.py: the one rule the counting scripts (exllama_v1_ops.py, tinychat_ops.py) split a step's
calls by: a model of two layers less one of one is a layer's calls, one layer's model less them the step's own."""

from collections import Counter

from validate.host_calls import layer_split


def test_two_models_give_a_layers_calls_and_the_steps_own():
    one = Counter({"view": 7, "mm": 3, "argmax": 1})  # the step's own: 3 view, 1 mm, argmax
    two = Counter({"view": 11, "mm": 5, "argmax": 1})  # a layer: 4 view, 2 mm
    assert layer_split(one, two) == {"per_layer": 6, "per_step": 5, "by_op": {"mm": 2, "view": 4},
                                     "step_by_op": {"argmax": 1, "mm": 1, "view": 3}}
