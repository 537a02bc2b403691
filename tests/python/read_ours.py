"""Reads a file written by lodtensor with pyarrow only, and checks it against the JSON
description the Rust side wrote next to it. An `.arrow` file is read memory-mapped, batch
for batch, without allocating; a `.parquet` file with pyarrow.parquet, as one table.

usage: read_ours.py FILE.arrow|FILE.parquet EXPECTED.json [REWRITTEN.arrow]

With a third argument, writes the table back with pyarrow, batch for batch, so the Rust
side can check the round trip Rust -> pyarrow -> Rust.
"""
import json
import sys

import numpy as np
import pyarrow as pa


def levels_and_values(arr, levels):
    """The offsets of each level (taken in order, as stored) and the element array."""
    offsets = []
    for _ in range(levels):
        offsets.append(arr.offsets.to_pylist())
        # .values is the whole child, as the offsets index it
        arr = arr.values
    return offsets, arr


def main(path, expected_path, rewritten=None):
    expected = json.load(open(expected_path))
    parquet = path.endswith(".parquet")
    if parquet:
        import pyarrow.parquet as pq

        table = pq.read_table(path)
    else:
        before = pa.total_allocated_bytes()
        with pa.memory_map(path) as source:
            table = pa.ipc.open_file(source).read_all()
        # A compressed file (ours.zstd.arrow, ours.lz4.arrow) is decompressed into memory.
        compressed = path.endswith((".zstd.arrow", ".lz4.arrow"))
        assert compressed or pa.total_allocated_bytes() == before, "reading the mapped file allocated"
    assert table.schema.metadata[b"lodtensor.format_version"] == b"1"
    for name, want in expected.items():
        column = table.column(name)
        chunks = [column.combine_chunks()] if parquet else column.chunks
        assert len(chunks) == len(want["batches"]), (name, len(chunks))
        for chunk, batch in zip(chunks, want["batches"]):
            offsets, values = levels_and_values(chunk, want["levels"])
            assert offsets == batch["offsets"], (name, offsets, batch["offsets"])
            shape = want["element_shape"]
            if shape:
                assert isinstance(values.type, pa.FixedShapeTensorType), values.type
                assert list(values.type.shape) == shape
                if pa.types.is_boolean(values.type.value_type):
                    # bit-packed: pyarrow makes no ndarray of it, so unpack the storage
                    flat = values.storage.flatten().to_numpy(zero_copy_only=False)
                else:
                    array = values.to_numpy_ndarray()
                    assert array.shape[1:] == tuple(shape)
                    flat = array.reshape(-1)
                    # zero-copy: the ndarray views the mapped buffer
                    assert parquet or not array.flags["OWNDATA"] or array.size == 0
            else:
                flat = values.to_numpy(zero_copy_only=False)
            assert np.array_equal(flat.astype(np.float64), np.array(batch["items"], dtype=np.float64)), name
    if rewritten:
        with pa.OSFile(rewritten, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            for batch in table.to_batches():
                writer.write_batch(batch)
    print("ok", path)


if __name__ == "__main__":
    main(*sys.argv[1:])
