"""Graph checks against ONNX's operator schemas, before anything is imported.

onnxruntime refuses a model whose nodes do not fit their schema; so does
VKNN, with one line naming the node: an unknown attribute (`stride` for
`strides` would otherwise be ignored and run with the default), an attribute
of the wrong kind, a missing required one, too many or too few inputs or
outputs, a tensor produced twice, a graph input declared twice, a negative
initializer dimension. Nodes of other domains, and op types the schema
registry does not know, are left to the importer (which says whether it
supports them).
"""

from __future__ import annotations

import onnx
from onnx import AttributeProto, ModelProto, NodeProto

from vknn.errors import ModelLoadError

_DEFAULT_DOMAINS = ("", "ai.onnx")


def check_graph(model: ModelProto, name: str, opset: int) -> None:
    """ModelLoadError for the first node or declaration that is invalid."""
    g = model.graph
    _check_utf8(g, name)
    seen_inputs: set[str] = set()
    for vi in g.input:
        if vi.name in seen_inputs:
            raise ModelLoadError(f"{name}: graph input '{vi.name}' is declared twice")
        seen_inputs.add(vi.name)
    produced: dict[str, str] = {}
    for t in g.initializer:
        if any(d < 0 for d in t.dims):
            raise ModelLoadError(
                f"{name}: initializer '{t.name}' has a negative dimension {list(t.dims)}"
            )
        produced[t.name] = "an initializer"
    for vi in g.input:
        produced.setdefault(vi.name, "a graph input")
    for node in g.node:
        where = f"{name}: node '{node.name or '?'}' ({node.op_type})"
        for out in node.output:
            if not out:
                continue
            if out in produced:
                raise ModelLoadError(
                    f"{where}: output '{out}' is already produced by {produced[out]}"
                )
            produced[out] = f"node '{node.name or '?'}' ({node.op_type})"
        if node.domain in _DEFAULT_DOMAINS:
            _check_node(node, where, opset)


def _check_node(node: NodeProto, where: str, opset: int) -> None:
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "")
    except onnx.defs.SchemaError:
        return  # not an ONNX op at this opset: the importer says so
    n_in = len(node.input)
    while n_in and not node.input[n_in - 1]:
        n_in -= 1  # trailing empty names are omitted optional inputs
    if not schema.min_input <= n_in <= schema.max_input:
        raise ModelLoadError(
            f"{where}: {n_in} inputs, the schema takes {_range(schema.min_input, schema.max_input)}"
        )
    n_out = len(node.output)
    if not schema.min_output <= n_out <= schema.max_output:
        raise ModelLoadError(
            f"{where}: {n_out} outputs, the schema gives "
            f"{_range(schema.min_output, schema.max_output)}"
        )
    declared = schema.attributes
    names = set()
    for a in node.attribute:
        if a.name in names:
            raise ModelLoadError(f"{where}: attribute '{a.name}' is given twice")
        names.add(a.name)
        spec = declared.get(a.name)
        if spec is None:
            known = ", ".join(sorted(declared)) or "none"
            raise ModelLoadError(f"{where}: unknown attribute '{a.name}' (known: {known})")
        if a.ref_attr_name:
            continue  # a function's attribute reference
        if int(a.type) != int(spec.type):
            raise ModelLoadError(
                f"{where}: attribute '{a.name}' is {_kind(int(a.type))}, the schema says "
                f"{_kind(int(spec.type))}"
            )
    for attr_name, spec in declared.items():
        if spec.required and attr_name not in names:
            raise ModelLoadError(f"{where}: required attribute '{attr_name}' is missing")


def _check_utf8(g: onnx.GraphProto, name: str) -> None:
    """protobuf hands a proto2 string with invalid UTF-8 over as bytes: refuse
    it here, before any code formats or compares it as text; likewise names
    with control characters."""

    def bad(s: object) -> bool:  # bytes, or control characters (a newline breaks one-line errors)
        return not isinstance(s, str) or any(ord(c) < 32 or c == "\x7f" for c in s)

    for vi in (*g.input, *g.output, *g.value_info):
        if bad(vi.name):
            raise ModelLoadError(f"{name}: a graph value name is not valid UTF-8 text: {vi.name!r}")
    for t in g.initializer:
        # external-data values: text only (the loader names a NUL or a bad offset itself)
        if bad(t.name) or any(
            not (isinstance(e.key, str) and isinstance(e.value, str)) for e in t.external_data
        ):
            raise ModelLoadError(f"{name}: initializer {t.name!r}: a name is not valid UTF-8 text")
    for node in g.node:
        fields = [node.name, node.op_type, node.domain, *node.input, *node.output]
        fields += [a.name for a in node.attribute]
        if any(bad(f) for f in fields):
            raise ModelLoadError(
                f"{name}: node {node.name!r} ({node.op_type!r}): a name is not valid UTF-8 text"
            )


def _range(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo} to {hi if hi < 1 << 30 else 'any number'}"


def _kind(t: int) -> str:
    try:
        return AttributeProto.AttributeType.Name(t)  # type: ignore[arg-type]
    except ValueError:
        return f"kind {t}"
