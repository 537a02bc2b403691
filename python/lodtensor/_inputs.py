"""What ``lt.write``, ``lt.write_shards`` and Ray's datasink take, as an Arrow C stream."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from . import _hf
from . import _native  # type: ignore[attr-defined]  # the compiled module, not in the stub

_ACCEPTED = (
    "a pyarrow Table, RecordBatch or RecordBatchReader, a list of record batches, any object "
    "with __arrow_c_stream__ (a Polars DataFrame, a DuckDB relation), a pandas DataFrame, or a "
    "datasets.Dataset (one split of a DatasetDict)"
)


def as_stream(data: Any, what: str = "write") -> Any:
    """``data`` as an object with ``__arrow_c_stream__``: record batches, pandas, Polars and
    HuggingFace datasets become a table; a table in memory gets the columns that hold nulls
    but are not declared tensors marked side columns (``format-spec.md`` §2.2), so that the
    nulls of one record batch make the column a side column in all of them."""
    module = type(data).__module__.split(".")[0]
    if module == "datasets":
        data = _hf.table(data, what=what)
    elif module == "pandas" and hasattr(data, "columns"):
        data = pa.Table.from_pandas(data, preserve_index=False)
    elif module == "polars" and hasattr(data, "__arrow_c_stream__"):
        data = pa.table(data)
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    elif isinstance(data, (list, tuple)) and all(isinstance(b, pa.RecordBatch) for b in data):
        data = pa.Table.from_batches(list(data))
    if isinstance(data, pa.Table):
        schema = _native.side_schema(data)
        if schema.equals(data.schema, check_metadata=True):
            return data
        return pa.Table.from_arrays(data.columns, schema=schema)
    if hasattr(data, "__arrow_c_stream__"):
        return data
    raise TypeError(f"{what}: data must be {_ACCEPTED}; got {type(data).__name__}")
