"""The device fixtures of every Vulkan test module: `device` (one validated
device per module) and `clean` (asserts a test left no validation message),
defined once in test_vulkan_foundation.py."""

from tests.unit.vulkan.test_vulkan_foundation import clean, device  # noqa: F401
