"""The kernel model's expert-parallel dispatch and combine beside a published per-exchange table
(session 25, validate/FINDINGS.md "The MoE rows' host time: the sources searched again").

arXiv:2603.07685 Table 7 times one dispatch and one combine of Megatron-Core's all-to-all
dispatcher and of HybridEP at DeepSeek-V3's width on GB200 and H100 (validate/ep_dispatch_table.json,
with its source and what it leaves open). This prints, per GPU, dispatcher and EP size, the
published time, the model's time for the same exchange and their ratio:

  all-to-all  collectives.collective_seconds("all_to_all") of tokens x top-k x hidden x bytes, the
              payload layout/communication.py's _all_to_all gives one dispatch (or combine);
  HybridEP    layout/experts.flex_seconds of each token once (_flex_dispatch's payload), as the
              kernel model times it (layout/time.py flex_dispatch): at HybridEP's measured rates where
              check_dispatcher_peers takes them (layout/hybridep_rates.py: GB200 in its NVLink domain,
              H100 across nodes), else flex_copies' expected copies over the inter-node link and NVLink.

    PYTHONPATH=. python validate/ep_dispatch_table.py

Nothing here enters the model.
"""

from __future__ import annotations

import json
from pathlib import Path

from costmodel.collectives import collective_seconds
from costmodel.hardware import load_hardware
from costmodel.layout.experts import check_dispatcher_peers, flex_seconds
from costmodel.layout.spec import Layout

TABLE = Path(__file__).with_name("ep_dispatch_table.json")


def table() -> dict:
    return json.loads(TABLE.read_text())


def model_us(hardware_name: str, dispatcher: str, ep: int, data: dict | None = None) -> float:
    """The model's microseconds for one dispatch (or combine: the same bytes) at the table's shape."""
    data = data or table()
    hardware = load_hardware(hardware_name)
    token = data["hidden"] * data["bytes_per_element"]
    if dispatcher == "alltoall":
        return collective_seconds(hardware, "all_to_all", data["tokens"] * data["top_k"] * token, ep, ep) * 1e6
    # the rates the kernel model's flex_dispatch takes for this group (one EP rank a GPU, as the table runs it)
    rates = check_dispatcher_peers(Layout(dp=ep, ep=ep, framework="megatron", zero=1, ep_dispatcher=dispatcher),
                                   hardware)
    return flex_seconds(hardware, data["tokens"] * token, data["experts"], data["top_k"], data["groups"],
                        data["groups_per_token"], ep, ep, rates) * 1e6


def rows() -> list[tuple[str, str, int, int, int, float]]:
    """(GPU, dispatcher, EP, published dispatch us, published combine us, model us)."""
    data = table()
    out = []
    for gpu, dispatchers in data["us"].items():
        for dispatcher, times in dispatchers.items():
            for i, ep in enumerate(data["ep"]):
                out.append((gpu, dispatcher, ep, times["dispatch"][i], times["combine"][i],
                            model_us(gpu, dispatcher, ep, data)))
    return out


def main() -> int:
    print("| GPU | dispatcher | EP | published dispatch us | published combine us | model us | "
          "dispatch / model | combine / model |")
    print("|---|---|---|---|---|---|---|---|")
    for gpu, dispatcher, ep, dispatch, combine, model in rows():
        print(f"| {gpu} | {dispatcher} | {ep} | {dispatch:,} | {combine:,} | {model:,.0f} | "
              f"{dispatch / model:.2f} | {combine / model:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
