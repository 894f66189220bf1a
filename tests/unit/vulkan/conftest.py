"""The device fixture of every Vulkan test module: `session_device`, the
process-wide device `vknn.Session` uses, opened with the validation layer on
(VKNN_VALIDATION, default on in tests) and checked after each test that uses
it: a test fails on any validation message it caused."""

import os

import pytest


@pytest.fixture
def session_device():  # type: ignore[no-untyped-def]
    os.environ.setdefault("VKNN_VALIDATION", "1")
    from vknn.runtime.vulkan.context import shared_device

    dev, _, why = shared_device()
    if dev is None:
        pytest.skip(f"no Vulkan device: {why}")
    start = len(dev.messages)
    yield dev
    new = dev.messages[start:]
    assert not new, "validation messages:\n" + "\n".join(map(str, new))
