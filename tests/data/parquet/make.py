"""Writes the Parquet files that tests/interop/parquet_pyarrow.rs reads: the same table as pyarrow,
DuckDB and Polars write it.

Run with pyarrow, duckdb and polars installed: python tests/data/parquet/make.py
The files are committed; rerunning must give files that read back the same.
"""
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq

HERE = pathlib.Path(__file__).parent

# Two documents of sentences of words, each word a 2x2 float32 tensor written as nested
# fixed-size lists, from plain nested Python lists, with no lodtensor metadata.
docs = [
    [  # document 0: sentences of 2 and 1 words
        [[[0.0, 1.0], [2.0, 3.0]], [[4.0, 5.0], [6.0, 7.0]]],
        [[[8.0, 9.0], [10.0, 11.0]]],
    ],
    [],  # document 1: no sentences
    [  # document 2: an empty sentence, then one of 1 word
        [],
        [[[12.0, 13.0], [14.0, 15.0]]],
    ],
]
word = pa.list_(pa.list_(pa.float32(), 2), 2)
tokens = pa.array(docs, type=pa.list_(pa.list_(word)))
ids = pa.array([[1, 2, 3], [], [4]], type=pa.large_list(pa.int64()))
label = pa.array([7, 8, 9], type=pa.int32())
table = pa.table({"tokens": tokens, "ids": ids, "label": label})

# pyarrow's default: the Arrow schema is embedded (fixed-size lists survive).
pq.write_table(table, HERE / "pyarrow_nested_lists.parquet", compression="snappy")
# Without the Arrow schema: every fixed-size list reads back as a list.
pq.write_table(
    table, HERE / "pyarrow_no_arrow_schema.parquet", compression="zstd", store_schema=False
)

# The same table written by DuckDB and by Polars, the other writers users bring.
import duckdb  # noqa: E402
import polars as pl  # noqa: E402

arrow_table = table
duckdb.sql(
    f"COPY (SELECT * FROM arrow_table) TO '{HERE / 'duckdb_nested_lists.parquet'}' (FORMAT parquet)"
)
pl.from_arrow(table).write_parquet(HERE / "polars_nested_lists.parquet")
