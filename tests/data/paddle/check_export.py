"""Loads with Paddle the files `cargo run --example paddle_export -- DIR` wrote, and checks
each against DIR/manifest.json (dtype, dims, LoD offsets, items). Run by hand:

    cargo run --example paddle_export -- /tmp/export
    /tmp/paddle-venv/bin/python tests/data/paddle/check_export.py /tmp/export
"""

import json
import os
import sys

import numpy as np
import paddle
from paddle.base import core

PLACE = core.CPUPlace()


def check(label, t, want):
    array = np.array(t)
    got = {
        "dtype": str(array.dtype),
        "dims": list(t.shape()),
        "lod": [list(level) for level in t.lod()],
        "items": array.reshape(-1).tolist(),
    }
    for key in ["dtype", "dims", "lod", "items"]:
        if got[key] != want[key]:
            raise SystemExit(f"{label}: {key} is {got[key]}, expected {want[key]}")
    print(f"ok  {label}: {got['dtype']} {got['dims']} lod {got['lod']}")


def main():
    directory = sys.argv[1]
    print("paddle", paddle.__version__)
    with open(os.path.join(directory, "manifest.json")) as f:
        manifest = json.load(f)
    for name, records in manifest.items():
        path = os.path.join(directory, name)
        if name.endswith(".pdiparams"):
            names = [f"t{i}" for i in range(len(records))]
            tensors = [core.DenseTensor() for _ in records]
            for t in tensors:
                t.set(np.zeros(1, dtype=np.float32), PLACE)
            core.load_combine_func(path, names, tensors, False, PLACE)
            for i, (t, want) in enumerate(zip(tensors, records)):
                check(f"{name}[{i}]", t, want)
        else:
            t = core.DenseTensor()
            core.load_dense_tensor(t, path)
            check(name, t, records[0])
    print("all", len(manifest), "files load in Paddle with the expected LoD and data")


if __name__ == "__main__":
    main()
