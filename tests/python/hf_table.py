"""A Hugging Face-style table with side columns beside the tensors, for tests/interop/side_columns_pyarrow.rs.

    python hf_table.py write OUT.arrow             # the table, as pyarrow writes it (IPC file)
    python hf_table.py check OUT.arrow FILE...     # every FILE (.arrow, .parquet) equals it

Columns: id (string), text (large_string, nulls), label (int64: a 0-level tensor), lang
(dictionary), meta (struct, nulls), embedding (a dense 0-level fixed_shape_tensor), tokens
(nested token tensors, some sequences empty), view (string_view), blob (binary), flag
(boolean, nulls: marked a side column), at (timestamp), scores (list of float64 with null
lists and null items: marked a side column), and, unmarked, mask (list<bool>), counts
(list<int64>) and frames (list<list<float32>>) with null rows and null items past the first
record batch: side columns all the same (format-spec §2.2). Several record batches.
"""

import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROWS = 23
SIDE = {b"lodtensor.kind": b"side"}


def table() -> pa.Table:
    rng = np.random.default_rng(7)
    null = [r % 4 == 1 for r in range(ROWS)]
    docs = [[list(range(r, r + (r + s) % 4)) for s in range(r % 3)] for r in range(ROWS)]
    embedding = pa.FixedShapeTensorArray.from_numpy_ndarray(
        rng.normal(size=(ROWS, 4)).astype(np.float32)
    )
    columns = {
        "id": pa.array([f"doc-{r:04}" for r in range(ROWS)], pa.string()),
        "text": pa.array([None if n else "word " * r for r, n in enumerate(null)], pa.large_string()),
        "label": pa.array([r % 5 for r in range(ROWS)], pa.int64()),
        "lang": pa.array([["en", "fr", "zh"][r % 3] for r in range(ROWS)]).dictionary_encode(),
        "meta": pa.array(
            [None if n else {"source": f"s{r % 2}", "score": r / 2} for r, n in enumerate(null)],
            pa.struct([("source", pa.string()), ("score", pa.float64())]),
        ),
        "embedding": embedding,
        "tokens": pa.array(docs, pa.large_list(pa.large_list(pa.int32()))),
        "view": pa.array([None if n else f"v{r}" * (r % 7) for r, n in enumerate(null)], pa.string_view()),
        "blob": pa.array([None if n else bytes([r]) * (r % 3) for r, n in enumerate(null)], pa.binary()),
        "flag": pa.array([None if n else r % 2 == 0 for r, n in enumerate(null)], pa.bool_()),
        "at": pa.array(
            [None if n else 1_700_000_000_000_000 + r for r, n in enumerate(null)],
            pa.timestamp("us", tz="UTC"),
        ),
        "scores": pa.array(
            [None if n else [None if i == 1 else i / 3 for i in range(r % 4)] for r, n in enumerate(null)],
            pa.list_(pa.float64()),
        ),
        # Unmarked, of a tensor's type, with null rows and null items: side columns by
        # format-spec §2.2, their nulls only in later record batches.
        "mask": pa.array(
            [None if r == 13 else [r % 2 == 0, None if r == 20 else True] for r in range(ROWS)],
            pa.list_(pa.bool_()),
        ),
        "counts": pa.array(
            [None if r == 19 else [r, None] if r == 8 else list(range(r % 3)) for r in range(ROWS)],
            pa.list_(pa.int64()),
        ),
        "frames": pa.array(
            [None if r == 7 else [[r / 2, None if r == 15 else 1.0]] * (r % 3) for r in range(ROWS)],
            pa.list_(pa.list_(pa.float32())),
        ),
    }
    fields = [
        pa.field(name, array.type, metadata=SIDE if name in ("flag", "scores") else None)
        for name, array in columns.items()
    ]
    return pa.Table.from_arrays(list(columns.values()), schema=pa.schema(fields))


def read(path: str) -> pa.Table:
    if path.endswith(".parquet"):
        return pq.read_table(path)
    with pa.memory_map(path) as source:
        return pa.ipc.open_file(source).read_all()


def main() -> None:
    mode, out, *files = sys.argv[1:]
    expected = table()
    if mode == "write":
        with pa.OSFile(out, "wb") as sink, pa.ipc.new_file(sink, expected.schema) as writer:
            writer.write_table(expected.unify_dictionaries(), max_chunksize=6)
        return
    assert read(out).equals(expected), "the written table"
    for path in files:
        got = read(path)
        assert got.schema.equals(expected.schema), f"{path}: {got.schema} != {expected.schema}"
        for name in expected.column_names:
            assert got[name].equals(expected[name]), f"{path}: column {name}"
        assert got.equals(expected), path
    print("equal", len(files))


if __name__ == "__main__":
    main()
