"""Hostile files (issue 14, items 2, 6, 7, 8, 10, 11, 14): external data
outside the model's folder is never opened, in any configuration; only
regular files are read; weights are fixed at creation; a cache file never
overwrites somebody's file and a damaged one is rebuilt; invalid graphs and
CLI options give one line. Each configuration runs in a subprocess that
records every file Python opens (an audit hook) and has a time limit, so a
hang is a failure, not a stuck test run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import msgpack
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import vknn
from vknn.errors import ModelLoadError
from vknn.model_cache import HEADER

W = np.arange(32, dtype=np.float32).reshape(8, 4)
X = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
CPU = vknn.Config(backends=("cpu",), cache_file="off")


def _model(folder: Path, location: str = "w.bin") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    graph = helper.make_graph([node], "g", [x], [y], [numpy_helper.from_array(W, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / "model.onnx"
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="w.bin", size_threshold=0)  # fmt: skip
    if location != "w.bin":
        _edit_external(path, location=location)
    return path


def _edit_external(path: Path, **entries: str) -> None:
    model = onnx.load(path, load_external_data=False)
    t = model.graph.initializer[0]
    have = {e.key: e for e in t.external_data}
    for key, value in entries.items():
        if key in have:
            have[key].value = value
        else:
            t.external_data.add(key=key, value=value)
    onnx.save(model, path)


# -- item 2: nothing outside the folder is opened, in every configuration ---------------

_RUNNER = """
import json, os, sys
opened = []
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        opened.append(os.fsdecode(args[0]))
    elif event == "mmap.__new__":
        opened.append("<mmap>")
sys.addaudithook(hook)
import numpy as np
P, MODE = sys.argv[1], sys.argv[2]
x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
status = "ok"
try:
    if MODE == "session-cache":
        import vknn
        s = vknn.Session(P, vknn.Config(backends=("cpu",)))
        s.run({"x": x}); s.close()
    elif MODE == "session-nocache":
        import vknn
        vknn.Session(P, vknn.Config(backends=("cpu",), cache_file="off")).run({"x": x})
    elif MODE == "ort":
        from vknn.ort_compat import InferenceSession
        InferenceSession(P, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    elif MODE == "cli":
        from vknn.tools.cli import main
        status = f"rc={main(['run', P, '--backends', 'cpu'])}"
except Exception as e:
    status = f"{type(e).__name__}: {e}"
print(json.dumps({"status": status, "opened": opened}))
"""


def _run_recorded(path: Path, mode: str, tmp: Path) -> tuple[dict, str]:  # type: ignore[type-arg]
    env = dict(os.environ, VKNN_MODEL_CACHE="1", VKNN_CACHE_DIR=str(tmp / "home"))
    r = subprocess.run([sys.executable, "-c", _RUNNER, str(path), mode], capture_output=True,
                       text=True, timeout=120, env=env)  # fmt: skip
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def _outside(tmp: Path, name: str) -> Path:
    secret = tmp / name
    secret.write_bytes(W.tobytes())
    return secret


HOSTILE = ["dotdot", "absolute", "passwd", "symlink-out", "symlink-devzero", "fifo", "directory"]


def _hostile(tmp: Path, kind: str) -> tuple[Path, str]:
    """A model in tmp/m whose external data is `kind`; (model, what must not be opened)."""
    folder = tmp / "m"
    secret = _outside(tmp, "secret.bin")
    if kind == "dotdot":
        return _model(folder, "../secret.bin"), str(secret)
    if kind == "absolute":
        return _model(folder, str(secret)), str(secret)
    if kind == "passwd":
        return _model(folder, "/etc/passwd"), "/etc/passwd"
    path = _model(folder)
    (folder / "w.bin").unlink()
    if kind == "symlink-out":
        os.symlink(secret, folder / "w.bin")
        return path, str(secret)
    if kind == "symlink-devzero":
        os.symlink("/dev/zero", folder / "w.bin")
        return path, "/dev/zero"
    if kind == "fifo":
        os.mkfifo(folder / "w.bin")
    else:
        (folder / "w.bin").mkdir()
    return path, str(folder / "w.bin")


@pytest.mark.parametrize("mode", ["session-cache", "session-nocache", "ort", "cli"])
@pytest.mark.parametrize("kind", HOSTILE)
def test_external_data_outside_or_not_regular_is_never_opened(
    tmp_path: Path, kind: str, mode: str
) -> None:
    path, forbidden = _hostile(tmp_path, kind)
    result, stderr = _run_recorded(path, mode, tmp_path)
    opened = [os.path.realpath(p) for p in result["opened"]]
    assert os.path.realpath(forbidden) not in opened, (kind, mode, result)
    assert "<mmap>" not in opened
    if mode == "cli":
        assert result["status"] == "rc=1"
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("vknn: error: initializer 'w'"), stderr
    else:
        assert result["status"].startswith("ModelLoadError: initializer 'w'"), result["status"]
        assert "\n" not in result["status"]


@pytest.mark.parametrize("kind", ["fifo", "devzero", "directory"])
def test_model_file_that_is_not_regular_is_refused_without_blocking(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "model.onnx"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "devzero":
        os.symlink("/dev/zero", path)
    else:
        path.mkdir()
    result, _ = _run_recorded(path, "session-cache", tmp_path)  # 120 s limit: a hang fails
    assert result["status"].startswith("ModelLoadError"), result
    assert "not a regular file" in result["status"] or "directory" in result["status"]


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"offset": "abc"}, "offset 'abc' is not an integer"),
        ({"length": "xyz"}, "length 'xyz' is not an integer"),
        ({"offset": "-4"}, "offset -4 is negative"),
        ({"location": "w\x00.bin"}, "contains a NUL byte"),
        ({"offset": "120"}, "truncated"),
    ],
)
def test_bad_external_data_fields_are_one_line(
    tmp_path: Path, entries: dict[str, str], message: str
) -> None:
    path = _model(tmp_path)
    _edit_external(path, **entries)
    with pytest.raises(ModelLoadError, match=message) as err:
        vknn.Session(path, CPU)
    assert "\n" not in str(err.value)


# -- item 7: weights are fixed at creation --------------------------------------------


def test_weights_are_copied_not_mapped(tmp_path: Path) -> None:
    """Rewriting or truncating the .bin after Session() changes nothing (an
    mmap would change the CPU results, and SIGBUS on the truncated file)."""
    path = _model(tmp_path)
    code = textwrap.dedent(f"""
        import numpy as np, vknn
        x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
        s = vknn.Session({str(path)!r}, vknn.Config(backends=("cpu",), cache_file="off"))
        before = s.run({{"x": x}})["y"]
        open({str(tmp_path / "w.bin")!r}, "r+b").write(b"\\xff" * 64)
        a = s.run({{"x": x}})["y"]
        open({str(tmp_path / "w.bin")!r}, "wb").close()
        b = s.run({{"x": x}})["y"]
        print(np.array_equal(before, a) and np.array_equal(before, b))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "True"


# -- items 6, 10, 4: the cache file --------------------------------------------------------


def _one_warning(err: str, *words: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0], err


@pytest.mark.parametrize("victim", ["notes", "model"])
def test_cache_file_never_overwrites_another_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], victim: str
) -> None:
    path = _model(tmp_path / "m")
    target = tmp_path / "notes.txt" if victim == "notes" else path
    if victim == "notes":
        target.write_text("my notes\n")
    before = target.read_bytes()
    s = vknn.Session(path, vknn.Config(backends=("cpu",), cache_file=str(target)))
    np.testing.assert_array_equal(s.run({"x": X})["y"], X @ W)
    s.close()
    assert target.read_bytes() == before
    _one_warning(capsys.readouterr().err, str(target), "not a VKNN model cache")


@pytest.mark.parametrize("cut", [0, 1, 5, len(HEADER) - 1])
def test_cache_cut_before_its_header_is_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cut: int
) -> None:
    path, cache = _model(tmp_path / "m"), tmp_path / "c.vkcache"
    config = vknn.Config(backends=("cpu",), cache_file=str(cache))
    s = vknn.Session(path, config)
    s.run({"x": X})
    s.close()
    cache.write_bytes(cache.read_bytes()[:cut])
    capsys.readouterr()
    s = vknn.Session(path, config)
    np.testing.assert_array_equal(s.run({"x": X})["y"], X @ W)
    s.close()
    _one_warning(capsys.readouterr().err, "discarded", "truncated")
    assert cache.read_bytes().startswith(HEADER)  # rebuilt, not ignored for good
    warm = vknn.Session(path, config)
    assert warm._proto is None  # served from the cache: no ONNX parsed
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("what", ["weight", "step"])
def test_edited_cache_is_discarded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str
) -> None:
    """Editing a weight or a step inside the payload (the MAC left as it was):
    the cache is not trusted, the outputs stay right."""
    path, cache = _model(tmp_path / "m"), tmp_path / "c.vkcache"
    config = vknn.Config(backends=("cpu",), cache_file=str(cache))
    s = vknn.Session(path, config)
    ref = s.run({"x": X})["y"]
    s.close()
    outer = msgpack.unpackb(cache.read_bytes(), raw=False)
    payload = outer["payload"]
    needle = W.tobytes()[4:16] if what == "weight" else b"\xa2op"  # a step's "op" key
    assert needle in payload
    i = payload.index(needle) + (0 if what == "weight" else 4)  # weight byte / op name
    outer["payload"] = payload[:i] + bytes([payload[i] ^ 0x40]) + payload[i + 1 :]
    cache.write_bytes(msgpack.packb(outer, use_bin_type=True))
    capsys.readouterr()
    s = vknn.Session(path, config)
    np.testing.assert_array_equal(s.run({"x": X})["y"], ref)
    _one_warning(capsys.readouterr().err, "discarded", "authentication failed")


@pytest.mark.parametrize("kind", ["fifo", "devzero"])
def test_cache_path_that_is_not_a_regular_file_is_ignored(tmp_path: Path, kind: str) -> None:
    path = _model(tmp_path / "m")
    cache = path.with_name(path.name + ".vkcache")
    if kind == "fifo":
        os.mkfifo(cache)
    else:
        os.symlink("/dev/zero", cache)
    result, stderr = _run_recorded(path, "session-cache", tmp_path)
    assert result["status"] == "ok", result
    _one_warning(stderr, "not a VKNN model cache")


def test_cache_elsewhere_with_external_data(tmp_path: Path) -> None:
    """Config.cache_file outside the model's folder, model with external
    data: written and used (was a ValueError from relative_to)."""
    path, cache = _model(tmp_path / "m"), tmp_path / "other" / "c.vkcache"
    cache.parent.mkdir()
    config = vknn.Config(backends=("cpu",), cache_file=str(cache))
    s = vknn.Session(path, config)
    s.run({"x": X})
    s.close()
    warm = vknn.Session(path, config)
    assert warm._proto is None
    np.testing.assert_array_equal(warm.run({"x": X})["y"], X @ W)


# -- items 8, 14: invalid graphs -----------------------------------------------------------


def _graph(nodes, inputs=None, inits=()) -> onnx.ModelProto:  # type: ignore[no-untyped-def]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "g", inputs or [x], [y], list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _negative_dim_tensor() -> TensorProto:
    t = TensorProto(name="c", data_type=TensorProto.FLOAT)
    t.dims.append(-1)
    return t


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (_graph([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], stride=[2, 2])]),
         "unknown attribute 'stride'"),
        (_graph([helper.make_node("MaxPool", ["x"], ["y"])]),
         "required attribute 'kernel_shape' is missing"),
        (_graph([helper.make_node("Relu", ["x", "x"], ["y"])]), "2 inputs, the schema takes 1"),
        (_graph([helper.make_node("Relu", ["x"], ["y"], alpha=1.0)]), "unknown attribute 'alpha'"),
        (_graph([helper.make_node("Softmax", ["x"], ["y"], axis=1.5)]),
         "attribute 'axis' is FLOAT, the schema says INT"),
        (_graph([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"])]),
         "output 'y' is already produced"),
        (_graph([helper.make_node("Relu", ["x"], ["y"])],
                inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])] * 2),
         "graph input 'x' is declared twice"),
        (_graph([helper.make_node("Add", ["x", "c"], ["y"])],
                inits=[_negative_dim_tensor()]),
         "negative dimension"),
    ],
)  # fmt: skip
def test_invalid_graphs_are_refused_in_one_line(model: onnx.ModelProto, message: str) -> None:
    with pytest.raises(ModelLoadError, match=message) as err:
        vknn.Session(model.SerializeToString(), CPU)
    assert "\n" not in str(err.value)


def test_type_error_in_shape_inference_is_one_line() -> None:
    """A bool tensor into Conv: ONNX's inference raises even leniently."""
    x = helper.make_tensor_value_info("x", TensorProto.BOOL, [1, 1, 4, 4])
    w = numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "w")
    model = _graph([helper.make_node("Conv", ["x", "w"], ["y"])], inputs=[x], inits=[w])
    with pytest.raises(vknn.errors.VknnError) as err:
        vknn.Session(model.SerializeToString(), CPU)
    assert "\n" not in str(err.value) and "Conv" in str(err.value)


def test_invalid_utf8_in_names_is_one_line() -> None:
    """protobuf returns a proto2 string with invalid UTF-8 as bytes (was a
    TypeError in the schema lookup and elsewhere)."""
    model = _graph([helper.make_node("Relu", ["x"], ["y"], name="relu")])
    data = model.SerializeToString().replace(b"Relu", b"Rel\x80")
    with pytest.raises(ModelLoadError, match="not valid UTF-8") as err:
        vknn.Session(data, CPU)
    assert "\n" not in str(err.value)


def test_control_characters_in_names_are_one_line() -> None:
    x = helper.make_tensor_value_info("x\nTraceback", TensorProto.FLOAT, [1, 1, 4, 4])
    model = _graph([helper.make_node("Relu", ["x\nTraceback"], ["y"])], inputs=[x])
    with pytest.raises(ModelLoadError, match="not valid UTF-8 text") as err:
        vknn.Session(model.SerializeToString(), CPU)
    assert "\n" not in str(err.value)


def test_flag_attribute_beyond_one_is_true() -> None:
    """Gemm transB=3 (fuzz seed 13 case 277): an xDSL VerifyException
    building an i1; onnxruntime reads any nonzero flag as true."""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(4, 3)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    node = helper.make_node("Gemm", ["x", "b"], ["y"], transB=3)
    graph = helper.make_graph([node], "g", [x], [y], [numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    out = vknn.Session(model.SerializeToString(), CPU).run({"x": a})["y"]
    np.testing.assert_allclose(out, a @ b.T)


def test_zero_element_initializer() -> None:
    """A [32, 0] weight (fuzz seed 14 case 552): an empty constant is falsy,
    and segment_steps asserted on it."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 0])
    w = numpy_helper.from_array(np.zeros((32, 0), np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    out = vknn.Session(model.SerializeToString(), CPU).run({"x": np.ones((2, 32), np.float32)})
    assert out["y"].shape == (2, 0)


# -- item 11: CLI options, one line ---------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["vknn-opt", "-p", ",,"], "vknn-opt: error: bad pass pipeline"),
        (["vknn-opt", "-p", "infer-shapes{"], "vknn-opt: error: bad pass pipeline"),
        (["vknn", "compile", "--pipeline", "nosuch"], "vknn: error: unknown pipeline 'nosuch'"),
        (["vknn", "compile", "--dims", 'a="1'], "vknn: error: bad pass pipeline"),
        (["vknn", "run", "--backends", "cpu", "--input", "x=/missing.npy"],
         "vknn: error: --input x=/missing.npy: cannot load"),
        (["vknn", "run", "--backends", "cpu", "--input", "x={obj}"],
         "vknn: error: --input x={obj}: cannot load (Object arrays"),
        (["vknn", "run", "--seed", "-1"], "vknn: error: argument --seed"),
        (["vknn", "run", "--nosuch"], "vknn: error: unrecognized arguments: --nosuch"),
    ],
)  # fmt: skip
def test_cli_errors_are_one_line(tmp_path: Path, argv: list[str], message: str) -> None:
    path = _model(tmp_path / "m")
    obj = tmp_path / "obj.npy"
    np.save(obj, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    tool = "vknn.tools.vknn_opt" if argv[0] == "vknn-opt" else "vknn.tools.cli"
    args = [a.replace("{obj}", str(obj)) for a in argv[1:]]
    env = dict(os.environ, VKNN_MODEL_CACHE="0")
    r = subprocess.run([sys.executable, "-m", tool, *args, str(path)], capture_output=True,
                       text=True, timeout=120, env=env)  # fmt: skip
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode != 0
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(message.replace("{obj}", str(obj))), lines[0]
