#!/usr/bin/env python3
"""Writes seeds for the model fuzz targets from the issue 46 attacks (tests/hostile.rs builds the
same models inside its tests). Python standard library only: the ONNX protobuf is encoded by
hand (field numbers from onnx.proto3).

- onnx_decoder (fuzz/corpus/onnx_decoder/attack_*.onnx): a tensor with two `location` entries;
  one file named `w.bin`, `./w.bin` and `.//w.bin`; a `sub/../w.bin` location; node names with a
  newline, ANSI escapes, U+202E and U+009B; a Split into 3000 outputs; a rank-10,000 input; six
  constant Ranges of 240M elements; If nodes nested 30 and 70 deep.
- ir_reader (fuzz/corpus/ir_reader/attack_*.ir, packed as fuzz/pack_ir_corpus.py packs:
  [u32 LE length of the XML][XML][.bin]): a Concat of 800 input ports (ids 0, 1, ...), a Concat
  whose 500 port ids run backwards with gaps, a Split into 500 outputs feeding a Concat of 500
  ports, If layers nested 66 deep, layer names with a newline and ANSI escapes.

Every file is under 100 KB. Usage: python3 fuzz/gen_attack_seeds.py   (from the repository root)
"""
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
MAX_SIZE = 100_000

# --- protobuf wire format -------------------------------------------------------------------


def varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def f_int(field, n):
    return key(field, 0) + varint(n)


def f_bytes(field, b):
    if isinstance(b, str):
        b = b.encode("utf-8")
    return key(field, 2) + varint(len(b)) + b


def f_packed(field, ns):
    return f_bytes(field, b"".join(varint(n) for n in ns))


# --- ONNX messages --------------------------------------------------------------------------

FLOAT, INT64 = 1, 7


def dim(n):  # TensorShapeProto.Dimension: dim_value = 1
    return f_int(1, n)


def value_info(name, elem, dims):
    shape = b"".join(f_bytes(1, dim(d)) for d in dims)  # TensorShapeProto.dim = 1
    tensor = f_int(1, elem) + f_bytes(2, shape)  # TypeProto.Tensor: elem_type 1, shape 2
    typ = f_bytes(1, tensor)  # TypeProto.tensor_type = 1
    return f_bytes(1, name) + f_bytes(2, typ)  # ValueInfoProto: name 1, type 2


def int_attr(name, v):  # AttributeProto: name 1, i 3, type 20 (INT = 2)
    return f_bytes(1, name) + f_int(3, v) + f_int(20, 2)


def graph_attr(name, g):  # AttributeProto: g 6, type 20 (GRAPH = 5)
    return f_bytes(1, name) + f_bytes(6, g) + f_int(20, 5)


def node(op, name, inputs, outputs, attrs=()):
    # NodeProto: input 1, output 2, name 3, op_type 4, attribute 5
    b = b"".join(f_bytes(1, i) for i in inputs)
    b += b"".join(f_bytes(2, o) for o in outputs)
    b += f_bytes(3, name) + f_bytes(4, op)
    b += b"".join(f_bytes(5, a) for a in attrs)
    return b


def i64_tensor(name, vals, dims=None):
    # TensorProto: dims 1, data_type 2, int64_data 7, name 8
    dims = [len(vals)] if dims is None else dims
    return f_packed(1, dims) + f_int(2, INT64) + f_packed(7, vals) + f_bytes(8, name)


def external(name, n, entries):
    """An f32[n] initializer in external data; `entries` are (key, value) pairs in order."""
    # TensorProto: external_data 13 (StringStringEntryProto: key 1, value 2), data_location 14
    b = f_packed(1, [n]) + f_int(2, FLOAT) + f_bytes(8, name)
    b += b"".join(f_bytes(13, f_bytes(1, k) + f_bytes(2, v)) for k, v in entries)
    return b + f_int(14, 1)


def graph(nodes, inits, inputs, outputs, name="g"):
    # GraphProto: node 1, name 2, initializer 5, input 11, output 12
    b = b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, name)
    b += b"".join(f_bytes(5, t) for t in inits)
    b += b"".join(f_bytes(11, v) for v in inputs)
    b += b"".join(f_bytes(12, v) for v in outputs)
    return b


def model(g, opset=13):
    # ModelProto: ir_version 1, graph 7, opset_import 8 (domain 1, version 2)
    return f_int(1, 8) + f_bytes(8, f_bytes(1, "") + f_int(2, opset)) + f_bytes(7, g)


def add_model(n, inits):
    """y = x + w0 + w1 + ... over f32[n] (tests/hostile.rs `add_model`)."""
    nodes, prev = [], "x"
    for i, (tname, _) in enumerate(inits):
        out = "y" if i + 1 == len(inits) else f"s{i}"
        nodes.append(node("Add", f"add{i}", [prev, tname], [out]))
        prev = out
    return model(
        graph(
            nodes,
            [t for _, t in inits],
            [value_info("x", FLOAT, [n])],
            [value_info("y", FLOAT, [n])],
        )
    )


def ext(name, n, location, offset, extra=()):
    entries = [("location", location), ("offset", str(offset)), ("length", str(n * 4))]
    return (name, external(name, n, entries + list(extra)))


def nested_if_onnx(levels):
    """x: f32[2] through `levels` nested If nodes; every branch is an Identity of `x` at the
    innermost level and in each else-branch."""

    def body(level, inner):
        # A subgraph computing `o{level}` from the outer scope's `x`.
        if inner == 0:
            return graph(
                [node("Identity", f"id{level}", ["x"], [f"o{level}"])],
                [],
                [],
                [value_info(f"o{level}", FLOAT, [2])],
                name=f"b{level}",
            )
        return graph(
            [
                node(
                    "If",
                    f"if{level}",
                    ["c"],
                    [f"o{level}"],
                    [
                        graph_attr("then_branch", body(level + 1, inner - 1)),
                        graph_attr("else_branch", body(-level, 0)),
                    ],
                )
            ],
            [],
            [],
            [value_info(f"o{level}", FLOAT, [2])],
            name=f"b{level}",
        )

    # TensorProto: data_type 2 (BOOL = 9), int32_data 5, name 8 (no dims: a scalar)
    cond = f_int(2, 9) + f_packed(5, [1]) + f_bytes(8, "c")
    # The top graph: the outermost If's graph, with `x` an input and `c` an initializer.
    top = body(1, levels - 1)
    return model(top + f_bytes(5, cond) + f_bytes(11, value_info("x", FLOAT, [2])))


def onnx_seeds():
    s = {}
    # Two `location` entries: onnx reads the last.
    s["two_locations"] = add_model(4, [ext("w", 4, "a.bin", 0, [("location", "b.bin")])])
    # One data file named three ways.
    s["dot_spellings"] = add_model(
        4,
        [ext("w1", 4, "w.bin", 0), ext("w2", 4, "./w.bin", 16), ext("w3", 4, ".//w.bin", 0)],
    )
    s["dotdot_location"] = add_model(
        4, [ext("w1", 4, "w.bin", 0), ext("w3", 4, "sub/../w.bin", 0)]
    )
    # Node names that would end a line, colour the terminal and forge a line.
    evil = "s\n\x1b[31mslice-opt: error: FAKE\u202e\u009b"
    nodes = []
    for i in range(3):
        out = "y" if i == 2 else f"t{i}"
        nodes.append(node("Slice", f"{evil}{i}", ["x", "starts", "ends"], [out]))
    s["escaped_names"] = model(
        graph(
            nodes,
            [i64_tensor("starts", [1]), i64_tensor("ends", [3])],
            [value_info("x", FLOAT, [4])],
            [value_info("y", FLOAT, [4])]
            + [value_info(f"t{i}", FLOAT, [2]) for i in range(2)],
            name="g\x1b[2J\r",
        )
    )
    # A Split into K outputs (the --verify attack had 6000; 3000 keeps the file small).
    k = 3000
    outs = [f"y{i}" for i in range(k)]
    s["split_many"] = model(
        graph(
            [node("Split", "split", ["x", "split"], outs, [int_attr("axis", 0)])],
            [i64_tensor("split", [1] * k)],
            [value_info("x", FLOAT, [k])],
            [value_info(o, FLOAT, [1]) for o in outs],
        )
    )
    # A rank-10,000 input of one element.
    s["rank_10000"] = model(
        graph(
            [node("Add", "add", ["x", "x"], ["y"])],
            [],
            [value_info("x", FLOAT, [1] * 10000)],
            [value_info("y", FLOAT, [1] * 10000)],
        )
    )
    # Six constant Ranges of 240M f32 elements each (960 MB), summed.
    nodes, prev = [], None
    inits = [
        # TensorProto: data_type 2, float_data 4 (packed fixed32), name 8; scalars (no dims)
        f_int(2, FLOAT) + f_bytes(4, struct.pack("<f", v)) + f_bytes(8, n)
        for n, v in [("start", 0.0), ("limit", 240e6), ("delta", 1.0)]
    ]
    for i in range(6):
        nodes.append(node("Range", f"range{i}", ["start", "limit", "delta"], [f"r{i}"]))
        if prev is not None:
            out = "y" if i == 5 else f"s{i}"
            nodes.append(node("Add", f"add{i}", [prev, f"r{i}"], [out]))
            prev = out
        else:
            prev = f"r{i}"
    s["six_ranges"] = model(graph(nodes, inits, [], [value_info("y", FLOAT, [240000000])]))
    # If nodes nested 30 deep (each then-branch holds the next), and 70 deep: beyond the
    # decoder's recursion limit (three messages a level), refused while decoding.
    for levels in (30, 70):
        s[f"nested_if_{levels}"] = nested_if_onnx(levels)
    return s


# --- OpenVINO IR ----------------------------------------------------------------------------


def port(pid, dims=(1,), prec="FP32", names=None):
    n = f' names="{names}"' if names else ""
    d = "".join(f"<dim>{x}</dim>" for x in dims)
    return f'<port id="{pid}" precision="{prec}"{n}>{d}</port>'


def edge(fl, fp, tl, tp):
    return f'<edge from-layer="{fl}" from-port="{fp}" to-layer="{tl}" to-port="{tp}"/>'


def net(layers, edges, name="net"):
    return (
        f'<?xml version="1.0"?>\n<net name="{name}" version="11">\n<layers>\n'
        + "\n".join(layers)
        + "\n</layers>\n<edges>\n"
        + "\n".join(edges)
        + "\n</edges>\n</net>\n"
    )


def param(lid, name, dims):
    shape = ",".join(str(d) for d in dims)
    return (
        f'<layer id="{lid}" name="{name}" type="Parameter" version="opset1">'
        f'<data shape="{shape}" element_type="f32"/><output>{port(0, dims, names=name)}</output>'
        "</layer>"
    )


def result(lid, name, dims):
    return (
        f'<layer id="{lid}" name="{name}" type="Result" version="opset1">'
        f"<input>{port(0, dims)}</input></layer>"
    )


def wide_concat(k, ids, out):
    """x: f32[1] into every input port of one Concat (tests/hostile.rs `wide_concat_ir`)."""
    layers = [
        param(0, "x", [1]),
        '<layer id="1" name="concat" type="Concat" version="opset1"><data axis="0"/><input>'
        + "".join(port(ids(i)) for i in range(k))
        + f"</input><output>{port(out, [k], names='y')}</output></layer>",
        result(2, "y", [k]),
    ]
    edges = [edge(0, 0, 1, ids(i)) for i in range(k)] + [edge(1, out, 2, 0)]
    return net(layers, edges, "concat")


def split_many(k):
    """x: f32[k] split on axis 0 into k outputs, concatenated again."""
    layers = [
        param(0, "x", [k]),
        '<layer id="1" name="axis" type="Const" version="opset1">'
        '<data element_type="i64" shape="" offset="0" size="8"/>'
        '<output><port id="0" precision="I64"/></output></layer>',
        f'<layer id="2" name="split" type="Split" version="opset1"><data num_splits="{k}"/>'
        f'<input>{port(0, [k])}<port id="1" precision="I64"/></input><output>'
        + "".join(port(2 + i) for i in range(k))
        + "</output></layer>",
        '<layer id="3" name="concat" type="Concat" version="opset1"><data axis="0"/><input>'
        + "".join(port(i) for i in range(k))
        + f"</input><output>{port(k, [k], names='y')}</output></layer>",
        result(4, "y", [k]),
    ]
    edges = [edge(0, 0, 2, 0), edge(1, 0, 2, 1)]
    edges += [edge(2, 2 + i, 3, i) for i in range(k)] + [edge(3, k, 4, 0)]
    return net(layers, edges, "split"), struct.pack("<q", 0)


def nested_if(levels):
    """x: f32[2] through `levels` nested Ifs (tests/hostile.rs `nested_if_ir`)."""

    def p(pid):
        # No precision attribute (optional), to keep the file under 100 KB.
        return f'<port id="{pid}"><dim>2</dim></port>'

    cond = (
        '<layer id="1" name="c" type="Const" version="opset1"><data element_type="boolean" '
        'shape="" offset="0" size="1"/><output><port id="0" precision="BOOL"/></output></layer>'
    )
    passthrough = (
        '<layers><layer id="0" name="p" type="Parameter" version="opset1"><data shape="2" '
        f'element_type="f32"/><output>{p(0)}</output></layer><layer id="1" name="r" '
        f'type="Result" version="opset1"><input>{p(0)}</input></layer></layers>'
        f"<edges>{edge(0, 0, 1, 0)}</edges>"
    )

    def g(level, inner, top):
        then_body = passthrough if inner == 0 else g(level + 1, inner - 1, False)
        out_layer = 1 if inner == 0 else 3
        then_map = (
            '<input external_port_id="1" internal_layer_id="0"/>'
            f'<output external_port_id="2" internal_layer_id="{out_layer}"/>'
        )
        else_map = (
            '<input external_port_id="1" internal_layer_id="0"/>'
            '<output external_port_id="2" internal_layer_id="1"/>'
        )
        opn, cls = ('<net name="nested" version="11">', "</net>") if top else ("", "")
        return (
            f'{opn}<layers><layer id="0" name="x{level}" type="Parameter" version="opset1">'
            f'<data shape="2" element_type="f32"/><output>{p(0)}</output></layer>{cond}'
            f'<layer id="2" name="if{level}" type="If" version="opset8">'
            f"<then_port_map>{then_map}</then_port_map><else_port_map>{else_map}</else_port_map>"
            f'<input><port id="0" precision="BOOL"/>{p(1)}</input><output>{p(2)}</output>'
            f"<then_body>{then_body}</then_body><else_body>{passthrough}</else_body></layer>"
            f'<layer id="3" name="y{level}" type="Result" version="opset1"><input>{p(0)}</input>'
            f"</layer></layers><edges>{edge(0, 0, 2, 1)}{edge(1, 0, 2, 0)}{edge(2, 2, 3, 0)}"
            f"</edges>{cls}"
        )

    return f'<?xml version="1.0"?>\n{g(1, levels - 1, True)}\n', b"\x01"


def escaped_names():
    """Layer and tensor names with a newline, ESC, CSI and U+202E (as character references
    and raw)."""
    evil_ref = "s&#10;&#x1b;[31mslice-opt: error: FAKE&#x202e;&#x9b;"
    evil_raw = "r\n\x1b[2J\rslice-opt: error: FAKE\u202e"
    layers = [
        param(0, "x", [4]).replace('names="x"', f'names="x,{evil_ref}"'),
        '<layer id="1" name="b" type="Const" version="opset1">'
        '<data element_type="i64" shape="1" offset="0" size="8"/>'
        '<output><port id="0" precision="I64"><dim>1</dim></port></output></layer>',
        '<layer id="2" name="e" type="Const" version="opset1">'
        '<data element_type="i64" shape="1" offset="8" size="8"/>'
        '<output><port id="0" precision="I64"><dim>1</dim></port></output></layer>',
        '<layer id="3" name="st" type="Const" version="opset1">'
        '<data element_type="i64" shape="1" offset="16" size="8"/>'
        '<output><port id="0" precision="I64"><dim>1</dim></port></output></layer>',
        f'<layer id="4" name="{evil_ref}" type="StridedSlice" version="opset1">'
        '<data begin_mask="0" end_mask="0" new_axis_mask="" shrink_axis_mask="" '
        f'ellipsis_mask=""/><input>{port(0, [4])}{port(1, [1], "I64")}{port(2, [1], "I64")}'
        f'{port(3, [1], "I64")}</input><output>{port(4, [2], names=evil_raw)}</output></layer>',
        f'<layer id="5" name="{evil_raw}" type="Result" version="opset1">'
        f"<input>{port(0, [2])}</input></layer>",
    ]
    edges = [edge(0, 0, 4, 0), edge(1, 0, 4, 1), edge(2, 0, 4, 2), edge(3, 0, 4, 3)]
    edges.append(edge(4, 4, 5, 0))
    return net(layers, edges, "evil\x1b[0m"), struct.pack("<3q", 1, 3, 1)


def ir_seeds():
    return {
        "concat_800": (wide_concat(800, lambda i: i, 800), b""),
        "concat_500_sorted": (wide_concat(500, lambda i: 3 * (500 - i), 1), b""),
        "split_500": split_many(500),
        "nested_if_66": nested_if(66),
        "escaped_names": escaped_names(),
    }


def write(path, data):
    assert len(data) < MAX_SIZE, f"{path}: {len(data)} bytes"
    with open(path, "wb") as f:
        f.write(data)
    print(f"{os.path.relpath(path, ROOT)}: {len(data)} bytes")


def main():
    d = os.path.join(CORPUS, "onnx_decoder")
    os.makedirs(d, exist_ok=True)
    for name, data in onnx_seeds().items():
        write(os.path.join(d, f"attack_{name}.onnx"), data)
    d = os.path.join(CORPUS, "ir_reader")
    os.makedirs(d, exist_ok=True)
    for name, (xml, b) in ir_seeds().items():
        x = xml.encode("utf-8")
        write(os.path.join(d, f"attack_{name}.ir"), struct.pack("<I", len(x)) + x + b)


if __name__ == "__main__":
    main()
