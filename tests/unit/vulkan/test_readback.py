"""Outputs of a discrete GPU's directly mapped arena are read back through a
host-cached buffer (a copy recorded at the end of the command buffer):
same numbers, and the mapped arena is never read by the CPU."""

from __future__ import annotations

import numpy as np

from tests.unit.vulkan.test_transformer_fusion import SPLITK_CASES, _check, _spec, _splitk_step
from vknn.runtime.cpu.registry import kernel_for
from vknn.runtime.vulkan.executor import VulkanExecutor


def test_discrete_outputs_read_through_host_cached_copy(clean) -> None:  # type: ignore[no-untyped-def]
    op, m, n, k, cshape = SPLITK_CASES[0]
    step, ins = _splitk_step(op, m, n, k, cshape)
    specs = [_spec(a.shape) for a in ins]
    consts = {i: a for i, a in enumerate(ins) if i > 0}
    caps = clean.caps.with_(device_type="discrete")
    assert caps.has_device_local_host_visible  # direct mapping, as on ReBAR GPUs
    with VulkanExecutor(clean, [step], {0: specs[0]}, [9], consts, caps=caps) as ex:
        out_buf, _ = ex._host[9]
        assert out_buf is not ex.refs[9].buffer  # not the mapped arena
        assert ex._host[0][0] is ex.refs[0].buffer  # inputs are still written in place
        for rep in range(2):
            a = np.random.default_rng(rep).standard_normal(ins[0].shape).astype(np.float32)
            got = ex.run({0: a})[9]
            _check(got, kernel_for(op)(step, [a, *ins[1:]])[0], False)  # type: ignore[misc]
