"""onnxruntime's own Python API tests (onnxruntime/test/python/
onnxruntime_test_python.py, microsoft/onnxruntime at 0028d2f4), adapted to
run against `vknn` where the feature applies: same test names, the same
models (rebuilt in tests/unit/ort_models.py), the same checks, `onnxrt`
replaced by `vknn` and CUDA by Vulkan. docs/ort-compat.md counts them and
lists the upstream tests that do not apply (strings, sequences, sparse
tensors, dlpack, CUDA/TensorRT options, allocators, LoRA adapters, ...).
Every session runs on the Vulkan device first (lavapipe in CI, validation on).
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto as T

import vknn as onnxrt
from tests.unit import ort_models as M
from tests.unit.vulkan.conftest import session_device  # noqa: F401
from vknn.ort_compat import normalize_providers

pytestmark = pytest.mark.usefixtures("session_device")
available_providers = onnxrt.get_available_providers()


@pytest.fixture
def get_name(tmp_path: Path):  # type: ignore[no-untyped-def]
    """onnxruntime's helper.get_name: the path of a test model by file name."""
    builders = {
        "mul_1.onnx": M.mul_1,
        "matmul_1.onnx": lambda: M.matmul([3, 2]),
        "matmul_2.onnx": lambda: M.matmul([None, 2]),
        "logicaland.onnx": M.logicaland,
        "abs_free_dimensions.onnx": M.abs_free_dimensions,
    }
    return lambda name: M.save(builders[name](), tmp_path, name)


def run_model(session_object, run_options) -> None:  # type: ignore[no-untyped-def]
    x = M.X32
    input_name = session_object.get_inputs()[0].name
    res = session_object.run([], {input_name: x}, run_options=run_options)
    np.testing.assert_allclose(res[0], M.MUL_EXPECTED, rtol=1e-05, atol=1e-08)


def test_model_serialization(get_name, tmp_path) -> None:  # type: ignore[no-untyped-def]
    so = onnxrt.SessionOptions()
    so.log_severity_level = 1
    so.logid = "TestModelSerialization"
    so.optimized_model_filepath = str(tmp_path / "PythonApiTestOptimizedModel.vxm")
    onnxrt.InferenceSession(get_name("mul_1.onnx"), sess_options=so)
    assert os.path.isfile(so.optimized_model_filepath)
    # VKNN's optimized model is a compiled .vxm: it runs without the compiler.
    sess = onnxrt.InferenceSession(so.optimized_model_filepath)
    np.testing.assert_allclose(sess.run(None, {"X": M.X32})[0], M.MUL_EXPECTED)


def test_get_providers(get_name) -> None:  # type: ignore[no-untyped-def]
    assert "CPUExecutionProvider" in onnxrt.get_available_providers()
    assert onnxrt.get_all_providers()[-1] == "CPUExecutionProvider"
    sess = onnxrt.InferenceSession(get_name("mul_1.onnx"), providers=available_providers)
    assert "CPUExecutionProvider" in sess.get_providers()


def test_deserialization_from_path_object(get_name) -> None:  # type: ignore[no-untyped-def]
    onnxrt.InferenceSession(Path(get_name("mul_1.onnx")), providers=available_providers)


def test_set_providers(get_name) -> None:  # type: ignore[no-untyped-def]
    sess = onnxrt.InferenceSession(get_name("mul_1.onnx"), providers=["VulkanExecutionProvider"])
    assert "VulkanExecutionProvider" in sess.get_providers()
    sess.set_providers(["CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    run_model(sess, None)


def test_set_providers_with_options(get_name) -> None:  # type: ignore[no-untyped-def]
    sess = onnxrt.InferenceSession(get_name("mul_1.onnx"), providers=["VulkanExecutionProvider"])
    option = sess.get_provider_options()["VulkanExecutionProvider"]
    for key in ("device_id", "precision", "fastmath", "cache_file"):
        assert key in option
    assert option["device_id"] == "0" and option["precision"] == "high"
    sess.set_providers(["VulkanExecutionProvider"], [{"precision": "low", "device_id": 0}])
    option = sess.get_provider_options()["VulkanExecutionProvider"]
    assert option["precision"] == "low" and option["device_id"] == "0"
    np.testing.assert_allclose(sess.run(None, {"X": M.X32})[0], M.MUL_EXPECTED, rtol=1e-3)
    with pytest.raises(onnxrt.InvalidArgument, match="device"):
        sess.set_providers(["VulkanExecutionProvider"], [{"device_id": 99}])
    with pytest.raises(onnxrt.InvalidArgument, match="unknown option"):
        sess.set_providers(["VulkanExecutionProvider"], [{"invalid_option": 123}])


def test_invalid_set_providers(get_name) -> None:  # type: ignore[no-untyped-def]
    sess = onnxrt.InferenceSession(get_name("mul_1.onnx"), providers=["CPUExecutionProvider"])
    with pytest.raises(onnxrt.InvalidArgument, match="InvalidProvider"):
        sess.set_providers(["InvalidProvider"])


def test_session_providers(get_name) -> None:  # type: ignore[no-untyped-def]
    sess = onnxrt.InferenceSession(get_name("mul_1.onnx"), providers=["CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]


def test_run_model(get_name) -> None:  # type: ignore[no-untyped-def]
    sess = onnxrt.InferenceSession(get_name("mul_1.onnx"), providers=available_providers)
    inputs = sess.get_inputs()
    assert len(inputs) == 1 and inputs[0].name == "X" and inputs[0].shape == [3, 2]
    outputs = sess.get_outputs()
    assert len(outputs) == 1 and outputs[0].name == "Y" and outputs[0].shape == [3, 2]
    res = sess.run([outputs[0].name], {inputs[0].name: M.X32})
    np.testing.assert_allclose(res[0], M.MUL_EXPECTED, rtol=1e-05, atol=1e-08)


def test_run_async(get_name) -> None:  # type: ignore[no-untyped-def]
    event = threading.Event()
    seen: list[tuple] = []  # type: ignore[type-arg]

    def callback(res, data, err) -> None:  # type: ignore[no-untyped-def]
        seen.append((res, data, err))
        event.set()

    so = onnxrt.SessionOptions()
    so.intra_op_num_threads = 2
    sess = onnxrt.InferenceSession(get_name("mul_1.onnx"), so, providers=available_providers)
    sess.run_async(["Y"], {"X": M.X32}, callback, 123456)
    event.wait(30)
    assert event.is_set()
    (res, data, err) = seen[0]
    assert err == "" and len(res) == 1 and data == 123456
    np.testing.assert_allclose(res[0], M.MUL_EXPECTED, rtol=1e-05, atol=1e-08)


def test_run_model_from_bytes(get_name) -> None:  # type: ignore[no-untyped-def]
    with open(get_name("mul_1.onnx"), "rb") as f:
        content = f.read()
    sess = onnxrt.InferenceSession(content, providers=available_providers)
    assert (sess.get_inputs()[0].name, sess.get_inputs()[0].shape) == ("X", [3, 2])
    assert (sess.get_outputs()[0].name, sess.get_outputs()[0].shape) == ("Y", [3, 2])
    res = sess.run(["Y"], {"X": M.X32})
    np.testing.assert_allclose(res[0], M.MUL_EXPECTED, rtol=1e-05, atol=1e-08)


def test_run_model2(get_name) -> None:  # type: ignore[no-untyped-def]
    sess = onnxrt.InferenceSession(get_name("matmul_1.onnx"), providers=available_providers)
    assert sess.get_inputs()[0].shape == [3, 2] and sess.get_outputs()[0].shape == [3, 1]
    res = sess.run(["Y"], {"X": M.X32})
    np.testing.assert_allclose(res[0], [[5.0], [11.0], [17.0]], rtol=1e-05, atol=1e-08)


def test_run_model2_contiguous(get_name) -> None:  # type: ignore[no-untyped-def]
    sess = onnxrt.InferenceSession(get_name("matmul_1.onnx"), providers=available_providers)
    x = np.array([[2.0, 1.0], [4.0, 3.0], [6.0, 5.0]], dtype=np.float32)[:, [1, 0]]
    expected = np.array([[5.0], [11.0], [17.0]], dtype=np.float32)
    np.testing.assert_allclose(sess.run(["Y"], {"X": x})[0], expected, rtol=1e-05, atol=1e-08)
    xc = np.ascontiguousarray(x)
    np.testing.assert_allclose(sess.run(["Y"], {"X": xc})[0], expected, rtol=1e-05, atol=1e-08)


def test_run_model_multiple_threads(get_name) -> None:  # type: ignore[no-untyped-def]
    so = onnxrt.SessionOptions()
    so.log_verbosity_level = 1
    so.logid = "MultiThreadsTest"
    sess = onnxrt.InferenceSession(get_name("mul_1.onnx"), sess_options=so,
                                   providers=available_providers)  # fmt: skip
    errors: list[BaseException] = []

    def target(ro) -> None:  # type: ignore[no-untyped-def]
        try:
            run_model(sess, ro)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    ro1, ro2 = onnxrt.RunOptions(), onnxrt.RunOptions()
    ro1.logid, ro2.logid = "thread1", "thread2"
    threads = [threading.Thread(target=target, args=(ro,)) for ro in (ro1, ro2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_list_as_input(get_name) -> None:  # type: ignore[no-untyped-def]
    sess = onnxrt.InferenceSession(get_name("mul_1.onnx"), providers=available_providers)
    res = sess.run([], {sess.get_inputs()[0].name: M.X32.tolist()})
    np.testing.assert_allclose(res[0], M.MUL_EXPECTED, rtol=1e-05, atol=1e-08)


def test_run_device() -> None:
    device = onnxrt.get_device()
    assert "CPU" in device or "GPU" in device


def test_run_model_symbolic_input(get_name) -> None:  # type: ignore[no-untyped-def]
    sess = onnxrt.InferenceSession(get_name("matmul_2.onnx"), providers=available_providers)
    assert sess.get_inputs()[0].shape == [None, 2]  # onnxruntime 1.32 reports None too
    assert sess.get_outputs()[0].shape == [None, 1]
    res = sess.run(["Y"], {"X": M.X32})
    np.testing.assert_allclose(res[0], [[5.0], [11.0], [17.0]], rtol=1e-05, atol=1e-08)


def test_boolean_inputs(get_name) -> None:  # type: ignore[no-untyped-def]
    sess = onnxrt.InferenceSession(get_name("logicaland.onnx"), providers=available_providers)
    a = np.array([[True, True], [False, False]], dtype=bool)
    b = np.array([[True, False], [True, False]], dtype=bool)
    ins, outs = sess.get_inputs(), sess.get_outputs()
    assert (ins[0].name, ins[0].shape, ins[0].type) == ("input1:0", [2, 2], "tensor(bool)")
    assert (ins[1].name, ins[1].shape, ins[1].type) == ("input:0", [2, 2], "tensor(bool)")
    assert (outs[0].name, outs[0].shape, outs[0].type) == ("output:0", [2, 2], "tensor(bool)")
    res = sess.run(["output:0"], {"input1:0": a, "input:0": b})
    np.testing.assert_equal(res[0], np.array([[True, False], [False, False]], dtype=bool))


def test_raise_wrong_num_inputs(get_name) -> None:  # type: ignore[no-untyped-def]
    sess = onnxrt.InferenceSession(get_name("logicaland.onnx"), providers=available_providers)
    a = np.array([[True, True], [False, False]], dtype=bool)
    with pytest.raises(onnxrt.InvalidArgument, match="missing input.*input1:0"):
        sess.run([], {"input:0": a})


def test_model_meta(tmp_path) -> None:  # type: ignore[no-untyped-def]
    m = M.mul_1()
    m.producer_name, m.graph.name, m.doc_string = "onnx-caffe2", "squeezenet_old", ""
    path = M.save(m, tmp_path, "model.onnx")
    modelmeta = onnxrt.InferenceSession(path, providers=available_providers).get_modelmeta()
    assert modelmeta.producer_name == "onnx-caffe2"
    assert modelmeta.graph_name == "squeezenet_old"
    assert (modelmeta.domain, modelmeta.description, modelmeta.graph_description) == ("", "", "")


def test_profiler_with_session_options(get_name, tmp_path) -> None:  # type: ignore[no-untyped-def]
    so = onnxrt.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof_")
    sess = onnxrt.InferenceSession(get_name("mul_1.onnx"), sess_options=so,
                                   providers=available_providers)  # fmt: skip
    sess.run([], {"X": M.X32})
    profile_file = sess.end_profiling()
    tags = ["pid", "dur", "ts", "ph", "X", "name", "args"]
    with open(profile_file) as f:
        lines = f.readlines()
    assert "[" in lines[0]
    for i in range(1, len(lines) - 1):
        for tag in tags:
            assert tag in lines[i]
    assert "]" in lines[-1]
    os.remove(profile_file)


def test_profiler_get_start_time_ns(get_name, tmp_path) -> None:  # type: ignore[no-untyped-def]
    def get_single_session_profiling_start_time() -> int:
        so = onnxrt.SessionOptions()
        so.enable_profiling = True
        so.profile_file_prefix = str(tmp_path / "prof_")
        sess = onnxrt.InferenceSession(get_name("mul_1.onnx"), sess_options=so,
                                       providers=available_providers)  # fmt: skip
        start_time = sess.get_profiling_start_time_ns()
        os.remove(sess.end_profiling())
        return start_time

    t1 = get_single_session_profiling_start_time()
    t2 = get_single_session_profiling_start_time()
    t3 = get_single_session_profiling_start_time()
    assert 0 < t1 <= t2 <= t3


def test_graph_optimization_level(get_name) -> None:  # type: ignore[no-untyped-def]
    opt = onnxrt.SessionOptions()
    assert opt.graph_optimization_level == onnxrt.GraphOptimizationLevel.ORT_ENABLE_ALL
    with pytest.warns(UserWarning, match="full compiler pipeline"):
        opt.graph_optimization_level = onnxrt.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    assert opt.graph_optimization_level == onnxrt.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    sess = onnxrt.InferenceSession(get_name("logicaland.onnx"), sess_options=opt,
                                   providers=available_providers)  # fmt: skip
    a = np.array([[True, True], [False, False]], dtype=bool)
    b = np.array([[True, False], [True, False]], dtype=bool)
    sess.run([], {"input1:0": a, "input:0": b})


def test_ort_execution_mode() -> None:
    opt = onnxrt.SessionOptions()
    assert opt.execution_mode == onnxrt.ExecutionMode.ORT_SEQUENTIAL
    opt.execution_mode = onnxrt.ExecutionMode.ORT_PARALLEL
    assert opt.execution_mode == onnxrt.ExecutionMode.ORT_PARALLEL


def test_session_options_add_free_dimension_override_by_name(get_name) -> None:  # type: ignore[no-untyped-def]
    so = onnxrt.SessionOptions()
    so.add_free_dimension_override_by_name("Dim1", 4)
    so.add_free_dimension_override_by_name("Dim2", 6)
    sess = onnxrt.InferenceSession(get_name("abs_free_dimensions.onnx"), sess_options=so,
                                   providers=available_providers)  # fmt: skip
    assert sess.get_inputs()[0].name == "x"
    # onnxruntime reports [4, 6, 5]; VKNN keeps the declared names and compiles
    # its default bucket for the overridden values.
    x = -np.ones((4, 6, 5), np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], -x)
    assert sess._session.bucket_inputs == {"x": (4, 6, 5)}


def test_session_options_add_config_entry() -> None:
    so = onnxrt.SessionOptions()
    with pytest.warns(UserWarning, match="no effect"):
        so.add_session_config_entry("CONFIG_KEY", "CONFIG_VAL")
    assert so.get_session_config_entry("CONFIG_KEY") == "CONFIG_VAL"


def test_invalid_session_options_config_entry() -> None:
    so = onnxrt.SessionOptions()
    with pytest.raises(onnxrt.InvalidArgument) as e:
        so.get_session_config_entry("INVALID_KEY")
    assert "SessionOptions does not have configuration with key: INVALID_KEY" in str(e.value)


def test_ort_value(get_name) -> None:  # type: ignore[no-untyped-def]
    def with_ortvalue_input(ortvalue) -> None:  # type: ignore[no-untyped-def]
        sess = onnxrt.InferenceSession(get_name("mul_1.onnx"), providers=available_providers)
        res = sess.run(["Y"], {"X": ortvalue})
        assert np.array_equal(res[0], M.MUL_EXPECTED)

    ortvalue1 = onnxrt.OrtValue.ortvalue_from_numpy(M.X32)
    assert ortvalue1.device_name() == "cpu"
    assert ortvalue1.shape() == [3, 2]
    assert ortvalue1.data_type() == "tensor(float)"
    assert ortvalue1.is_tensor()
    assert ortvalue1.tensor_size_in_bytes() == 4 * 2 * 3
    assert np.array_equal(ortvalue1.numpy(), M.X32)
    with_ortvalue_input(ortvalue1)
    assert np.array_equal(ortvalue1.numpy(), M.X32)
    assert ortvalue1.element_type() == T.FLOAT

    ortvalue2 = onnxrt.OrtValue.ortvalue_from_numpy(M.X32, "vulkan", 0)
    assert ortvalue2.device_name() == "vulkan"
    assert ortvalue2.shape() == [3, 2]
    assert ortvalue2.data_type() == "tensor(float)"
    assert ortvalue2.is_tensor()
    assert np.array_equal(ortvalue2.numpy(), M.X32)
    with_ortvalue_input(ortvalue2)
    assert np.array_equal(ortvalue2.numpy(), M.X32)


def test_ort_value_gh_issue9799(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = M.save(M.identity(T.FLOAT, ["seq", 16, 7, 5, 3, 3]), tmp_path, "identity_9799.onnx")
    session = onnxrt.InferenceSession(path, providers=available_providers)
    for seq_length in (40, 41, 77):  # upstream: 40..199 (each new length compiles a bucket)
        inps = np.ones((seq_length, 16, 7, 5, 3, 3)).astype(np.float32)
        ort_val = onnxrt.OrtValue.ortvalue_from_numpy(inps, "vulkan", 0)
        outs = session.run(output_names=["Y"], input_feed={"X": ort_val})[0]
        assert np.allclose(inps, outs)


def test_ort_value_array_protocol() -> None:
    numpy_arr = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    ortvalue = onnxrt.OrtValue.ortvalue_from_numpy(numpy_arr)
    result = np.asarray(ortvalue)
    np.testing.assert_equal(numpy_arr, result)
    assert result.dtype == np.float32 and ortvalue.data_ptr() == result.ctypes.data
    np.testing.assert_equal(numpy_arr, np.array(ortvalue))
    result_f64 = np.asarray(ortvalue, dtype=np.float64)
    assert result_f64.dtype == np.float64
    np.testing.assert_equal(numpy_arr.astype(np.float64), result_f64)
    for arr in (np.array([1, 2, 3], np.int64), np.array([True, False, True])):
        out = np.asarray(onnxrt.OrtValue.ortvalue_from_numpy(arr))
        np.testing.assert_equal(arr, out)
        assert out.dtype == arr.dtype
        dev = np.asarray(onnxrt.OrtValue.ortvalue_from_numpy(arr, "vulkan", 0))
        np.testing.assert_equal(arr, dev)
        assert dev.dtype == arr.dtype


def test_run_output_does_not_alias_input_passthrough() -> None:
    from onnx import helper, numpy_helper

    shape = [1, 2, 2, 2]
    ten = numpy_helper.from_array(np.array(10, dtype=np.float32), "ten_const")
    graph = helper.make_graph(
        [helper.make_node("Add", ["input_0", "ten_const"], ["plus_10"], name="Add0")],
        "PassthroughTest",
        [M.vi("input_0", T.FLOAT, shape)],
        [M.vi("plus_10", T.FLOAT, shape), M.vi("input_0", T.FLOAT, shape)],
        initializer=[ten],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    session = onnxrt.InferenceSession(model.SerializeToString(), providers=available_providers)
    all_run_outputs = []
    for i in range(7):
        input_data = np.full(shape, float(i), dtype=np.float32)
        outputs = session.run(None, {"input_0": input_data})
        np.testing.assert_array_equal(outputs[0], np.full(shape, i + 10.0, np.float32))
        np.testing.assert_array_equal(outputs[1], input_data)
        assert not np.shares_memory(outputs[1], input_data)
        all_run_outputs.append(outputs)
    for i, outputs in enumerate(all_run_outputs):
        np.testing.assert_array_equal(outputs[0], np.full(shape, i + 10.0, np.float32))
        np.testing.assert_array_equal(outputs[1], np.full(shape, float(i), np.float32))


def test_memory_arena_shrinkage(get_name) -> None:  # type: ignore[no-untyped-def]
    sess1 = onnxrt.InferenceSession(get_name("mul_1.onnx"), providers=["CPUExecutionProvider"])
    ro1 = onnxrt.RunOptions()
    with pytest.warns(UserWarning, match="no effect"):
        ro1.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    assert ro1.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
    run_model(sess1, ro1)


def test_check_and_normalize_provider_args() -> None:
    def check_success(providers, provider_options, expected, expected_options) -> None:  # type: ignore[no-untyped-def]
        assert normalize_providers(providers, provider_options) == (expected, expected_options)

    V, C = "VulkanExecutionProvider", "CPUExecutionProvider"
    check_success(None, None, [V, C], [{}, {}])
    check_success([V], None, [V], [{}])
    check_success([V, C], None, [V, C], [{}, {}])
    check_success([(V, {1: 2}), C], None, [V, C], [{"1": 2}, {}])
    check_success([V, C], [{1: 2}, {}], [V, C], [{"1": 2}, {}])
    with pytest.warns(UserWarning):
        check_success([V, C, V], [{"x": 1}, {}, {"y": 2}], [V, C], [{"x": 1}, {}])

    for providers, options in [(3, None), ([3], None), ([V], 3), ([V], ["not dict"]),
                               ([V, C], [{1: 2}]), ([(V, {1: 2})], [{3: 4}])]:  # fmt: skip
        with pytest.raises(onnxrt.InvalidArgument):
            normalize_providers(providers, options)


def test_multiple_devices(get_name) -> None:  # type: ignore[no-untyped-def]
    """Upstream needs two CUDA devices; here device_id cycles over the Vulkan devices."""
    from vknn.runtime.vulkan.context import physical_devices

    n = len(physical_devices())
    sessions = [
        onnxrt.InferenceSession(get_name("mul_1.onnx"),
                                providers=[("VulkanExecutionProvider", {"device_id": i % n})])
        for i in range(3)
    ]  # fmt: skip
    for i in range(3):
        binding = sessions[i].io_binding()
        binding.bind_ortvalue_input(
            "X", onnxrt.OrtValue.ortvalue_from_numpy(M.X32, "vulkan", i % n)
        )
        binding.bind_output(name="Y", device_type="vulkan", device_id=i % n)
        binding.synchronize_inputs()
        sessions[i].run_with_iobinding(binding)
        binding.synchronize_outputs()
        np.testing.assert_array_equal(binding.get_outputs()[0].numpy(), M.MUL_EXPECTED)


# -- where onnxruntime has a feature VKNN refuses: a clear error, never silence --


def test_refused_options_are_errors(get_name) -> None:  # type: ignore[no-untyped-def]
    so = onnxrt.SessionOptions()
    for call in (lambda: so.add_free_dimension_override_by_denotation("DATA_BATCH", 3),
                 lambda: so.add_initializer("W", None),
                 lambda: so.register_custom_ops_library("./libcustom_op_library.so")):  # fmt: skip
        with pytest.raises(onnxrt.Unsupported):
            call()
    with pytest.raises(AttributeError, match="no option 'enable_magic'"):
        so.enable_magic = True
    with pytest.raises(onnxrt.InvalidArgument, match="unknown argument"):
        onnxrt.InferenceSession(get_name("mul_1.onnx"), disabled_optimizers=["x"])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        sess = onnxrt.InferenceSession(
            get_name("mul_1.onnx"), providers=["CUDAExecutionProvider", "CPUExecutionProvider"]
        )
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert any("CUDAExecutionProvider" in str(x.message) for x in w)
    with pytest.raises(onnxrt.InvalidArgument, match="unknown option"):
        onnxrt.InferenceSession(
            get_name("mul_1.onnx"), providers=[("CPUExecutionProvider", {"arena": "1"})]
        )
