"""Writes the test vectors of lodtensor's sequence operators, from real PaddlePaddle.

Made with PaddlePaddle 2.6.2 (CPU) and numpy on Python 3.11:

    python3.11 -m venv /tmp/paddle26-venv
    /tmp/paddle26-venv/bin/pip install paddlepaddle==2.6.2
    /tmp/paddle26-venv/bin/python tests/data/paddle_ops/make_vectors.py

Each operator runs as its own static-graph op (`block.append_op`, the kernels Paddle 2.x's
`paddle.static.nn.sequence_*` layers call) on LoDTensors fed with their LoD. `OP.json` holds
a list of cases: the inputs (dtype, dims, LoD offsets, items row-major), the attributes, and
either Paddle's outputs (same form) or, for an input Paddle rejects, the first line of its
error. Floats that JSON cannot hold are the strings "nan", "inf", "-inf".

The context projection of `sequence_conv` (its im2col) is read from the op's output with an
identity filter: `Out = col @ I = col` exactly for finite inputs.
"""

import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import paddle
from paddle.base import core

HERE = os.path.dirname(os.path.abspath(__file__))
paddle.enable_static()
RNG = np.random.default_rng(2021)


def item(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def describe(array, lod):
    array = np.asarray(array)
    return {
        "dtype": str(array.dtype),
        "dims": list(array.shape),
        "lod": [[int(o) for o in level] for level in lod],
        "items": [item(v) for v in array.reshape(-1).tolist()],
    }


def error_line(e):
    """The kind and message of a Paddle error, one line: `InvalidArgument: ...`."""
    for line in str(e).splitlines():
        m = re.match(r"\s*\((\w+)\) (.*)", line) or re.match(r"\s*(\w+)Error: (.*)", line)
        if m:
            message = re.sub(r" \(at /paddle/[^)]*\)$", "", m.group(2).strip())
            return m.group(1) + ": " + message
    return type(e).__name__ + ": " + str(e).strip().splitlines()[-1]


def run(op, inputs, outputs, attrs):
    """Runs one op; `inputs` maps names to (array, lod), `outputs` names to dtypes."""
    main = paddle.static.Program()
    startup = paddle.static.Program()
    feed = {}
    with paddle.static.program_guard(main, startup):
        block = main.global_block()
        ins = {}
        for name, (array, lod) in inputs.items():
            var = block.create_var(
                name=name, shape=array.shape, dtype=str(array.dtype), lod_level=len(lod)
            )
            ins[name] = [var]
            t = core.LoDTensor()
            t.set(array, core.CPUPlace())
            if lod:
                t.set_lod(lod)
            feed[name] = t
        outs = {o: [block.create_var(name="out_" + o, dtype=d)] for o, d in outputs.items()}
        block.append_op(type=op, inputs=ins, outputs=outs, attrs=dict(attrs))
    exe = paddle.static.Executor(paddle.CPUPlace())
    fetched = exe.run(
        main, feed=feed, fetch_list=[v[0] for v in outs.values()], return_numpy=False
    )
    return {o: describe(np.array(r), r.lod()) for o, r in zip(outputs, fetched)}


def case(cases, name, op, inputs, outputs, attrs, **extra):
    entry = {
        "name": name,
        "inputs": {k: describe(a, lod) for k, (a, lod) in inputs.items()},
        "attrs": attrs,
    }
    entry.update(extra)
    try:
        entry["outputs"] = run(op, inputs, outputs, attrs)
    except Exception as e:  # noqa: BLE001 -- every rejection is recorded, by its message
        entry["error"] = error_line(e)
    print(op, name, "error: " + entry["error"] if "error" in entry else "ok", flush=True)
    cases.append(entry)


def offsets(lengths):
    return [0] + np.cumsum(lengths).astype(int).tolist() if len(lengths) else [0]


def normal(n, dtype="float32", scale=1.0):
    return (RNG.standard_normal(n) * scale).astype(dtype)


def ids(n, dtype="int64", high=10):
    return RNG.integers(0, high, n).astype(dtype).reshape(-1, 1)


def save(op, cases):
    with open(os.path.join(HERE, op + ".json"), "w") as f:
        json.dump({"paddle": paddle.__version__, "op": op, "cases": cases}, f, indent=None)
        f.write("\n")


def softmax():
    cases = []
    out = {"Out": "float32"}
    x = np.array([1, 2, 3, 4, 5], "float32").reshape(-1, 1)
    case(cases, "two_sequences", "sequence_softmax", {"X": (x, [[0, 2, 5]])}, out, {})
    lens = RNG.integers(0, 20, 60)
    lens[[3, 17, 40]] = 0
    x = normal(int(lens.sum()), scale=3).reshape(-1, 1)
    case(cases, "random_with_empty", "sequence_softmax", {"X": (x, [offsets(lens)])}, out, {})
    case(cases, "random_vector_dims", "sequence_softmax", {"X": (x.reshape(-1), [offsets(lens)])}, out, {})
    x64 = normal(int(lens.sum()), "float64", scale=3).reshape(-1, 1)
    case(cases, "random_float64", "sequence_softmax", {"X": (x64, [offsets(lens)])}, {"Out": "float64"}, {})
    x = normal(9, scale=2).reshape(-1, 1)
    case(cases, "two_levels", "sequence_softmax", {"X": (x, [[0, 2, 3], [0, 4, 4, 9]])}, out, {})
    x = np.array([100, 1, 89, -200, -150, 0.5], "float32").reshape(-1, 1)
    case(cases, "overflow", "sequence_softmax", {"X": (x, [[0, 3, 5, 6]])}, out, {},
         note="Paddle's kernel exponentiates without subtracting the maximum: exp overflows")
    x = normal(6).reshape(-1, 2)
    case(cases, "width_two", "sequence_softmax", {"X": (x, [[0, 1, 3]])}, out, {})
    x = normal(4).reshape(-1, 1)
    case(cases, "no_lod", "sequence_softmax", {"X": (x, [])}, out, {})
    x = np.array([1, 2, 3], "float16").reshape(-1, 1)
    case(cases, "float16", "sequence_softmax", {"X": (x, [[0, 1, 3]])}, {"Out": "float16"}, {})
    save("sequence_softmax", cases)


def enumerate_():
    cases = []
    op = "sequence_enumerate"
    x = np.array([1, 2, 3, 4, 5, 6, 7, 8], "int64").reshape(-1, 1)
    lod = [[0, 3, 3, 8]]
    for win, pad in [(2, 0), (3, -1), (6, 9), (1, 0)]:
        case(cases, f"win{win}_pad{pad}", op, {"X": (x, lod)}, {"Out": "int64"}, {"win_size": win, "pad_value": pad})
    case(cases, "int32", op, {"X": (x.astype("int32"), lod)}, {"Out": "int32"}, {"win_size": 3, "pad_value": 7})
    lens = RNG.integers(0, 9, 30)
    x = ids(int(lens.sum()), high=1000)
    case(cases, "random", op, {"X": (x, [offsets(lens)])}, {"Out": "int64"}, {"win_size": 4, "pad_value": -5})
    x = np.arange(1, 8, dtype="int64").reshape(-1, 1)
    case(cases, "two_levels", op, {"X": (x, [[0, 1, 3], [0, 2, 5, 7]])}, {"Out": "int64"}, {"win_size": 2, "pad_value": 0})
    case(cases, "win0", op, {"X": (x, [[0, 7]])}, {"Out": "int64"}, {"win_size": 0, "pad_value": 0})
    case(cases, "no_lod", op, {"X": (x, [])}, {"Out": "int64"}, {"win_size": 2, "pad_value": 0})
    case(cases, "width_two", op, {"X": (np.arange(8, dtype="int64").reshape(-1, 2), [[0, 4]])}, {"Out": "int64"}, {"win_size": 2, "pad_value": 0})
    case(cases, "float32", op, {"X": (x.astype("float32"), [[0, 7]])}, {"Out": "float32"}, {"win_size": 2, "pad_value": 0})
    save(op, cases)


def erase():
    cases = []
    op = "sequence_erase"
    x = np.array([2, 2, 6, 1, 3, 9, 6, 1, 0, 1], "int64").reshape(-1, 1)
    lod = [[0, 3, 6, 6, 10]]
    case(cases, "documented", op, {"X": (x, lod)}, {"Out": "int64"}, {"tokens": [2, 3, 5]})
    case(cases, "int32", op, {"X": (x.astype("int32"), lod)}, {"Out": "int32"}, {"tokens": [1, 6]})
    case(cases, "erase_everything", op, {"X": (x, lod)}, {"Out": "int64"}, {"tokens": [0, 1, 2, 3, 6, 9]})
    case(cases, "no_tokens", op, {"X": (x, lod)}, {"Out": "int64"}, {"tokens": []})
    case(cases, "absent_tokens", op, {"X": (x, lod)}, {"Out": "int64"}, {"tokens": [42]})
    lens = RNG.integers(0, 12, 40)
    xr = ids(int(lens.sum()), high=8)
    case(cases, "random", op, {"X": (xr, [offsets(lens)])}, {"Out": "int64"}, {"tokens": [0, 3, 7]})
    case(cases, "two_levels", op, {"X": (x, [[0, 2, 4], [0, 3, 6, 6, 10]])}, {"Out": "int64"}, {"tokens": [2, 3, 5]})
    case(cases, "no_lod", op, {"X": (x, [])}, {"Out": "int64"}, {"tokens": [2]})
    case(cases, "width_two", op, {"X": (x.reshape(-1, 2), [[0, 5]])}, {"Out": "int64"}, {"tokens": [2]})
    case(cases, "float32", op, {"X": (x.astype("float32"), lod)}, {"Out": "float32"}, {"tokens": [2]})
    save(op, cases)


def reshape():
    cases = []
    op = "sequence_reshape"
    x = np.arange(1, 13, dtype="float32").reshape(-1, 2)
    case(cases, "documented", op, {"X": (x, [[0, 2, 6]])}, {"Out": "float32"}, {"new_dim": 4})
    case(cases, "to_one", op, {"X": (x, [[0, 2, 6]])}, {"Out": "float32"}, {"new_dim": 1})
    case(cases, "same_width", op, {"X": (x, [[0, 2, 6]])}, {"Out": "float32"}, {"new_dim": 2})
    case(cases, "with_empty", op, {"X": (x, [[0, 0, 2, 2, 6]])}, {"Out": "float32"}, {"new_dim": 4})
    case(cases, "int64", op, {"X": (x.astype("int64"), [[0, 3, 6]])}, {"Out": "int64"}, {"new_dim": 3})
    case(cases, "int32", op, {"X": (x.astype("int32"), [[0, 3, 6]])}, {"Out": "int32"}, {"new_dim": 6})
    case(cases, "float64", op, {"X": (x.astype("float64"), [[0, 2, 6]])}, {"Out": "float64"}, {"new_dim": 4})
    case(cases, "not_divisible", op, {"X": (x, [[0, 2, 3, 6]])}, {"Out": "float32"}, {"new_dim": 4})
    case(cases, "two_levels", op, {"X": (x, [[0, 1, 2], [0, 2, 6]])}, {"Out": "float32"}, {"new_dim": 4})
    case(cases, "no_lod", op, {"X": (x, [])}, {"Out": "float32"}, {"new_dim": 4})
    save(op, cases)


def scatter():
    cases = []
    op = "sequence_scatter"
    x = np.ones((3, 6), "float32")
    i = np.array([0, 1, 2, 5, 4, 3, 2, 1, 3, 2, 5, 4], "int64").reshape(-1, 1)
    u = np.array([0.3, 0.3, 0.4, 0.1, 0.2, 0.3, 0.4, 0.0, 0.2, 0.3, 0.1, 0.4], "float32").reshape(-1, 1)
    lod = [[0, 3, 8, 12]]
    out = {"Out": "float32"}
    case(cases, "documented", op, {"X": (x, []), "Ids": (i, lod), "Updates": (u, lod)}, out, {})
    d = np.array([0, 0, 5, 5, 5], "int64").reshape(-1, 1)
    ud = np.array([1.5, 2.25, 1, 2, 4], "float32").reshape(-1, 1)
    case(cases, "duplicates_and_empty", op, {"X": (x, []), "Ids": (d, [[0, 2, 2, 5]]), "Updates": (ud, [[0, 2, 2, 5]])}, out, {})
    case(cases, "fewer_sequences", op, {"X": (x, []), "Ids": (d, [[0, 5]]), "Updates": (ud, [[0, 5]])}, out, {})
    case(cases, "int32_ids", op, {"X": (x, []), "Ids": (i.astype("int32"), lod), "Updates": (u, lod)}, out, {})
    case(cases, "int64_values", op, {"X": (np.arange(18, dtype="int64").reshape(3, 6), []), "Ids": (d, [[0, 2, 2, 5]]), "Updates": (np.arange(5, dtype="int64").reshape(-1, 1), [[0, 2, 2, 5]])}, {"Out": "int64"}, {})
    x3 = normal(24).reshape(2, 3, 4)
    lens = [5, 7]
    r = RNG.integers(0, 12, 12).astype("int64").reshape(-1, 1)
    ur = normal(12).reshape(-1, 1)
    case(cases, "rank3_random", op, {"X": (x3, []), "Ids": (r, [offsets(lens)]), "Updates": (ur, [offsets(lens)])}, out, {})
    case(cases, "ids_no_lod", op, {"X": (x, []), "Ids": (d, []), "Updates": (ud, [])}, out, {})
    case(cases, "updates_mismatch", op, {"X": (x, []), "Ids": (d, [[0, 5]]), "Updates": (ud[:4], [[0, 4]])}, out, {})
    case(cases, "x_rank1", op, {"X": (np.ones(6, "float32"), []), "Ids": (d, [[0, 5]]), "Updates": (ud, [[0, 5]])}, out, {})
    save(op, cases)


def mask():
    cases = []
    op = "sequence_mask"
    x = np.array([3, 1, 0, 5], "int64")
    for maxlen, dtype in [(-1, "int64"), (6, "int64"), (2, "int64"), (4, "bool"), (4, "float32"), (4, "int32")]:
        dt = {"int64": 3, "bool": 0, "float32": 5, "int32": 2}[dtype]
        case(cases, f"maxlen{maxlen}_{dtype}", op, {"X": (x, [])}, {"Y": dtype}, {"maxlen": maxlen, "out_dtype": dt})
    case(cases, "int32_lengths", op, {"X": (x.astype("int32"), [])}, {"Y": "int64"}, {"maxlen": -1, "out_dtype": 3})
    case(cases, "rank2_lengths", op, {"X": (np.array([[1, 2], [0, 3]], "int64"), [])}, {"Y": "int64"}, {"maxlen": -1, "out_dtype": 3})
    case(cases, "negative_length", op, {"X": (np.array([2, -1], "int64"), [])}, {"Y": "int64"}, {"maxlen": 3, "out_dtype": 3})
    case(cases, "maxlen0", op, {"X": (x, [])}, {"Y": "int64"}, {"maxlen": 0, "out_dtype": 3})
    case(cases, "all_zero", op, {"X": (np.zeros(3, "int64"), [])}, {"Y": "int64"}, {"maxlen": -1, "out_dtype": 3})
    save(op, cases)


def pool():
    cases = []
    op = "sequence_pool"
    outs = {"Out": "float32", "MaxIndex": "int32"}
    x = np.array([1, 3, 2, 4, 6, 5, 1], "float32").reshape(-1, 1)
    lod = [[0, 2, 5, 7, 7]]
    for t in ["MAX", "FIRST", "LAST"]:
        case(cases, f"documented_{t.lower()}", op, {"X": (x, lod)}, outs, {"pooltype": t, "is_test": False, "pad_value": 0.0})
    xt = np.array([[1, 5, 2], [3, 5, 2], [3, 1, 2], [0, 0, 0]], "float32")
    case(cases, "ties_vector", op, {"X": (xt, [[0, 3, 4]])}, outs, {"pooltype": "MAX", "is_test": False, "pad_value": 0.0})
    lens = RNG.integers(0, 7, 25)
    xr = normal(int(lens.sum()) * 4).reshape(-1, 4)
    for t in ["MAX", "FIRST", "LAST"]:
        case(cases, f"random_{t.lower()}", op, {"X": (xr, [offsets(lens)])}, outs, {"pooltype": t, "is_test": False, "pad_value": -2.5})
    x2 = normal(9).reshape(-1, 1)
    for t in ["MAX", "FIRST", "LAST"]:
        case(cases, f"two_levels_{t.lower()}", op, {"X": (x2, [[0, 2, 3], [0, 4, 4, 9]])}, outs, {"pooltype": t, "is_test": False, "pad_value": 0.0})
    case(cases, "float64_max", op, {"X": (xr.astype("float64"), [offsets(lens)])}, {"Out": "float64", "MaxIndex": "int32"}, {"pooltype": "MAX", "is_test": False, "pad_value": 0.0})
    save(op, cases)


def context():
    cases = []
    op = "sequence_conv"
    d = 2
    x = normal(14).reshape(-1, d)
    lod = [[0, 3, 3, 4, 7]]
    for start, length in [(-1, 3), (0, 3), (-2, 2), (-3, 5), (0, 1), (1, 2), (-6, 3)]:
        f = np.eye(length * d, dtype="float32")
        attrs = {"contextStart": start, "contextLength": length, "contextStride": 1, "paddingTrainable": False}
        case(cases, f"start{start}_length{length}", op, {"X": (x, lod), "Filter": (f, [])}, {"Out": "float32"}, attrs)
    f = np.eye(3 * d, dtype="float32")
    attrs = {"contextStart": -1, "contextLength": 3, "contextStride": 1, "paddingTrainable": False}
    case(cases, "float64", op, {"X": (x.astype("float64"), lod), "Filter": (f.astype("float64"), [])}, {"Out": "float64"}, attrs)
    case(cases, "start1_short_sequence", op, {"X": (x, [[0, 1, 7]]), "Filter": (np.eye(4, dtype="float32"), [])}, {"Out": "float32"},
         {"contextStart": 1, "contextLength": 2, "contextStride": 1, "paddingTrainable": False})
    case(cases, "two_levels", op, {"X": (x, [[0, 1, 2], [0, 3, 7]]), "Filter": (f, [])}, {"Out": "float32"}, attrs)
    case(cases, "stride2", op, {"X": (x, lod), "Filter": (f, [])}, {"Out": "float32"}, dict(attrs, contextStride=2))
    lens = RNG.integers(0, 9, 20)
    xr = normal(int(lens.sum()) * 3).reshape(-1, 3)
    attrs = {"contextStart": -2, "contextLength": 4, "contextStride": 1, "paddingTrainable": False}
    case(cases, "random", op, {"X": (xr, [offsets(lens)]), "Filter": (np.eye(12, dtype="float32"), [])}, {"Out": "float32"}, attrs)
    save("context_project", cases)


if __name__ == "__main__":
    which = sys.argv[1:] or ["softmax", "enumerate_", "erase", "reshape", "scatter", "mask", "pool", "context"]
    for name in which:
        globals()[name]()
