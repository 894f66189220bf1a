"""Plan buckets: one plan per declared input-shape set (Config.buckets,
`vknn compile --bucket`), selected by exact shape match; the single-bucket
fast path; the unmatched-shape error; prepare_shapes. Real models: a
transformer encoder at two sequence lengths and a CNN at two batch sizes,
each bucket against onnxruntime and through a .vxm."""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import vknn
from tests.unit.models import cosine_and_error, model_inputs, torch_model
from vknn.tools.cli import _bucket_arg
from vknn.tools.cli import main as cli_main

CPU = vknn.Config(backends=("cpu",))


def bert_any_seq() -> onnx.ModelProto:
    """tests/models/bert_encoder.onnx with seeded weights. torch's tracer baked
    the export's sequence length (128) into the attention reshapes as
    `Constant [128]`; -1 there makes the graph valid at any length."""
    model = torch_model("bert_encoder")
    for node in model.graph.node:
        if node.op_type == "Constant":
            t = node.attribute[0].t
            if numpy_helper.to_array(t).tolist() == [128]:
                t.CopyFrom(numpy_helper.from_array(np.array([-1], np.int64)))
    return model


def two_inputs(batch: str = "N") -> onnx.ModelProto:
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["a", "b"], ["s"], name="add"),
            helper.make_node("Relu", ["s"], ["y"], name="relu"),
        ],
        "two",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [batch, 4]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [batch, 4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def build_vxm(
    model: onnx.ModelProto, buckets: list[dict[str, tuple[int, ...]]], *options: str
) -> bytes:
    """`vknn compile model.onnx -o m.vxm --bucket ... [options]`: the file's bytes."""
    with tempfile.TemporaryDirectory() as d:
        src, out = Path(d) / "m.onnx", Path(d) / "m.vxm"
        onnx.save(model, src)
        argv = ["compile", str(src), "-o", str(out), *options]
        for b in buckets:
            argv += ["--bucket", ",".join(f"{k}={'x'.join(map(str, v))}" for k, v in b.items())]
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli_main(argv) == 0
        return out.read_bytes()


def _ort(model: onnx.ModelProto) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _check_buckets(
    model: onnx.ModelProto, buckets: list[dict[str, tuple[int, ...]]], dims: list[dict[str, int]]
) -> None:
    """Each bucket of an ONNX session against onnxruntime; the .vxm of the
    same buckets gives the ONNX session's outputs bit for bit (CPU)."""
    sess = vknn.Session(model, vknn.Config(backends=("cpu",), buckets=buckets))
    assert len(sess._buckets) == len(buckets)
    data = build_vxm(model, buckets, "--backends", "cpu")
    vxm = vknn.Session(data, CPU)
    assert len(vxm._buckets) == len(buckets)
    ref = _ort(model)
    for d in dims:
        feeds = model_inputs(model, d)
        want = dict(zip([o.name for o in ref.get_outputs()], ref.run(None, feeds), strict=True))
        out = sess.run(feeds)
        for name, value in out.items():
            cos, err, scale = cosine_and_error(want[name], value)
            print(f"{d} {name}: cosine {cos:.7f} max abs err {err:.3g} (max |ref| {scale:.3g})")
            assert value.shape == want[name].shape
            assert cos >= 0.99999, (d, name, cos)
        for name, value in vxm.run(feeds).items():
            np.testing.assert_array_equal(value, out[name])


def test_transformer_encoder_at_two_sequence_lengths() -> None:
    _check_buckets(
        bert_any_seq(),
        [{"input_ids": (1, 16)}, {"input_ids": (1, 48)}],
        [{"seq": 16}, {"seq": 48}],
    )


def test_cnn_at_two_batch_sizes() -> None:
    _check_buckets(
        torch_model("resnet18"),
        [{"input": (1, 3, 224, 224)}, {"input": (2, 3, 224, 224)}],
        [{"batch": 1}, {"batch": 2}],
    )


@pytest.fixture
def session_device():  # type: ignore[no-untyped-def]
    import os

    os.environ.setdefault("VKNN_VALIDATION", "1")
    from vknn.runtime.vulkan.context import shared_device

    dev, _, why = shared_device()
    if dev is None:
        pytest.skip(f"no Vulkan device: {why}")
    start = len(dev.messages)
    yield dev
    assert not dev.messages[start:], "\n".join(map(str, dev.messages[start:]))


@pytest.mark.slow  # ~10 s warm; ~45 s with a cold shader cache
def test_transformer_vxm_buckets_on_vulkan(session_device: Any) -> None:
    """A .vxm with two sequence lengths compiled for the device at hand, at
    the compiled precision (low: fp16 storage), against onnxruntime."""
    model = bert_any_seq()
    buckets = [{"input_ids": (1, 16)}, {"input_ids": (1, 32)}]
    data = build_vxm(model, buckets, "--precision", "low", "--target", "from-device")
    sess = vknn.Session(data)
    assert "vulkan" in sess.node_backends().values()
    assert len(sess._buckets) == 2
    assert sess.config.precision == "low"
    ref = _ort(model)
    for seq in (16, 32):
        feeds = model_inputs(model, {"seq": seq})
        want = ref.run(None, feeds)
        for value, w in zip(sess.run(feeds).values(), want, strict=True):
            cos, err, scale = cosine_and_error(w, value)
            print(f"seq {seq}: cosine {cos:.7f} max abs err {err:.3g} (max |ref| {scale:.3g})")
            assert cos >= 0.999, (seq, cos)


class _CountingDict(dict):
    """A bucket table that counts lookups."""

    lookups = 0

    def get(self, *args: Any) -> Any:
        _CountingDict.lookups += 1
        return super().get(*args)

    def __getitem__(self, key: Any) -> Any:
        _CountingDict.lookups += 1
        return super().__getitem__(key)

    def __contains__(self, key: Any) -> bool:
        _CountingDict.lookups += 1
        return super().__contains__(key)


def test_single_bucket_fast_path_does_no_lookup() -> None:
    sess = vknn.Session(two_inputs(), CPU)
    sess._buckets = _CountingDict(sess._buckets)
    _CountingDict.lookups = 0
    x = np.ones((1, 4), np.float32)
    assert sess.run({"a": x, "b": x})["y"].shape == (1, 4)
    assert _CountingDict.lookups == 0
    many = vknn.Session(
        two_inputs(),
        vknn.Config(
            backends=("cpu",), buckets=[{"a": (1, 4), "b": (1, 4)}, {"a": (2, 4), "b": (2, 4)}]
        ),
    )
    many._buckets = _CountingDict(many._buckets)
    x2 = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(many.run({"a": x2, "b": -x2})["y"], np.zeros((2, 4)))
    assert _CountingDict.lookups == 1


def test_buckets_select_by_exact_shape_and_list_all_on_mismatch() -> None:
    buckets = [{"a": (1, 4), "b": (1, 4)}, {"a": (3, 4), "b": (3, 4)}]
    sess = vknn.Session(two_inputs(), vknn.Config(backends=("cpu",), buckets=buckets))
    for n in (1, 3):
        x = np.full((n, 4), n, np.float32)
        np.testing.assert_array_equal(sess.run({"a": x, "b": x})["y"], 2 * x)
    x2 = np.ones((2, 4), np.float32)
    message = (
        "no plan for input shapes a=[2, 4], b=[2, 4]; available: a=[1, 4], b=[1, 4]; "
        "a=[3, 4], b=[3, 4]. Add one with Session.prepare_shapes({...})"
    )
    with pytest.raises(vknn.InvalidArgument, match=re.escape(message)):
        sess.run({"a": x2, "b": x2})
    # Mixed shapes match no bucket either.
    with pytest.raises(
        vknn.InvalidArgument, match="no plan for input shapes a=\\[1, 4\\], b=\\[3, 4\\]"
    ):
        sess.run({"a": np.ones((1, 4), np.float32), "b": np.ones((3, 4), np.float32)})


def test_prepare_shapes_adds_a_bucket_at_run_time() -> None:
    sess = vknn.Session(two_inputs(), CPU)
    x = np.ones((5, 4), np.float32)
    with pytest.raises(vknn.InvalidArgument, match="available: a=\\[1, 4\\], b=\\[1, 4\\]"):
        sess.run({"a": x, "b": x})
    sess.prepare_shapes({"a": (5, 4), "b": (5, 4)})
    assert len(sess._buckets) == 2
    np.testing.assert_array_equal(sess.run({"a": x, "b": x})["y"], 2 * x)
    with pytest.raises(vknn.InvalidArgument, match="prepare_shapes: unknown input 'c'"):
        sess.prepare_shapes({"c": (1, 4)})


def test_config_buckets_are_checked() -> None:
    assert vknn.Config(buckets=[{"x": [1, 2]}]).buckets == [{"x": (1, 2)}]
    for bad in ([{}], [{"x": "1x2"}], ["x=1x2"], [{"x": 3}]):
        with pytest.raises(vknn.InvalidArgument, match=r"Config.buckets\[0\] must be"):
            vknn.Config(buckets=bad)  # type: ignore[arg-type]


def test_cli_bucket_syntax(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _bucket_arg("x=1x3x224x224") == {"x": (1, 3, 224, 224)}
    assert _bucket_arg("ids=1x128,mask=1x128") == {"ids": (1, 128), "mask": (1, 128)}
    src = tmp_path / "two.onnx"
    onnx.save(two_inputs(), src)
    for bad in ("x", "x=", "x=1xx2", "=1x2", "x=1x-2", "x=1,x=2"):
        with pytest.raises(SystemExit) as e:
            cli_main(["compile", str(src), "--bucket", bad])
        assert e.value.code == 2
        assert "argument --bucket: bad bucket" in capsys.readouterr().err
    out = tmp_path / "two.vxm"
    argv = ["compile", str(src), "-o", str(out), "--backends", "cpu"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli_main([*argv, "--bucket", "a=1x4,b=1x4", "--bucket", "a=2x4,b=2x4"]) == 0
    sess = vknn.Session(out, CPU)
    x = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(sess.run({"a": x, "b": x})["y"], 2 * x)
    out.unlink()
    capsys.readouterr()
    assert cli_main([*argv, "--bucket", "a=2x4,b=2x4", "--bucket", "a=2x4,b=2x4"]) == 1
    err = capsys.readouterr().err
    assert "compiles to the same input shapes as bucket 1" in err and err.count("\n") == 1
    assert not out.exists()  # nothing written that no session could load


def test_onnxruntime_style_apis_add_a_bucket_per_new_shape() -> None:
    """`vknn.InferenceSession` and the ONNX backend accept any shape the
    declared dims allow, as onnxruntime does: each new one is a new bucket."""
    from vknn.backend import VknnBackend
    from vknn.ort_compat import InferenceSession

    sess = InferenceSession(two_inputs().SerializeToString(), providers=["CPUExecutionProvider"])
    for n in (1, 5, 1):
        x = np.full((n, 4), n, np.float32)
        (y,) = sess.run(None, {"a": x, "b": -2 * x})
        np.testing.assert_array_equal(y, np.zeros((n, 4), np.float32))
        (y,) = sess.run(["y"], {"a": x, "b": x})
        np.testing.assert_array_equal(y, 2 * x)
    assert len(sess._session._buckets) == 2
    rep = VknnBackend.prepare(two_inputs(), "CPU")
    for n in (1, 3):
        x = np.full((n, 4), n, np.float32)
        (y,) = rep.run([x, x])
        np.testing.assert_array_equal(y, 2 * x)
    assert len(rep.session._buckets) == 2
