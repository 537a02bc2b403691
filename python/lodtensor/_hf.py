"""HuggingFace ``datasets`` both ways: a ``datasets.Dataset`` as a lodtensor table (its
``Array2D``..``Array5D`` columns as element shapes, casts, folds) and a lodtensor table as a
``datasets.Dataset`` (the features of the ``huggingface`` schema metadata restored).

Only pyarrow is needed here; ``datasets`` is imported when a ``datasets.Dataset`` is made.
Values are shared wherever the layouts agree: a fixed-shape HF array and a lodtensor element
are the same contiguous values, only the offsets above them differ.
"""

from __future__ import annotations

import dataclasses
import json
from math import prod
from typing import Any

import numpy as np
import pyarrow as pa

from ._native import ArgumentError, ColumnNotFoundError, InvalidDataError

_HF_KEY = b"huggingface"


def is_hf_dataset(data: Any) -> bool:
    """Whether ``data`` is a HuggingFace ``datasets`` object (without importing it)."""
    return type(data).__module__.split(".")[0] == "datasets"


def table(
    data: Any,
    element_shape: dict[str, Any] | None = None,
    dtype: dict[str, Any] | None = None,
    what: str = "write",
) -> pa.Table:
    """The rows of the HuggingFace ``datasets.Dataset`` ``data`` as a pyarrow table a
    lodtensor file holds: its Arrow memory (sliced, or taken through its indices mapping),
    ``ArrayXD`` columns as elements of their shape, ``dtype`` casts and ``element_shape``
    folds applied, and the ``huggingface`` metadata kept (its features updated by the
    casts)."""
    kind = type(data).__name__
    if kind in ("DatasetDict", "IterableDatasetDict"):
        splits = ", ".join(repr(k) for k in data)
        raise TypeError(f"{what}: pass one split of the DatasetDict (one of {splits}), not all")
    if kind != "Dataset" or not hasattr(data, "with_format"):
        raise TypeError(f"{what}: a datasets.Dataset is expected, got {kind}")
    rows = data.with_format("arrow")[:]
    element_shape, dtype = dict(element_shape or {}), dict(dtype or {})
    for name in [*element_shape, *dtype]:
        if name not in rows.column_names:
            raise ColumnNotFoundError(f"{what}: no column {name!r} (the columns: {rows.column_names})")
    features = data.features.copy()
    fields, columns = [], []
    for name, column in zip(rows.column_names, rows.columns):
        field = rows.schema.field(name)
        if name in dtype:
            features[name] = _recast(features[name], str(pa.from_numpy_dtype(np.dtype(dtype[name]))))
        chunks = [
            _convert(chunk, name, dtype.get(name), element_shape.get(name))
            for chunk in column.chunks
        ]
        if not chunks:
            empty = pa.array([], column.type)
            chunks = [_convert(empty, name, dtype.get(name), element_shape.get(name))]
        fields.append(pa.field(name, chunks[0].type, field.nullable, field.metadata))
        columns.append(pa.chunked_array(chunks, chunks[0].type))
    metadata = dict(rows.schema.metadata or {})
    metadata[_HF_KEY] = json.dumps({"info": {"features": features.to_dict()}}).encode()
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=metadata))


def write_options(data: pa.Table) -> dict[str, Any]:
    """``lt.write``'s options that keep HF's layout: ``int32`` offsets when every list
    type of the table is a ``list`` (HF's ``List``; ``large_list`` otherwise), and record
    batches of about one chunk of the table each (the writer then writes each chunk as it
    is instead of joining chunks into a copy), between 1 and 64 MiB."""
    def lists(arrow_type: pa.DataType) -> list[pa.DataType]:
        if isinstance(arrow_type, pa.ExtensionType):
            return lists(arrow_type.storage_type)
        if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
            return [arrow_type, *lists(arrow_type.value_type)]
        if pa.types.is_fixed_size_list(arrow_type):
            return lists(arrow_type.value_type)
        return []

    found = [t for field in data.schema for t in lists(field.type)]
    width = "i32" if found and all(pa.types.is_list(t) for t in found) else "i64"
    chunk = max((batch.nbytes for batch in data.to_batches()), default=0)
    return {"offset_width": width, "batch_bytes": min(max(chunk + 1, 1 << 20), 64 << 20)}


def _recast(feature: Any, dtype: str) -> Any:
    """``feature`` with its value type ``dtype`` (``Value``, ``ArrayXD`` or lists of them)."""
    if hasattr(feature, "feature"):
        return dataclasses.replace(feature, feature=_recast(feature.feature, dtype))
    if hasattr(feature, "dtype") and dataclasses.is_dataclass(feature) and not isinstance(feature, type):
        return dataclasses.replace(feature, dtype=dtype)
    raise ArgumentError(f"dtype: a column of {feature} cannot be cast")


def _hf_array_shape(arrow_type: pa.DataType) -> tuple | None:
    """The shape of a HuggingFace ``ArrayXD`` extension type, or ``None``."""
    if isinstance(arrow_type, pa.ExtensionType) and arrow_type.extension_name.startswith(
        "datasets.features.features.Array"
    ):
        return tuple(arrow_type.shape)
    return None


def _flatten(array: pa.Array, times: int) -> pa.Array:
    for _ in range(times):
        array = array.flatten()
    return array


def _elements(values: pa.Array, shape: tuple) -> pa.Array:
    """``values`` as ``arrow.fixed_shape_tensor`` elements of ``shape`` (shared values)."""
    storage = pa.FixedSizeListArray.from_arrays(values, prod(shape))
    return pa.ExtensionArray.from_storage(pa.fixed_shape_tensor(values.type, list(shape)), storage)


def _relative(offsets: pa.Array) -> pa.Array:
    """List offsets made to start at 0 (those of a sliced list), as int64."""
    offsets = offsets.cast(pa.int64())
    return pa.array(offsets.to_numpy() - offsets[0].as_py()) if len(offsets) else offsets


def _convert(array: pa.Array, name: str, dtype: Any, shape: Any) -> pa.Array:
    """One chunk of column ``name`` as lodtensor holds it (see ``table``)."""
    hf_shape = _hf_array_shape(array.type)
    if hf_shape is not None:
        storage = array.storage
        if storage.null_count:
            raise InvalidDataError(f"column {name!r}: an {array.type.extension_name} with null rows")
        fixed = hf_shape[0] is not None
        values = _flatten(storage, len(hf_shape))
        if dtype is not None:
            values = values.cast(pa.from_numpy_dtype(np.dtype(dtype)))
        if fixed:
            return _elements(values, tuple(shape or hf_shape))
        inner = tuple(shape or hf_shape[1:])
        return pa.LargeListArray.from_arrays(_relative(storage.offsets), _elements(values, inner))
    if dtype is not None:
        array = array.cast(_with_leaf(array.type, pa.from_numpy_dtype(np.dtype(dtype))))
    if shape is not None:
        array = _fold(array, name, tuple(shape))
    return array


def _with_leaf(arrow_type: pa.DataType, leaf: pa.DataType) -> pa.DataType:
    """``arrow_type`` with the type of its innermost items ``leaf``."""
    if pa.types.is_large_list(arrow_type):
        return pa.large_list(_with_leaf(arrow_type.value_type, leaf))
    if pa.types.is_list(arrow_type):
        return pa.list_(_with_leaf(arrow_type.value_type, leaf))
    if pa.types.is_fixed_size_list(arrow_type):
        return pa.list_(_with_leaf(arrow_type.value_type, leaf), arrow_type.list_size)
    return leaf


def _fold(array: pa.Array, name: str, shape: tuple) -> pa.Array:
    """``array`` with its innermost level of scalars folded into elements of ``shape``: a
    fixed-size list of that many items, or a list whose every entry has that many."""
    size = prod(shape)
    what = f"element_shape {list(shape)} of column {name!r}"
    if array.null_count:
        raise InvalidDataError(f"{what}: the column has null entries")
    if pa.types.is_fixed_size_list(array.type) and not pa.types.is_nested(array.type.value_type):
        if array.type.list_size != size:
            raise ArgumentError(f"{what}: its elements have {array.type.list_size} items")
        return _elements(array.flatten(), shape)
    if pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
        if pa.types.is_nested(array.type.value_type):
            inner = _fold(array.flatten(), name, shape)
            return pa.LargeListArray.from_arrays(_relative(array.offsets), inner)
        lengths = np.diff(array.offsets.to_numpy())
        if len(lengths) and not (lengths == size).all():
            raise ArgumentError(f"{what}: an entry has {lengths[lengths != size][0]} items")
        return _elements(array.flatten(), shape)
    raise ArgumentError(f"{what}: the column is {array.type}, not lists of numbers")


def to_dataset(data: pa.Table) -> Any:
    """The lodtensor table ``data`` as a ``datasets.Dataset``: the features of its
    ``huggingface`` metadata (what ``from_huggingface`` kept) when it has them, else
    inferred from the Arrow types, with tensor elements as fixed-length lists. Values are
    shared; offsets are rebuilt where the HF layout wants other ones."""
    import datasets

    metadata = data.schema.metadata or {}
    features = None
    if _HF_KEY in metadata:
        features = datasets.Features.from_dict(json.loads(metadata[_HF_KEY])["info"]["features"])
    columns = []
    for name, column in zip(data.column_names, data.columns):
        target = None
        if features is not None and name in features:
            target = features.arrow_schema.field(name).type
        chunks = [_to_hf(chunk, target) for chunk in column.chunks] or [
            _to_hf(pa.array([], column.type), target)
        ]
        columns.append(pa.chunked_array(chunks, chunks[0].type))
    names = data.column_names
    plain = pa.Table.from_arrays(columns, names=names)
    info = datasets.DatasetInfo(features=features)
    return datasets.Dataset(datasets.table.InMemoryTable(plain), info=info)


def _storage(array: pa.Array) -> pa.Array:
    """``array`` without ``arrow.fixed_shape_tensor`` tags: each element a fixed-size list
    (nested, one per dimension, outermost first)."""
    if isinstance(array.type, pa.FixedShapeTensorType):
        shape = array.type.shape
        values = array.storage.flatten()
        for size in reversed(shape[1:]):
            values = pa.FixedSizeListArray.from_arrays(values, size)
        return pa.FixedSizeListArray.from_arrays(values, shape[0]) if shape else values
    if pa.types.is_large_list(array.type) or pa.types.is_list(array.type):
        inner = _storage(array.flatten())
        build = pa.LargeListArray if pa.types.is_large_list(array.type) else pa.ListArray
        offsets = _relative(array.offsets)
        if build is pa.ListArray:
            offsets = offsets.cast(pa.int32())
        return build.from_arrays(offsets, inner)  # a tensor: no nulls
    return array


def _to_hf(array: pa.Array, target: pa.DataType | None) -> pa.Array:
    """One chunk as the HF feature's Arrow type ``target`` wants it (inferred when None)."""
    hf_shape = None if target is None else _hf_array_shape(target)
    if target is None:
        return _storage(array) if _has_tensor(array.type) else array
    if hf_shape is None:
        return _as_type(array, target)
    # An ArrayXD: lists of fixed lengths over the elements' values.
    storage_type = target.storage_type
    if isinstance(array.type, pa.FixedShapeTensorType):
        values, rows, outer = array.storage.flatten(), len(array), None
    else:  # one level (a first dimension of None) over elements
        values, rows = array.flatten().storage.flatten(), len(array)
        outer = _relative(array.offsets).cast(pa.int32())
    nested = values.cast(_leaf(storage_type))
    dims = list(hf_shape[1:])
    for size in reversed(dims):
        n = len(nested) // size
        nested = pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32) * size), nested)
    if outer is None:
        size = hf_shape[0]
        outer = pa.array(np.arange(rows + 1, dtype=np.int32) * size)
    storage = pa.ListArray.from_arrays(outer, nested)
    return pa.ExtensionArray.from_storage(target, storage.cast(storage_type))


def _is_list(arrow_type: pa.DataType) -> bool:
    return pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)


def _list_of(target: pa.DataType, offsets: Any, values: pa.Array, mask: Any = None) -> pa.Array:
    """A list array of the list type ``target``: ``values`` cut at ``offsets``."""
    if pa.types.is_large_list(target):
        return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), values, mask=mask)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values, mask=mask)


def _as_type(array: pa.Array, target: pa.DataType) -> pa.Array:
    """``array`` as the Arrow type ``target``: tensor elements as fixed-size lists, or as
    lists of their items when ``target`` has a list there (an ``element_shape`` fold
    undone), offset widths as ``target``'s."""
    if array.type == target:
        return array
    if isinstance(array.type, pa.FixedShapeTensorType):
        if _is_list(target) and not pa.types.is_nested(target.value_type):
            values = array.storage.flatten().cast(target.value_type)
            offsets = np.arange(len(array) + 1, dtype=np.int64) * prod(array.type.shape)
            return _list_of(target, offsets, values)
        return _as_type(_storage(array), target)
    if _is_list(array.type) and _is_list(target):
        offsets = array.offsets.to_numpy().astype(np.int64)
        # The child under every entry, null ones too (flatten() would skip theirs).
        child = array.values.slice(offsets[0], offsets[-1] - offsets[0])
        mask = array.is_null() if array.null_count else None
        return _list_of(target, offsets - offsets[0], _as_type(child, target.value_type), mask)
    return array.cast(target)


def _leaf(arrow_type: pa.DataType) -> pa.DataType:
    while pa.types.is_nested(arrow_type):
        arrow_type = arrow_type.value_type
    return arrow_type


def _has_tensor(arrow_type: pa.DataType) -> bool:
    while pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        arrow_type = arrow_type.value_type
    return isinstance(arrow_type, pa.FixedShapeTensorType)
