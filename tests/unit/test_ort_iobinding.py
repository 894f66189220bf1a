"""onnxruntime's io-binding tests (onnxruntime/test/python/
onnxruntime_test_python_iobinding.py, microsoft/onnxruntime at 08ee6fc7; one
test from its newer version),
adapted to `vknn`: 'cuda' is 'vulkan', and the raw pointers of bind_input /
bind_output are the data_ptr() of live 'vulkan' OrtValues. Then what VKNN
adds: device outputs feeding the next session and a batch loop that keeps
its inputs on the device, checked to cross the host only where they must."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper

import vknn as onnxrt
from tests.unit import ort_models as M
from tests.unit.vulkan.conftest import session_device  # noqa: F401
from vknn.runtime import executable
from vknn.runtime.vulkan import dtypes

pytestmark = pytest.mark.usefixtures("session_device")


@pytest.fixture
def session(tmp_path: Path) -> Any:
    path = M.save(M.mul_1(), tmp_path, "mul_1.onnx")
    return onnrt_session(path)


def onnrt_session(path: str) -> Any:
    return onnxrt.InferenceSession(path, providers=onnxrt.get_available_providers())


def create_ortvalue_input_on_gpu() -> Any:
    return onnxrt.OrtValue.ortvalue_from_numpy(M.X32, "vulkan", 0)


def create_ortvalue_alternate_input_on_gpu() -> Any:
    return onnxrt.OrtValue.ortvalue_from_numpy(M.X32 * 2, "vulkan", 0)


def create_uninitialized_ortvalue_input_on_gpu() -> Any:
    return onnxrt.OrtValue.ortvalue_from_shape_and_type([3, 2], np.float32, "vulkan", 0)


EXPECTED_ALTERNATE = np.array([[2.0, 8.0], [18.0, 32.0], [50.0, 72.0]], dtype=np.float32)


def test_bind_input_to_cpu_arr(session) -> None:  # type: ignore[no-untyped-def]
    io_binding = session.io_binding()
    io_binding.bind_cpu_input("X", M.X32)
    io_binding.bind_output("Y")
    session.run_with_iobinding(io_binding)
    io_binding.synchronize_outputs()
    assert np.array_equal(M.MUL_EXPECTED, io_binding.copy_outputs_to_cpu()[0])


DTYPES = [np.float32, np.float64, np.int32, np.uint32, np.int64, np.uint64, np.int16,
          np.uint16, np.int8, np.uint8, np.float16, np.bool_]  # fmt: skip
DEVICE_DTYPES = [np.float32, np.int32, np.int64, np.int16, np.uint16, np.int8, np.uint8,
                 np.float16, np.bool_]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
def test_bind_input_types(dtype) -> None:  # type: ignore[no-untyped-def]
    from onnx.helper import np_dtype_to_tensor_dtype

    x = np.arange(8).reshape((-1, 2)).astype(dtype)
    model = M.identity(np_dtype_to_tensor_dtype(x.dtype), [None, x.shape[1]])
    sess = onnxrt.InferenceSession(model.SerializeToString())
    places = ["cpu", "vulkan"] if dtype in DEVICE_DTYPES else ["cpu"]
    for place in places:
        bind = sess.io_binding()
        bind.bind_ortvalue_input("X", onnxrt.OrtValue.ortvalue_from_numpy(x, place, 0))
        bind.bind_output("Y", place)
        sess.run_with_iobinding(bind)
        ortvalue = bind.get_outputs()[0]
        assert ortvalue.device_name() == place
        y = ortvalue.numpy()
        assert y.dtype == x.dtype
        np.testing.assert_array_equal(x, y)


ONNX_TYPES = [T.FLOAT, T.UINT8, T.INT8, T.UINT16, T.INT16, T.INT32, T.INT64, T.BOOL,
              T.FLOAT16, T.DOUBLE, T.UINT32, T.UINT64]  # fmt: skip


@pytest.mark.parametrize("onnx_dtype", ONNX_TYPES)
def test_bind_onnx_types_supported_by_numpy(onnx_dtype) -> None:  # type: ignore[no-untyped-def]
    """From the newer upstream version of the file (at 6db7bd80): pointers of
    host OrtValues, element types given as ONNX TensorProto types."""
    from onnx.helper import tensor_dtype_to_np_dtype

    x = np.arange(8).reshape((-1, 2)).astype(tensor_dtype_to_np_dtype(onnx_dtype))
    sess = onnxrt.InferenceSession(M.identity(onnx_dtype, [None, 2]).SerializeToString())
    places = ["cpu", "vulkan"] if x.dtype in DEVICE_DTYPES else ["cpu"]
    for place in places:
        ort_value_x = onnxrt.OrtValue.ortvalue_from_numpy(x, place, 0)
        ort_value_y = onnxrt.OrtValue.ortvalue_from_shape_and_type(x.shape, onnx_dtype, place, 0)
        bind = sess.io_binding()
        bind.bind_input("X", place, 0, onnx_dtype, x.shape, ort_value_x.data_ptr())
        bind.bind_output("Y", place, 0, onnx_dtype, x.shape, ort_value_y.data_ptr())
        sess.run_with_iobinding(bind)
        np.testing.assert_array_equal(x, ort_value_y.numpy())


def test_bind_input_only(session) -> None:  # type: ignore[no-untyped-def]
    value = create_ortvalue_input_on_gpu()
    io_binding = session.io_binding()
    io_binding.bind_input("X", "vulkan", 0, np.float32, [3, 2], value.data_ptr())
    io_binding.synchronize_inputs()
    io_binding.bind_output("Y")
    session.run_with_iobinding(io_binding)
    io_binding.synchronize_outputs()
    assert np.array_equal(M.MUL_EXPECTED, io_binding.copy_outputs_to_cpu()[0])


def test_bind_input_and_preallocated_output(session) -> None:  # type: ignore[no-untyped-def]
    value = create_ortvalue_input_on_gpu()
    io_binding = session.io_binding()
    io_binding.bind_input("X", "vulkan", 0, np.float32, [3, 2], value.data_ptr())
    output = create_uninitialized_ortvalue_input_on_gpu()
    io_binding.bind_output("Y", "vulkan", 0, np.float32, [3, 2], output.data_ptr())
    io_binding.synchronize_inputs()
    session.run_with_iobinding(io_binding)
    io_binding.synchronize_outputs()
    assert np.array_equal(M.MUL_EXPECTED, io_binding.copy_outputs_to_cpu()[0])
    # VKNN wrote into the pre-allocated buffer
    assert np.array_equal(M.MUL_EXPECTED, output.numpy())


def test_bind_input_and_non_preallocated_output(session) -> None:  # type: ignore[no-untyped-def]
    io_binding = session.io_binding()
    first = create_ortvalue_input_on_gpu()
    io_binding.bind_input("X", "vulkan", 0, np.float32, [3, 2], first.data_ptr())
    io_binding.bind_output("Y", "vulkan")
    io_binding.synchronize_inputs()
    session.run_with_iobinding(io_binding)
    io_binding.synchronize_outputs()
    for _ in range(2):  # get_outputs may be called again
        ort_outputs = io_binding.get_outputs()
        assert len(ort_outputs) == 1 and ort_outputs[0].device_name() == "vulkan"
        assert np.array_equal(M.MUL_EXPECTED, ort_outputs[0].numpy())
    alternate = create_ortvalue_alternate_input_on_gpu()
    io_binding.bind_input("X", "vulkan", 0, np.float32, [3, 2], alternate.data_ptr())
    session.run_with_iobinding(io_binding)
    ort_outputs = io_binding.get_outputs()
    assert ort_outputs[0].device_name() == "vulkan"
    assert np.array_equal(EXPECTED_ALTERNATE, ort_outputs[0].numpy())


def test_bind_input_and_bind_output_with_ortvalues(session) -> None:  # type: ignore[no-untyped-def]
    io_binding = session.io_binding()
    io_binding.bind_ortvalue_input("X", create_ortvalue_input_on_gpu())
    output_ortvalue = create_uninitialized_ortvalue_input_on_gpu()
    io_binding.bind_ortvalue_output("Y", output_ortvalue)
    session.run_with_iobinding(io_binding)
    assert np.array_equal(M.MUL_EXPECTED, output_ortvalue.numpy())
    io_binding.bind_ortvalue_input("X", create_ortvalue_alternate_input_on_gpu())
    session.run_with_iobinding(io_binding)
    assert np.array_equal(EXPECTED_ALTERNATE, output_ortvalue.numpy())


# -- VKNN: device-resident tensors skip the host ---------------------------------


@pytest.fixture
def host_crossings(monkeypatch) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Counts of host conversions (uploads and readbacks) while the real ones run."""
    counts = {"to_device": 0, "numpy": 0}
    real_to, real_numpy = dtypes.to_device, executable.DeviceTensor.numpy

    def to_device(*a, **k):  # type: ignore[no-untyped-def]
        counts["to_device"] += 1
        return real_to(*a, **k)

    def numpy(self):  # type: ignore[no-untyped-def]
        counts["numpy"] += 1
        return real_numpy(self)

    monkeypatch.setattr(dtypes, "to_device", to_device)
    monkeypatch.setattr(executable.DeviceTensor, "numpy", numpy)
    return counts


def _chain_models() -> tuple[bytes, bytes]:
    a = M._model([helper.make_node("Relu", ["X"], ["H"])],
                 [M.vi("X", T.FLOAT, [4, 8])], [M.vi("H", T.FLOAT, [4, 8])])  # fmt: skip
    b = M._model([helper.make_node("Sigmoid", ["H"], ["Y"])],
                 [M.vi("H", T.FLOAT, [4, 8])], [M.vi("Y", T.FLOAT, [4, 8])])  # fmt: skip
    return a.SerializeToString(), b.SerializeToString()


def test_output_of_one_session_feeds_the_next_on_the_device(host_crossings) -> None:  # type: ignore[no-untyped-def]
    a_bytes, b_bytes = _chain_models()
    vk = ["VulkanExecutionProvider"]
    a, b = (
        onnxrt.InferenceSession(a_bytes, providers=vk),
        onnxrt.InferenceSession(b_bytes, providers=vk),
    )
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    want = 1 / (1 + np.exp(-np.maximum(x, 0)))
    xv = onnxrt.OrtValue.ortvalue_from_numpy(x, "vulkan", 0)
    host_crossings.update(to_device=0, numpy=0)
    ba, bb = a.io_binding(), b.io_binding()
    ba.bind_ortvalue_input("X", xv)
    ba.bind_output("H", "vulkan")
    a.run_with_iobinding(ba)
    bb.bind_ortvalue_input("H", ba.get_outputs()[0])
    bb.bind_output("Y", "vulkan")
    b.run_with_iobinding(bb)
    assert host_crossings == {"to_device": 0, "numpy": 0}  # never crossed the host
    np.testing.assert_allclose(bb.get_outputs()[0].numpy(), want, rtol=1e-5, atol=1e-6)


def test_batch_loop_keeps_inputs_on_the_device(tmp_path, host_crossings) -> None:  # type: ignore[no-untyped-def]
    sess = onnrt_session(M.save(M.mul_1(), tmp_path, "mul_1.onnx"))
    xs = [M.X32 + i for i in range(5)]
    values = [onnxrt.OrtValue.ortvalue_from_numpy(x, "vulkan", 0) for x in xs]
    out = create_uninitialized_ortvalue_input_on_gpu()
    binding = sess.io_binding()
    binding.bind_ortvalue_output("Y", out)
    got = []
    for v in values:
        host_crossings.update(to_device=0, numpy=0)
        binding.bind_ortvalue_input("X", v)
        sess.run_with_iobinding(binding)
        assert host_crossings == {"to_device": 0, "numpy": 0}
        got.append(out.numpy())
    for x, y in zip(xs, got, strict=True):
        np.testing.assert_array_equal(y, x * M.W_MUL)
    # The same binding again and again: one recorded copy program per direction, reused.
    exe = sess._session.bucket.executable
    before = sum(len(sc.copies) for c in exe._all for sc in c.segments.values())
    for _ in range(3):
        sess.run_with_iobinding(binding)
        np.testing.assert_array_equal(out.numpy(), xs[-1] * M.W_MUL)
    after = sum(len(sc.copies) for c in exe._all for sc in c.segments.values())
    assert after == before <= 8


def test_low_precision_session_reads_a_float32_device_tensor(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Storage differs (fp16 inside, fp32 bound): the value goes through the host, right."""
    path = M.save(M.mul_1(), tmp_path, "mul_1.onnx")
    sess = onnxrt.InferenceSession(path, providers=[("VulkanExecutionProvider",
                                                     {"precision": "low"})])  # fmt: skip
    binding = sess.io_binding()
    binding.bind_ortvalue_input("X", create_ortvalue_input_on_gpu())
    out = create_uninitialized_ortvalue_input_on_gpu()
    binding.bind_ortvalue_output("Y", out)
    sess.run_with_iobinding(binding)
    np.testing.assert_allclose(out.numpy(), M.MUL_EXPECTED, rtol=1e-3)


def test_bad_bindings_are_one_line_errors(session) -> None:  # type: ignore[no-untyped-def]
    b = session.io_binding()
    with pytest.raises(onnxrt.InvalidArgument, match="unknown input 'Z'"):
        b.bind_cpu_input("Z", M.X32)
    with pytest.raises(onnxrt.InvalidArgument, match="'cuda' is 'vulkan'"):
        b.bind_output("Y", "cuda")
    with pytest.raises(onnxrt.InvalidArgument, match="not the data_ptr"):
        b.bind_input("X", "vulkan", 0, np.float32, [3, 2], 12345)
    wrong = onnxrt.OrtValue.ortvalue_from_shape_and_type([2, 2], np.float32, "vulkan", 0)
    b.bind_cpu_input("X", M.X32)
    b.bind_ortvalue_output("Y", wrong)
    with pytest.raises(onnxrt.InvalidArgument, match="shape"):
        session.run_with_iobinding(b)


def test_unmapped_device_tensor_goes_through_staging(session) -> None:  # type: ignore[no-untyped-def]
    """A device without host-visible device memory (a discrete GPU without
    ReBAR): the tensor's buffer is not mapped; writes and reads are staged."""
    from vknn.runtime.vulkan.context import shared_device
    from vknn.runtime.vulkan.memory import STORAGE, TRANSFER_DST, TRANSFER_SRC, Buffer

    device = shared_device(0)[0]
    usage = STORAGE | TRANSFER_SRC | TRANSFER_DST

    def unmapped(shape: tuple[int, ...]) -> Any:
        buf = Buffer(device, int(np.prod(shape)) * 4, usage, False)
        assert buf.host is None
        return executable.DeviceTensor(device, buf, shape, np.dtype("float32"), np.dtype("float32"))

    x, y = unmapped((3, 2)), unmapped((3, 2))
    x.write(M.X32)
    np.testing.assert_array_equal(x.numpy(), M.X32)
    binding = session.io_binding()
    binding.bind_ortvalue_input("X", onnxrt.OrtValue(x))
    binding.bind_ortvalue_output("Y", onnxrt.OrtValue(y))
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(y.numpy(), M.MUL_EXPECTED)
