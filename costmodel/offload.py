"""ZeRO-Offload and ZeRO-Infinity for full training: what moves off the GPU, where it goes, and what
crosses PCIe (and NVMe) each step; beside it, DeepSpeed's own estimators' figures.

DeepSpeed (the framework whose conventions a layout with --framework deepspeed follows: bf16
weights and gradients, fp32 master weights and AdamW moments, 2 + 2 + 12 bytes per parameter)
offloads with `zero_optimization.offload_optimizer` and `offload_param` (device cpu or nvme):

  --offload optimizer   (ZeRO-Offload; ZeRO 1, 2 or 3) each rank's optimizer partition (fp32
                        master weights and moments, o bytes per parameter) and its update run on
                        the host; the reduced gradient partition is copied there and kept in fp32
                        (4 bytes per parameter). On the GPU: the 16-bit weights as the ZeRO stage
                        shards them, no optimizer state, and no gradient partition under ZeRO 2/3
                        (ZeRO 1 keeps the full 16-bit gradients). The reduce buckets are not modelled,
                        as DeepSpeed's estimators leave them out.
  --offload params      (ZeRO-Infinity; ZeRO 3 only) the optimizer as above, and the 16-bit
                        parameter partition too: the GPU holds only the gathered layers (the
                        current and the prefetched one, as ZeRO 3 does without offload).
  --offload-device nvme the offloaded state lives on NVMe (DeepSpeed: ZeRO 3 only); the host keeps
                        the fp32 gradient partition (and the swap buffers, not modelled).

Traffic per step and rank (S: the rank's partition of parameters, ceil(params / dp)):
  PCIe   optimizer offload: the 16-bit gradient partition down (g S) and the updated 16-bit
         weights back up (w S). Parameters offloaded: the partition is read for the forward and
         again for the backward (2 w S; a third time under full recomputation, not counted) and
         the gradients go down (g S); updated weights stay on the host.
  NVMe   the optimizer state read and written back (2 o S); offloaded parameters read twice and
         the updated ones written (3 w S).

Host memory per node is the most loaded rank's times the ranks on a node (--gpus-per-node,
default 8, or fewer when the layout has fewer GPUs): an upper bound where stages differ.
"""

from __future__ import annotations

import math
from typing import Any

from .config import ConfigError
from .spec import DTYPE_BYTES, OFFLOAD_DEVICES, OFFLOADS

FP32 = DTYPE_BYTES["fp32"]  # bytes of the gradient partition DeepSpeed keeps on the host for its CPU Adam

#: DeepSpeed's model-state estimators, read from the release whose functions the tests call
#: through recorded outputs (tests/test_offload.py's DEEPSPEED_CASES).
#: Why a timed command refuses --offload: an offloaded step is sized here, not timed (`simulate --offload
#: params`, the change `estimate --hardware` offers, read "No such option '--offload'.", no word of where it is read).
UNTIMED = ("DeepSpeed's offload is sized, not timed: the host's optimizer update and a step's PCIe traffic are not "
           "modelled; `estimate --hardware H` with the layout and --offload gives its GPU and host memory "
           "(docs/finetuning.md), and plan names the offload that fits without ranking it.")

DEEPSPEED = {
    "version": "0.19.8",
    "source": "deepspeed/runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs and "
              "deepspeed/runtime/zero/stage3.py estimate_zero3_model_states_mem_needs (PyPI sdist 0.19.8)",
    "additional_buffer_factor": 1.5,
}


def check(layout: Any) -> None:
    """A layout's offload options, or one sentence saying why DeepSpeed would refuse them."""
    from .config import show

    if layout.offload not in OFFLOADS:
        raise ConfigError(f"layout: offload must be one of {', '.join(OFFLOADS)}, got {show(layout.offload)}.")
    if layout.offload_device not in OFFLOAD_DEVICES:
        raise ConfigError(f"layout: offload device must be one of {', '.join(OFFLOAD_DEVICES)}, "
                          f"got {show(layout.offload_device)}.")
    if layout.gpus_per_node < 1:
        raise ConfigError(f"layout: --gpus-per-node must be at least 1, got {show(layout.gpus_per_node)}.")
    if layout.offload == "none":
        if layout.offload_device != "cpu" or layout.gpus_per_node != 8:
            given = "--offload-device" if layout.offload_device != "cpu" else "--gpus-per-node"
            raise ConfigError(f"layout: {given} needs --offload optimizer or params.")
        return
    if layout.framework != "deepspeed":
        raise ConfigError(f"layout: --offload is DeepSpeed's ZeRO-Offload/Infinity; use --framework deepspeed, "
                          f"not {layout.framework}.")
    if layout.zero < 1:
        raise ConfigError("layout: --offload needs ZeRO (--zero 1, 2 or 3): DeepSpeed offloads the optimizer's partition.")
    if layout.offload == "params" and layout.zero != 3:
        raise ConfigError("layout: --offload params (ZeRO-Infinity) needs --zero 3.")
    if layout.offload_device == "nvme" and layout.zero != 3:
        raise ConfigError("layout: --offload-device nvme needs --zero 3 (DeepSpeed offloads to NVMe only under ZeRO 3).")


def device_state(state: dict[str, int], layout: Any) -> dict[str, int]:
    """A rank's weights, gradients and optimizer bytes on the GPU once the layout offloads."""
    if layout.offload == "none":
        return state
    out = dict(state, optimizer=0)
    if layout.zero >= 2:
        out["gradients"] = 0
    if layout.offload == "params":
        out["weights"] = 0
    return out


def offloaded(layout: Any, params: int, bytes_per_param: dict[str, int]) -> dict[str, Any]:
    """Host and NVMe bytes per rank and per node, and PCIe and NVMe bytes per step per rank, for a
    rank whose stage holds `params` parameters (bytes_per_param: weights, gradients, optimizer)."""
    w, g, o = (bytes_per_param[k] for k in ("weights", "gradients", "optimizer"))
    shard = math.ceil(params / layout.dp)
    params_off = layout.offload == "params"
    nvme = layout.offload_device == "nvme"
    state = o * shard + (w * shard if params_off else 0)  # what the chosen device holds
    host = FP32 * shard + (0 if nvme else state)
    pcie = (2 * w * shard + g * shard) if params_off else (g * shard + w * shard)
    nvme_traffic = (2 * o * shard + (3 * w * shard if params_off else 0)) if nvme else 0
    ranks = min(layout.gpus_per_node, layout.gpus)
    return {
        "offload": layout.offload, "device": layout.offload_device, "partition_params": shard,
        "host_bytes_per_rank": host, "nvme_bytes_per_rank": state if nvme else 0,
        "ranks_per_node": ranks, "nodes": math.ceil(layout.gpus / layout.gpus_per_node),
        "host_bytes_per_node": host * ranks, "nvme_bytes_per_node": (state if nvme else 0) * ranks,
        "pcie_bytes_per_step": pcie, "nvme_bytes_per_step": nvme_traffic,
    }


# -- DeepSpeed's estimators, as written there ---------------------------------------------------


def deepspeed_zero2(total_params: int, num_gpus_per_node: int = 1, num_nodes: int = 1,
                    cpu_offload: bool = True, additional_buffer_factor: float = 1.5) -> tuple[int, int]:
    """(host bytes per node, bytes per GPU) of DeepSpeed's estimate_zero2_model_states_mem_needs."""
    total_gpus = num_nodes * num_gpus_per_node
    if cpu_offload:
        gpu_mem = 2 * total_params
        cpu_mem = total_params * max(4 * total_gpus, 16) * additional_buffer_factor
    else:
        gpu_mem = 2 * total_params + int(18 * total_params / total_gpus)
        cpu_mem = total_params * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu_mem), int(gpu_mem)


def deepspeed_zero3(total_params: int, largest_layer_params: int, num_gpus_per_node: int = 1,
                    num_nodes: int = 1, cpu_offload: bool = True, cpu_offload_params: bool = True,
                    zero_init: bool = True, additional_buffer_factor: float = 1.5) -> tuple[int, int, int]:
    """(host bytes per node, bytes per GPU, the largest layer's bytes) of DeepSpeed's
    estimate_zero3_model_states_mem_needs."""
    total_gpus = num_nodes * num_gpus_per_node
    gpus_factor = 1 / num_nodes
    largest_layer_memory = 4 * largest_layer_params
    if cpu_offload:
        if cpu_offload_params:
            gpu_mem = largest_layer_memory
            per_param = 18 * gpus_factor if zero_init else max(4 * num_gpus_per_node, 18 * gpus_factor)
        else:
            gpu_mem = largest_layer_memory + int(2 * total_params / total_gpus)
            per_param = 16 * gpus_factor if zero_init else max(4 * num_gpus_per_node, 16 * gpus_factor)
        cpu_mem = total_params * per_param * additional_buffer_factor
    else:
        gpu_mem = largest_layer_memory + int(18 * total_params / total_gpus)
        cpu_mem = (largest_layer_params * 4 * num_gpus_per_node if zero_init
                   else total_params * 4 * num_gpus_per_node) * additional_buffer_factor
    return int(cpu_mem), int(gpu_mem), largest_layer_memory


def deepspeed_figures(layout: Any, total_params: int, largest_module_params: int | None) -> dict[str, Any]:
    """What DeepSpeed's estimator for this ZeRO stage and offload prints for the model (zero_init,
    the default buffer factor): host bytes per node and bytes per GPU, for model states only.
    ZeRO 3's needs the largest module, which the tree may not know (None): then only why."""
    if layout.zero == 3 and largest_module_params is None:
        return {"omitted": "its ZeRO-3 estimate needs the largest module, and here a block inside a layer "
                           "may hold more than the vocabulary table", **DEEPSPEED}
    nodes = math.ceil(layout.gpus / layout.gpus_per_node)
    per_node = min(layout.gpus_per_node, layout.gpus)
    offload = layout.offload != "none"
    if layout.zero == 3:
        cpu, gpu, _ = deepspeed_zero3(total_params, largest_module_params, per_node, nodes,
                                      cpu_offload=offload, cpu_offload_params=layout.offload == "params")
    else:
        cpu, gpu = deepspeed_zero2(total_params, per_node, nodes, cpu_offload=offload)
    return {"host_bytes_per_node": cpu, "bytes_per_gpu": gpu, "total_params": total_params,
            "largest_layer_params": largest_module_params, "gpus_per_node": per_node, "nodes": nodes,
            **DEEPSPEED}
