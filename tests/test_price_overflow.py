"""A finite --price whose cost overflows (1e308 dollars a GPU-hour) is one error line and exit 2, as an
infinite one is: simulate's generation cost had raised a traceback, training's printed "$inf", plan --serve's
rows "inf" (costmodel/cost.check_dollars)."""

import pytest
from costmodel.config import ConfigError
from costmodel.cost import serving_cost, training_cost
from tests.cli_run import one_error_line

LINE = "error: --price 1e+308 dollars per GPU-hour makes the cost overflow; give a real price."


@pytest.mark.parametrize("args", [
    ["simulate", "--model", "llama2-7b", "--hardware", "h100-sxm", "--prompt", "64", "--gen", "8", "--price", "1e308"],
    ["simulate", "--model", "llama2-7b", "--hardware", "h100-sxm", "--train", "--seq-len", "512", "--tokens", "1e12",
     "--price", "1e308"],
])
def test_an_overflowing_price_is_one_line(args, capsys):
    assert one_error_line(args, capsys) == LINE


def test_the_formulas_refuse_an_infinite_cost_and_keep_a_finite_one():
    with pytest.raises(ConfigError, match="makes the cost overflow"):
        serving_cost(100.0, 2, 1e308)  # 2 GPUs x 1e308 an hour = inf
    with pytest.raises(ConfigError, match="makes the cost overflow"):
        training_cost(1e12, 1000.0, 8, 1.0, 1.0, 1e308)
    # 2 GPUs at $2 an hour over 100 tokens/s: $4 / 360,000 tokens = $11.11 a million
    assert serving_cost(100.0, 2, 2.0)["dollars_per_million_output_tokens"] == pytest.approx(4 / 360_000 * 1e6)


def test_a_price_beside_no_generated_tokens_is_one_line(capsys):
    # simulate --gen 0 --price 2 printed the prefill and dropped the price unread (the cost is per
    # generated token, and there are none)
    assert one_error_line(["simulate", "--model", "llama2-7b", "--hardware", "h100-sxm", "--prompt", "64", "--gen", "0",
                           "--price", "2"], capsys) == (
        "error: --price prices the generated tokens (dollars per million); --gen 0 generates none: give --gen N or "
        "drop --price.")
