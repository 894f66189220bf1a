""".vxm compiled models: the plan codec's exact round trip, the file format
(magic, version, content hash, truncation), sessions on a .vxm (same outputs
as the ONNX session, no xDSL imported), the vkd module it carries, the CLI."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import vknn
from tests.unit.models import light_model
from vknn.ir.plan_to_vkd import build_vxm
from vknn.runtime.plan import Plan, Step, TensorSpec
from vknn.runtime.codec import decode_plan, decode_value, encode_plan, encode_value
from vknn.runtime.vulkan.caps import DeviceCaps
from vknn.runtime.vxm import FORMAT_VERSION, decode_vxm, load_vxm
from vknn.tools.cli import main as cli_main

CPU = vknn.Config(backends=("cpu",))
ROOT = Path(__file__).resolve().parents[2]


def mixed_model(batch: int | str = "N") -> onnx.ModelProto:
    """MatMul, a fused pointwise chain, an `onnx.*` op (Asin has no vx
    lowering), and int/bool outputs (ArgMax, Cast to int8, Greater)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")
    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node("Tanh", ["h"], ["t"], name="tanh"),
        helper.make_node("Mul", ["t", "half"], ["m"], name="mul"),
        helper.make_node("Asin", ["m"], ["a"], name="asin"),
        helper.make_node("Relu", ["a"], ["y"], name="relu"),
        helper.make_node("ArgMax", ["h"], ["idx"], name="argmax", axis=1, keepdims=0),
        helper.make_node("Cast", ["idx"], ["idx8"], name="cast", to=TensorProto.INT8),
        helper.make_node("Greater", ["h", "half"], ["pos"], name="greater"),
    ]
    graph = helper.make_graph(
        nodes,
        "mixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3]),
            helper.make_tensor_value_info("idx8", TensorProto.INT8, [batch]),
            helper.make_tensor_value_info("pos", TensorProto.BOOL, [batch, 3]),
        ],
        [w, half],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def same(a: Any, b: Any, where: str = "") -> None:
    """Exact equality of plan values: types, dict order, array dtype/shape/bits."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        if a.dtype.kind == "O":
            assert a.tolist() == b.tolist(), where
        else:
            assert a.tobytes() == b.tobytes(), where
    elif isinstance(a, np.generic):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{where}[{i}]")
    elif isinstance(a, Step):
        for f in ("op", "node", "inputs", "outputs", "out_specs", "attrs", "region"):
            same(getattr(a, f), getattr(b, f), f"{where}:{a.node}.{f}")
        assert (a.backend, a.reason) == (b.backend, b.reason), where
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def roundtrip(plan: Plan) -> Plan:
    data = msgpack.packb(encode_plan(plan), use_bin_type=True)
    return decode_plan(msgpack.unpackb(data, raw=False))


def check_plan_roundtrip(plan: Plan) -> None:
    back = roundtrip(plan)
    same(plan.inputs, back.inputs, "inputs")
    same(plan.outputs, back.outputs, "outputs")
    same(list(plan.constants), list(back.constants), "constant slots")
    for slot, a in plan.constants.items():
        same(a, back.constants[slot], f"constant {slot}")
    assert len(plan.steps) == len(back.steps)
    for i, (s, t) in enumerate(zip(plan.steps, back.steps, strict=True)):
        same(s, t, f"step {i}")
    assert (plan.num_slots, plan.last_use) == (back.num_slots, back.last_use)


# -- the codec ---------------------------------------------------------------


def test_codec_values_roundtrip_exactly() -> None:
    import ml_dtypes

    splat = np.broadcast_to(np.float32(2.5), (64, 64))
    values = [
        None,
        True,
        -(2**63),
        2**64 - 1,
        1.5,
        float("nan"),
        "s",
        b"\x00\xff",
        (1, (2, 3), []),
        [1, (2,)],
        {"a": 1, 2: "int key", (1, 2): "tuple key"},
        np.arange(6, dtype=">i4").reshape(2, 3),
        np.array([[True, False]]),
        np.zeros((0, 3), np.float16),
        np.array(["a", "bc"], dtype=object),
        np.array([1.5, -2], dtype=ml_dtypes.bfloat16),
        np.float32(0.1),
        np.int64(-7),
        np.bool_(True),
        TensorSpec("t", (1, 2), "int8"),
        splat,
    ]
    packed = msgpack.packb([encode_value(v) for v in values], use_bin_type=True)
    back = [decode_value(v) for v in msgpack.unpackb(packed, raw=False)]
    for i, (v, b) in enumerate(zip(values, back, strict=True)):
        if isinstance(v, np.ndarray) and v.dtype.byteorder == ">":
            v = v.astype("<i4")  # stored little-endian: same values
        same(v, b, f"value {i}")
    assert back[-1].strides == (0, 0)  # the splat stays a zero-copy view
    assert len(packed) < 1000


def test_codec_rejects_unknown_values() -> None:
    from vknn.runtime.codec import PlanCodecError

    with pytest.raises(PlanCodecError, match="cannot encode a plan value of type set"):
        encode_value({1, 2})
    with pytest.raises(PlanCodecError, match="malformed plan data"):
        decode_plan({"inputs": []})


def test_codec_roundtrips_compiled_plans() -> None:
    """Every step of a plan with an onnx.* step (a one-node ONNX model),
    fused-pointwise regions, int/bool values; a real CNN; and the same plans
    after partitioning for Vulkan (merged epilogues: steps inside attrs)."""
    mixed = vknn.Session(mixed_model(), CPU).plan
    assert any(s.op.startswith("onnx.") and "onnx_model" in s.attrs for s in mixed.steps)
    assert any(s.region for s in mixed.steps)
    check_plan_roundtrip(mixed)
    squeeze = vknn.Session(light_model("light_squeezenet.onnx"), CPU).plan
    check_plan_roundtrip(squeeze)
    on_device = vknn.Session(light_model("light_squeezenet.onnx")).plan
    check_plan_roundtrip(on_device)


def test_codec_roundtrips_a_quantized_model(tmp_path: Path) -> None:
    from tests.unit.quant_models import float_model, quantized

    model = quantized(float_model("squeezenet"), "qdq", tmp_path / "q.onnx")
    check_plan_roundtrip(vknn.Session(model, CPU).plan)


# -- the file format ---------------------------------------------------------


@pytest.fixture(scope="module")
def mixed_vxm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("vxm") / "mixed.vxm"
    build = build_vxm(
        mixed_model(),
        buckets=[{"x": (1, 4)}, {"x": (3, 4)}],
        precision="low",
        caps=DeviceCaps.lavapipe_like(),
    )
    build.save(path)
    return path


def test_vxm_session_matches_the_onnx_session_bit_for_bit(mixed_vxm: Path) -> None:
    sess = vknn.Session(mixed_vxm, CPU)
    assert sess.config.precision == "low"  # the compiled default
    ref = vknn.Session(mixed_model(), vknn.Config(backends=("cpu",), buckets=[{"x": (3, 4)}]))
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    out, want = sess.run({"x": x}), ref.run({"x": x})
    assert list(out) == ["y", "idx8", "pos"]
    for name in want:
        same(out[name], want[name], name)
    assert sess.node_backends()["asin"] == "cpu"  # our own kernel of onnx.Asin
    # An explicit precision wins over the compiled one.
    assert (
        vknn.Session(mixed_vxm, vknn.Config(backends=("cpu",), precision="high")).config.precision
        == "high"
    )


def test_vxm_contents(mixed_vxm: Path) -> None:
    vxm = load_vxm(mixed_vxm)
    assert vxm.format_version == FORMAT_VERSION and vxm.precision == "low"
    meta = vxm.metadata
    assert meta["inputs"] == [{"name": "x", "dims": ["N", 4], "dtype": "float32"}]
    assert [o["dtype"] for o in meta["outputs"]] == ["float32", "int8", "bool"]
    assert meta["buckets"] == [{"x": [1, 4]}, {"x": [3, 4]}]
    assert meta["pipeline"] == "standard" and meta["model"] == "mixed"
    # The weight is stored once for both buckets.
    assert sum(len(p.constants) for p in vxm.plans) > len(vxm.weights)
    w = np.asarray(numpy_helper.to_array(mixed_model().graph.initializer[0]))
    assert sum(a.tobytes() == w.tobytes() for a in vxm.weights) == 1
    assert "vkd.plan @b0 inputs {x = array<i64: 1, 4>}" in vxm.vkd
    assert "vkd.plan @b1 inputs {x = array<i64: 3, 4>}" in vxm.vkd
    assert 'vkd.granularity = "step"' in vxm.vkd


def test_vxm_from_bytes(mixed_vxm: Path) -> None:
    sess = vknn.Session(mixed_vxm.read_bytes(), CPU)
    assert sess.run({"x": np.ones((1, 4), np.float32)})["y"].shape == (1, 3)


def _refused(path: Path, data: bytes, match: str | None) -> None:
    path.write_bytes(data)
    with pytest.raises(vknn.ModelLoadError, match=match) as e:
        vknn.Session(path, CPU)
    assert str(e.value).startswith(f"{path}: ")


def test_tampered_byte_is_refused(mixed_vxm: Path, tmp_path: Path) -> None:
    data = mixed_vxm.read_bytes()
    w = numpy_helper.to_array(mixed_model().graph.initializer[0]).tobytes()
    at = data.index(w) + 5  # inside the weights
    bad = bytearray(data)
    bad[at] ^= 0x01
    _refused(tmp_path / "t.vxm", bytes(bad), "tampered with or is corrupt")
    # Any single flipped byte is refused with a ModelLoadError, never a raw error.
    rng = np.random.default_rng(0)
    for at in rng.choice(len(data), 40, replace=False):
        bad = bytearray(data)
        bad[at] ^= 0xFF
        _refused(tmp_path / "t.vxm", bytes(bad), None)


def test_truncated_file_is_refused(mixed_vxm: Path, tmp_path: Path) -> None:
    data = mixed_vxm.read_bytes()
    for n in (3, 40, len(data) // 2, len(data) - 1):
        _refused(tmp_path / "t.vxm", data[:n], "truncated")
    _refused(tmp_path / "t.vxm", data + b"\x00", "after the content hash")
    _refused(tmp_path / "t.vxm", b"", "empty")


def test_wrong_magic_or_version_is_refused(mixed_vxm: Path, tmp_path: Path) -> None:
    data = mixed_vxm.read_bytes()
    _refused(tmp_path / "m.vxm", data.replace(b"VXM", b"VXN", 1), r"not a \.vxm compiled model")
    _refused(tmp_path / "m.vxm", mixed_model().SerializeToString(), "not a .vxm")
    _refused(tmp_path / "m.vxm", msgpack.packb({"magic": "VXM"}), "truncated")
    key = msgpack.packb("format_version")
    newer = data.replace(key + msgpack.packb(1), key + msgpack.packb(99), 1)
    _refused(
        tmp_path / "v.vxm",
        newer,
        r"\.vxm format version 99 is not supported \(this vknn reads version 1\)",
    )
    with pytest.raises(vknn.ModelLoadError, match="cannot read"):
        vknn.Session(tmp_path / "missing.vxm", CPU)
    with pytest.raises(vknn.ModelLoadError, match="<bytes>: content hash mismatch"):
        bad = bytearray(data)
        bad[data.index(b"vknn_version") + 14] ^= 1
        decode_vxm(bytes(bad))


def test_prepare_shapes_is_refused_on_a_vxm(mixed_vxm: Path) -> None:
    sess = vknn.Session(mixed_vxm, CPU)
    with pytest.raises(
        vknn.InvalidArgument,
        match=r"compiled \.vxm model with buckets \[x=\[1, 4\]; x=\[3, 4\]\] and cannot "
        r"compile new ones; recompile with `vknn compile <model.onnx> -o .*mixed.vxm "
        r'--bucket "x=2x4"`',
    ):
        sess.prepare_shapes({"x": (2, 4)})
    with pytest.raises(vknn.InvalidArgument, match=r"Recompile with .*--bucket \"x=2x4\""):
        sess.run({"x": np.zeros((2, 4), np.float32)})
    with pytest.raises(vknn.InvalidArgument, match="was not compiled for"):
        vknn.Session(mixed_vxm, vknn.Config(backends=("cpu",), shapes={"x": (5, 4)}))


def test_no_xdsl_on_the_vxm_path(mixed_vxm: Path) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        import vknn
        s = vknn.Session({str(mixed_vxm)!r})
        out = s.run({{"x": np.ones((3, 4), np.float32)}})
        assert out["y"].shape == (3, 3), out
        banned = ("xdsl", "vknn.compiler", "vknn.frontend", "vknn.transforms", "vknn.ir",
                  "vknn.dialects")
        loaded = [m for m in sys.modules if m.startswith(banned)]
        assert not loaded, loaded
        print("ok", sorted(set(s.node_backends().values())))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok")


def test_vxm_on_vulkan_matches_the_onnx_session(mixed_vxm: Path) -> None:
    """On the Vulkan device (lavapipe here) at the compiled precision (low):
    the same partition as the ONNX session on that device and close outputs."""
    sess = vknn.Session(mixed_vxm)
    if "vulkan" not in sess.node_backends().values():
        pytest.skip("no Vulkan device")
    ref = vknn.Session(mixed_model(), vknn.Config(precision="low", buckets=[{"x": (3, 4)}]))
    assert sess.node_backends() == ref.node_backends()
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    out, want = sess.run({"x": x}), ref.run({"x": x})
    np.testing.assert_allclose(out["y"], want["y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out["idx8"], want["idx8"])
    np.testing.assert_array_equal(out["pos"], want["pos"])


# -- the CLI -----------------------------------------------------------------


def test_cli_compile_and_run_a_vxm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, out = tmp_path / "m.onnx", tmp_path / "m.vxm"
    onnx.save(mixed_model(), src)
    argv = ["compile", str(src), "-o", str(out), "--precision", "low", "--caps", "lavapipe"]
    assert cli_main([*argv, "--bucket", "x=1x4", "--bucket", "x=2x4"]) == 0
    text = capsys.readouterr().out
    assert f"wrote      {out}" in text and "buckets    x=1x4; x=2x4" in text
    assert load_vxm(out).created_by.startswith("vknn compile")
    assert cli_main(["run", str(out), "--backends", "cpu"]) == 0
    assert "output   y: float32[1, 3]" in capsys.readouterr().out
    mlir = tmp_path / "m.mlir"
    assert cli_main(["compile", str(src), "-o", str(mlir), "--caps", "lavapipe"]) == 0
    assert "vkd.plan @b0" in mlir.read_text()
    assert cli_main(["compile", str(src), "-o", str(tmp_path / "m.txt")]) == 1
    assert "write a compiled model (.vxm) or the vkd module (.mlir)" in capsys.readouterr().err
