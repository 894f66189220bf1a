"""The device fixtures of every Vulkan test module: `device` (one validated
device per module) and `clean` (asserts a test left no validation message),
defined once in test_vulkan_foundation.py; and `session_device`, the
process-wide device `vknn.Session` uses, opened with the validation layer on
and checked after each test that uses it."""

import os

import pytest

from tests.unit.vulkan.test_vulkan_foundation import clean, device  # noqa: F401


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
