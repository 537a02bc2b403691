"""Writes Arrow IPC and Parquet files with pyarrow alone, the way its users do, and a JSON description
(lengths per level, element shape, flat items per row range) for the Rust side to check.

usage: write_theirs.py DIR
"""
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def nested(rng, levels, shape):
    """A random nested Python list: levels of lists over elements of `shape`."""
    if levels == 0:
        return rng.integers(-100, 100, size=shape).astype(float).tolist() if shape else float(rng.integers(-100, 100))
    return [nested(rng, levels - 1, shape) for _ in range(rng.integers(0, 4))]


def flatten(row, levels, lengths, items, shape):
    if levels == 0:
        items.extend(np.array(row, dtype=float).reshape(-1).tolist())
        return
    lengths[0].append(len(row))
    for child in row:
        flatten(child, levels - 1, lengths[1:], items, shape)


def list_type(levels, element, large):
    t = element
    for _ in range(levels):
        t = pa.large_list(t) if large else pa.list_(t)
    return t


def main(out):
    rng = np.random.default_rng(5)
    cases = {}
    for levels in range(0, 4):
        for shape in ([], [3], [2, 2]):
            for large in (False, True):
                name = f"l{levels}_s{'x'.join(map(str, shape)) or 'scalar'}_{'large' if large else 'list'}"
                if shape == [2, 2]:
                    element = pa.fixed_shape_tensor(pa.float32(), shape)
                    storage = pa.list_(pa.float32(), 4)
                elif shape:
                    element = storage = pa.list_(pa.float64(), 3)
                else:
                    element = storage = pa.int64()
                rows = [nested(rng, levels, shape) for _ in range(7)]
                if levels == 0:
                    flat_rows = [np.array(r).reshape(-1).tolist() if shape else [r] for r in rows]
                    rows_for_arrow = [np.array(r).reshape(-1).tolist() for r in rows] if shape else rows
                else:
                    rows_for_arrow = rows
                typ = list_type(levels, storage, large)
                if levels == 0 and shape:
                    arr = pa.array(rows_for_arrow, type=storage)
                else:
                    def flat_elements(r, k):
                        if k == 0:
                            return np.array(r).reshape(-1).tolist() if shape else r
                        return [flat_elements(c, k - 1) for c in r]
                    arr = pa.array([flat_elements(r, levels) for r in rows], type=typ)
                if shape == [2, 2]:
                    # rebuild with the extension type at the element level
                    def wrap(a, k):
                        if k == 0:
                            return pa.ExtensionArray.from_storage(element, a)
                        inner = wrap(a.values, k - 1)
                        cls = pa.LargeListArray if large else pa.ListArray
                        return cls.from_arrays(a.offsets, inner)
                    arr = wrap(arr, levels)
                # Three batches: rows 0..2, a sliced array (rows 2..5), rows 5..7.
                batches = [arr.slice(0, 2), arr.slice(2, 3), arr.slice(5, 2)]
                path = os.path.join(out, name + ".arrow")
                schema = pa.schema([pa.field("x", arr.type)])
                with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
                    for b in batches:
                        writer.write_batch(pa.record_batch([b], schema=schema))
                # The same batches with compressed bodies (zstd, lz4 frame).
                for codec in ("zstd", "lz4"):
                    options = pa.ipc.IpcWriteOptions(compression=codec)
                    compressed = os.path.join(out, f"{name}.{codec}.arrow")
                    with pa.OSFile(compressed, "wb") as sink, pa.ipc.new_file(
                        sink, schema, options=options
                    ) as writer:
                        for b in batches:
                            writer.write_batch(pa.record_batch([b], schema=schema))
                # The same rows as a Parquet file, as pyarrow writes it by default.
                table = pa.Table.from_batches([pa.record_batch([b], schema=schema) for b in batches])
                pq.write_table(table, os.path.join(out, name + ".parquet"))
                expect = []
                for lo, hi in ((0, 2), (2, 5), (5, 7)):
                    lengths = [[] for _ in range(levels)]
                    items = []
                    for r in rows[lo:hi]:
                        flatten(r, levels, lengths, items, shape)
                    expect.append({"lengths": lengths, "items": items})
                cases[name] = {"levels": levels, "element_shape": shape, "batches": expect}
    json.dump(cases, open(os.path.join(out, "expected.json"), "w"))
    print(len(cases), "files")


if __name__ == "__main__":
    main(sys.argv[1])
