"""Writes the golden Paddle LoDTensor files of this directory, and the JSON that says what
each holds.

Made with PaddlePaddle 3.3.1 (CPU) and numpy 2.4.6 on Python 3.11:

    python3 -m venv /tmp/paddle-venv
    /tmp/paddle-venv/bin/pip install paddlepaddle==3.3.1 numpy
    /tmp/paddle-venv/bin/python tests/data/paddle/make_golden.py

For each `NAME.pdtensor` (one record, `paddle.base.core.save_dense_tensor`) and for
`params.pdiparams` (several records, `save_combine_func`), `NAME.json` holds what Paddle
loads back from the file: per record its dtype, dims, LoD offsets (`lod()`) and items,
row-major (bools as true/false), or the dtype name of a record our reader must refuse.
"""

import json
import os

import numpy as np
import paddle
from paddle.base import core

HERE = os.path.dirname(os.path.abspath(__file__))
PLACE = core.CPUPlace()


def dense(array, lod=None):
    t = core.DenseTensor()
    t.set(array, PLACE)
    if lod is not None:
        t.set_lod(lod)
    return t


def describe(t):
    array = np.array(t)
    return {
        "dtype": str(array.dtype),
        "dims": list(t.shape()),
        "lod": [list(level) for level in t.lod()],
        "items": array.reshape(-1).tolist(),
    }


def save(name, t):
    path = os.path.join(HERE, name + ".pdtensor")
    core.save_dense_tensor(t, path)
    back = core.DenseTensor()
    core.load_dense_tensor(back, path)
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump({"records": [describe(back)]}, f, indent=1)
        f.write("\n")


def save_refused(name, tensor, paddle_name):
    """A file of a dtype our reader refuses: the JSON names it."""
    path = os.path.join(HERE, name + ".pdtensor")
    core.save_dense_tensor(tensor.value().get_tensor(), path)
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump({"refused": paddle_name}, f, indent=1)
        f.write("\n")


def main():
    print("paddle", paddle.__version__, "numpy", np.__version__)

    # One file per dtype, with 0 to 3 levels and empty sequences among them.
    save("bool", dense(np.array([[1, 0], [0, 0], [1, 1], [0, 1]], dtype=bool), [[0, 1, 3, 4]]))
    save("int8", dense(np.array([-128, -1, 0, 1, 127], dtype=np.int8)))
    save("int16", dense(np.arange(-3, 3, dtype=np.int16).reshape(6, 1), [[0, 2, 3], [0, 1, 4, 6]]))
    save("int32", dense(np.arange(12, dtype=np.int32).reshape(3, 2, 2), [[0, 0, 2, 3]]))
    # The reference documents' example: 3 articles, 6 sentences, 15 words.
    save(
        "int64",
        dense(
            np.arange(15, dtype=np.int64).reshape(15, 1) * 1000000007,
            [[0, 3, 4, 6], [0, 3, 5, 9, 10, 12, 15]],
        ),
    )
    save("uint8", dense(np.array([0, 1, 128, 255], dtype=np.uint8), [[0, 1, 3], [0, 2, 2, 3], [0, 1, 2, 4]]))
    save("float16", dense(np.array([[0.5, -1.0], [65504.0, 0.0], [1.0 / 1024, 3.0]], dtype=np.float16), [[0, 3]]))
    save(
        "float32",
        dense(
            np.linspace(-1, 1, 18, dtype=np.float32).reshape(6, 3),
            [[0, 1, 3], [0, 2, 2, 4], [0, 1, 3, 3, 6]],
        ),
    )
    save("float64", dense(np.array([[np.pi, -np.e], [1e-300, 1e300]], dtype=np.float64)))

    # No rows: without a LoD, and with a LoD of empty sequences.
    save("empty_rows", dense(np.zeros((0, 4), dtype=np.float32)))
    save("empty_sequences", dense(np.zeros((0, 2), dtype=np.int64), [[0, 0, 0]]))

    # A 0-D tensor: dims [].
    save("scalar", dense(np.array(2.5, dtype=np.float32)))

    # Data types our reader refuses.
    save_refused("bfloat16", paddle.to_tensor([1.0, 2.0], dtype="bfloat16"), "BF16")
    save_refused("complex64", paddle.to_tensor([1 + 2j, 3 - 4j], dtype="complex64"), "COMPLEX64")

    # Several records back to back.
    records = [
        dense(np.array([4, 5, 6], dtype=np.int64), [[0, 2, 3]]),
        dense(np.array([[0.25, 0.5], [1.5, 2.5]], dtype=np.float32)),
        dense(np.array([True, False, True], dtype=bool), [[0, 1, 1, 3], [0, 1, 2, 3]]),
    ]
    path = os.path.join(HERE, "params.pdiparams")
    core.save_combine_func(records, ["a", "b", "c"], path, True, False, False)
    back = [dense(np.zeros(1, dtype=np.float32)) for _ in records]
    core.load_combine_func(path, ["a", "b", "c"], back, False, PLACE)
    with open(os.path.join(HERE, "params.json"), "w") as f:
        json.dump({"records": [describe(t) for t in back]}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
