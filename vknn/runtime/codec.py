"""Plain values, arrays and `Step`s <-> msgpack-able data, an exact round trip.

msgpack knows None, bool, int, float, str, bytes, lists and maps; a step also
holds tuples, dicts with non-string keys, numpy arrays and scalars, nested
`Step`s (fused bodies, merged epilogues) and `TensorSpec`s. Every value that
is not a msgpack scalar or a list is encoded as a map tagged by the key "$"
(`{"$": "tuple", "v": [...]}`); plain dicts are tagged too, so any map in the
encoded form is a tag and nothing can be confused with one.

Arrays keep their dtype, shape and bytes (little-endian, C order). A
broadcast splat (`np.broadcast_to` of one value, as const-fold makes for
ConstantOfShape) is stored as its one element and decoded as the same
zero-copy view. Decoded arrays are read-only views of the decoded bytes:
plan constants are never written.

No xDSL here: the runtime decodes plans.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vknn.errors import VknnError
from vknn.runtime.plan import Step, TensorSpec

TAG = "$"

Encoded = Any
"""A value made only of None, bool, int, float, str, bytes, lists and str-keyed maps."""


class PlanCodecError(VknnError):
    """A plan value that cannot be encoded, or encoded data that is not a plan."""


# -- arrays ------------------------------------------------------------------


def _dtype_name(dtype: np.dtype) -> str:
    # ml_dtypes types (bfloat16, float8*, int4) are numpy "void" kinds whose
    # `.str` loses them; their names resolve through ml_dtypes.
    return dtype.name if dtype.kind == "V" else dtype.newbyteorder("<").str


def _dtype(name: str) -> np.dtype:
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        kind = getattr(ml_dtypes, name, None)
        if kind is None:
            raise PlanCodecError(f"unknown array dtype '{name}'") from None
        return np.dtype(kind)


def _le_bytes(a: np.ndarray) -> bytes:
    le = a.dtype if a.dtype.kind == "V" else a.dtype.newbyteorder("<")
    return np.ascontiguousarray(a, dtype=le).tobytes()


def _is_splat(a: np.ndarray) -> bool:
    return a.size > 1 and all(s == 0 for s in a.strides)


def encode_array(a: np.ndarray) -> dict[str, Encoded]:
    out: dict[str, Encoded] = {TAG: "nd", "dtype": _dtype_name(a.dtype), "shape": list(a.shape)}
    if a.dtype.kind == "O":
        # Object arrays (ONNX string tensors): their items, one by one.
        out["items"] = [encode_value(x) for x in a.ravel().tolist()]
        return out
    if _is_splat(a):
        out["splat"] = True
        a = a.reshape(-1)[:1]
    out["data"] = _le_bytes(a)
    return out


def decode_array(d: dict[str, Any]) -> np.ndarray:
    shape = tuple(int(s) for s in d["shape"])
    dtype = _dtype(d["dtype"])
    if "items" in d:
        a = np.empty(len(d["items"]), dtype=object)
        for i, x in enumerate(d["items"]):
            a[i] = decode_value(x)
        return a.reshape(shape)
    data = d["data"]
    if d.get("splat"):
        one = np.frombuffer(data, dtype=dtype, count=1)
        return np.broadcast_to(one.reshape(()), shape)
    flat = np.frombuffer(data, dtype=dtype)
    expected = int(np.prod(shape)) if shape else 1
    if flat.size != expected:
        raise PlanCodecError(
            f"array of shape {list(shape)} needs {expected} {dtype} values, "
            f"the data has {flat.size}"
        )
    return flat.reshape(shape)


# -- values ------------------------------------------------------------------

_INT64 = (-(2**63), 2**64 - 1)


def encode_value(v: Any) -> Encoded:
    """A plan value (step attribute, nested structure) as plain msgpack data."""
    if isinstance(v, np.generic):  # before float/str/bytes: np.float64 is a float
        a = np.asarray(v)
        return {TAG: "scalar", "dtype": _dtype_name(a.dtype), "data": _le_bytes(a)}
    if v is None or isinstance(v, bool | str | bytes | float):
        return v
    if isinstance(v, int):
        if not _INT64[0] <= v <= _INT64[1]:
            raise PlanCodecError(f"integer {v} does not fit 64 bits")
        return v
    if isinstance(v, list):
        return [encode_value(x) for x in v]
    if isinstance(v, tuple):
        return {TAG: "tuple", "v": [encode_value(x) for x in v]}
    if isinstance(v, dict):
        return {TAG: "dict", "v": [[encode_value(k), encode_value(x)] for k, x in v.items()]}
    if isinstance(v, np.ndarray):
        return encode_array(v)
    if isinstance(v, Step):
        return encode_step(v)
    if isinstance(v, TensorSpec):
        return {TAG: "spec", "name": v.name, "shape": list(v.shape), "dtype": v.dtype}
    if isinstance(v, bytearray):
        return {TAG: "bytearray", "v": bytes(v)}
    raise PlanCodecError(f"cannot encode a plan value of type {type(v).__name__}: {v!r:.80}")


def decode_value(v: Encoded) -> Any:
    if isinstance(v, list):
        return [decode_value(x) for x in v]
    if not isinstance(v, dict):
        return v
    tag = v.get(TAG)
    if tag == "tuple":
        return tuple(decode_value(x) for x in v["v"])
    if tag == "dict":
        return {_hashable(decode_value(k)): decode_value(x) for k, x in v["v"]}
    if tag == "nd":
        return decode_array(v)
    if tag == "scalar":
        return np.frombuffer(v["data"], dtype=_dtype(v["dtype"]), count=1)[0]
    if tag == "step":
        return decode_step(v)
    if tag == "spec":
        return decode_spec(v)
    if tag == "bytearray":
        return bytearray(v["v"])
    raise PlanCodecError(f"unknown encoded value tag {tag!r}")


def _hashable(k: Any) -> Any:
    if isinstance(k, list):  # cannot be a dict key; never produced by encode_value
        raise PlanCodecError("a dict key decoded to a list")
    return k


# -- steps and plans ---------------------------------------------------------


def decode_spec(d: dict[str, Any]) -> TensorSpec:
    return TensorSpec(str(d["name"]), tuple(int(s) for s in d["shape"]), str(d["dtype"]))


def encode_step(s: Step) -> dict[str, Encoded]:
    return {
        TAG: "step",
        "op": s.op,
        "node": s.node,
        "inputs": list(s.inputs),
        "outputs": list(s.outputs),
        "out_specs": [encode_value(t) for t in s.out_specs],
        "attrs": encode_value(s.attrs),
        "region": None if s.region is None else [encode_step(r) for r in s.region],
        "backend": s.backend,
        "reason": s.reason,
    }


def decode_step(d: dict[str, Any]) -> Step:
    return Step(
        op=d["op"],
        node=d["node"],
        inputs=[int(i) for i in d["inputs"]],
        outputs=[int(i) for i in d["outputs"]],
        out_specs=[decode_value(t) for t in d["out_specs"]],
        attrs=decode_value(d["attrs"]),
        region=None if d["region"] is None else [decode_step(r) for r in d["region"]],
        backend=d["backend"],
        reason=d["reason"],
    )
