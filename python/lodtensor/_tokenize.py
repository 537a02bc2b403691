"""``lt.tokenize``: text → token-id shards with a HuggingFace tokenizer (the Rust
``tokenizers`` crate, on every core). Paths, globs and directories are resolved here,
Parquet files read through pyarrow and HuggingFace datasets taken as Arrow streams; the
rest is ``lodtensor::tokenize``."""

from __future__ import annotations

import glob
import os
from typing import Any

import pyarrow as pa

from . import _native  # type: ignore[attr-defined]  # the compiled module, not in the stub
from ._inputs import as_stream

_GLOB = ("*", "?", "[")


def tokenize(
    inputs: Any,
    output: str | os.PathLike,
    *,
    tokenizer: Any,
    field: str | None = None,
    eos: bool | str = True,
    bos: bool | str = False,
    split: str | None = None,
    shard_rows: int | None = None,
    storage_options: dict[str, str] | None = None,
    compression: str | None = None,
) -> Any:
    """Tokenizes ``inputs`` with ``tokenizer`` into the sharded dataset ``output`` (a
    directory, or a URL such as ``s3://bucket/tokens/``) and returns it opened;
    ``storage_options`` (as for ``open``) reach the store of URL inputs and output.

    ``inputs`` is a path, a glob (``"corpus/**/*.txt"``), a directory (its files, sorted), a
    URL (``s3://bucket/a.txt`` one object; ``s3://bucket/corpus/`` every object under the
    prefix, sorted, names starting with ``.`` or ``_`` skipped; ``s3://bucket/corpus/*.jsonl``
    a glob over that listing, ``**`` across ``/``), a HuggingFace ``datasets.Dataset``, any
    object with ``__arrow_c_stream__``, or a list of them. An object is read whole when its
    turn comes, and one larger than 1 GiB is refused (``OSError`` naming its URL). A ``.jsonl``/``.ndjson``/``.json`` file holds one JSON object per line (the text in
    its string ``field``, default ``"text"``), a ``.parquet`` file, a dataset or a stream a
    string column ``field``; any other file is one document of UTF-8 text. ``tokenizer`` is a
    path to a ``tokenizer.json`` or a ``tokenizers.Tokenizer``.

    The dataset has the column ``"tokens"``: documents → tokens, or with ``split`` (a
    separator such as ``"\\n\\n"``) documents → pieces → tokens, each piece ending with its
    separator and encoded alone; ids ``uint16`` when the vocabulary has at most 65,536 ids,
    else ``int32``. ``eos`` (``True``: the tokenizer's end-of-text token, found among its
    special tokens ``<|endoftext|>``, ``</s>``, ``<|end_of_text|>``, ``<eos>``, ``<|eot_id|>``,
    ``[SEP]``; or a token) ends each document, ``bos`` (``<s>``, ``<|begin_of_text|>``,
    ``<bos>``, ``<|startoftext|>``, ``[CLS]``) starts it; a tokenizer without one raises
    ``ArgumentError`` naming the option. The tokenizer's own post-processor is not applied.
    The side column ``"source"`` names each document's input.

    Each input is written as pending shards of its own and all are committed at the end, so
    a run killed midway and started again skips the inputs written before and writes every
    document once (an object is the same input while its size and ETag are); run again
    after it finished, it changes nothing.

        >>> ds = lt.tokenize("corpus/*.txt", "tokens/", tokenizer="tokenizer.json")  # doctest: +SKIP
        >>> ds = lt.tokenize(hf_dataset, "s3://bucket/tokens/", tokenizer=tok)       # doctest: +SKIP
        >>> ds = lt.tokenize("s3://bucket/corpus/", "tokens/", tokenizer=tok,
        ...                  storage_options={"aws_region": "eu-west-1"})         # doctest: +SKIP
    """
    from . import open as open_dataset

    is_url, out = _native.location(output)
    out = os.fspath(out)
    _run(
        inputs,
        out,
        tokenizer_source(tokenizer),
        field=field,
        eos=eos,
        bos=bos,
        split=split,
        shard_rows=shard_rows,
        storage_options=storage_options,
        compression=compression,
    )
    if is_url:
        return open_dataset(out, storage_options=storage_options)
    return open_dataset(out)


def tokenizer_source(tokenizer: Any) -> dict[str, str]:
    """``tokenizer`` (a path to ``tokenizer.json`` or a ``tokenizers.Tokenizer``) as the
    native function's keyword: the path, or the tokenizer's JSON."""
    if isinstance(tokenizer, (str, os.PathLike)):
        return {"tokenizer_path": os.fspath(tokenizer)}
    if hasattr(tokenizer, "to_str"):
        return {"tokenizer_json": tokenizer.to_str()}
    raise TypeError(
        "tokenize: tokenizer must be a path to tokenizer.json or a tokenizers.Tokenizer, "
        f"not {type(tokenizer).__name__}"
    )


def _run(inputs: Any, output: str, source: dict[str, str], **options: Any) -> Any:
    """The native ``tokenize`` of ``inputs`` into ``output`` (a path or a URL as the crate's
    ``Location`` says): the manifest committed, or with ``task=(i, n)`` that task's
    progress."""
    items = _inputs(inputs, options.get("field") or "text")
    return _native.tokenize(items, output, **options, **source)


def _inputs(inputs: Any, field: str) -> list[Any]:
    """``inputs`` as the native function's items: paths, and ``(name, stream)`` pairs."""
    if isinstance(inputs, (str, os.PathLike)) or not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    items: list[Any] = []
    for n, item in enumerate(inputs):
        if isinstance(item, str) and _native.location(item)[0]:
            items.append(item)  # a URL: its objects are listed and read by the native part
        elif isinstance(item, (str, os.PathLike)):
            for path in _paths(os.fspath(item)):
                items.append(_parquet(path, field) if path.endswith(".parquet") else path)
        else:
            fingerprint = getattr(item, "_fingerprint", None)
            name = f"datasets.Dataset:{fingerprint}" if fingerprint else f"stream:{n}"
            items.append((name, as_stream(item, "tokenize")))
    return items


def _paths(path: str) -> list[str]:
    """The files of a path, a glob or a directory (recursively, sorted; names starting
    with ``.`` skipped)."""
    if any(c in path for c in _GLOB) and not os.path.exists(path):
        found = sorted(glob.glob(path, recursive=True))
        if not found:
            raise FileNotFoundError(2, "no file matches the pattern", path)
        return [p for f in found for p in _paths(f)]
    if os.path.isdir(path):
        out: list[str] = []
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            out.extend(os.path.join(root, f) for f in sorted(files) if not f.startswith("."))
        return sorted(out)
    return [path]  # a missing file is named by the native part


def _parquet(path: str, field: str) -> tuple[str, Any]:
    """The Parquet file ``path``'s column ``field``, read through pyarrow."""
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    if field not in file.schema_arrow.names:
        raise _native.ColumnNotFoundError(f"{path}: no column named {field!r}")
    batches = file.iter_batches(columns=[field], batch_size=1024)
    schema = pa.schema([file.schema_arrow.field(field)])
    return (path, pa.RecordBatchReader.from_batches(schema, batches))
