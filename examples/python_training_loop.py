"""A Python training loop over a lodtensor dataset file: the same batches as the Rust loader.

    python examples/python_training_loop.py DATA.arrow [PLAN.json]

Without a plan, batches are 4 consecutive documents in file order, read without any copy.
With a plan (`Loader::plan(epoch)?.to_json()` in Rust: {"epoch": e, "batches": [[row, ...],
...]}), each batch holds exactly the rows the Rust loader gives for that epoch; rows that are
not consecutive are gathered with one copy, as the Rust loader does.

Prints one JSON line per batch: its rows, token count, the sum of its token values and of its
labels, and the bytes pyarrow allocated (0 for batches that are views of the mapping).
Needs numpy and pyarrow; the torch part runs only when torch is installed.
"""

import json
import sys

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc


def open_dataset(path):
    """Memory-maps the file: record batches are views of the mapping, nothing is read yet."""
    source = pa.memory_map(path, "r")
    reader = ipc.open_file(source)
    batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
    starts = np.cumsum([0] + [b.num_rows for b in batches])
    return source, batches, starts


def runs(rows, starts):
    """Consecutive rows of one record batch, as (record batch, first, end) runs."""
    out = []
    for row in rows:
        b = int(np.searchsorted(starts, row, side="right")) - 1
        local = row - int(starts[b])
        if out and out[-1][0] == b and out[-1][2] == local:
            out[-1][2] += 1
        else:
            out.append([b, local, local + 1])
    return out


def tokens_of(column):
    """A `documents -> sentences -> tokens` column slice as numpy, without a copy.

    Returns the document offsets (into sentences), the sentence offsets (into tokens), both
    as stored (a slice's offsets need not start at 0), and the token values [tokens, dim]
    of the part in view.
    """
    doc_offsets = column.offsets.to_numpy(zero_copy_only=True)
    sentences = column.flatten()  # the sentences in view, a view
    sentence_offsets = sentences.offsets.to_numpy(zero_copy_only=True)
    tokens = sentences.flatten()  # arrow.fixed_shape_tensor over FixedSizeList<f32, dim>
    storage = tokens.storage if isinstance(tokens, pa.ExtensionArray) else tokens
    dim = storage.type.list_size
    values = storage.flatten().to_numpy(zero_copy_only=True).reshape(-1, dim)
    return doc_offsets, sentence_offsets, values


def batch_arrays(batches, starts, rows):
    """The batch's arrays: rebased document and sentence offsets, values, labels.

    One run (consecutive rows of one record batch) is a view of the mapping; several runs are
    gathered with one copy of their values.
    """
    doc_lengths, sentence_lengths, values, labels = [], [], [], []
    for b, lo, hi in runs(rows, starts):
        rb = batches[b].slice(lo, hi - lo)
        docs, sents, vals = tokens_of(rb.column("tokens"))
        doc_lengths.append(np.diff(docs))
        sentence_lengths.append(np.diff(sents))
        values.append(vals)
        labels.append(rb.column("label").to_numpy(zero_copy_only=True))
    one = len(values) == 1
    values = values[0] if one else np.concatenate(values)
    labels = labels[0] if one else np.concatenate(labels)
    doc_lengths = np.concatenate(doc_lengths)
    sentence_lengths = np.concatenate(sentence_lengths)
    doc_offsets = np.concatenate([[0], np.cumsum(doc_lengths)])
    sentence_offsets = np.concatenate([[0], np.cumsum(sentence_lengths)])
    return doc_offsets, sentence_offsets, values, labels


def padded(doc_offsets, sentence_offsets, values):
    """Documents padded to the longest: values [docs, max_len, dim], lengths, mask."""
    starts = sentence_offsets[doc_offsets[:-1]]
    ends = sentence_offsets[doc_offsets[1:]]
    lengths = ends - starts
    max_len = int(lengths.max(initial=0))
    out = np.zeros((len(lengths), max_len, values.shape[1]), dtype=values.dtype)
    mask = np.arange(max_len)[None, :] < lengths[:, None]
    for i, (s, e) in enumerate(zip(starts, ends)):
        out[i, : e - s] = values[s:e]
    return out, lengths, mask


def main():
    path = sys.argv[1]
    source, batches, starts = open_dataset(path)
    n = int(starts[-1])
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            plan = json.load(f)["batches"]
    else:
        plan = [list(range(i, min(i + 4, n))) for i in range(0, n, 4)]
    try:
        import torch
    except ImportError:
        torch = None
    for rows in plan:
        before = pa.total_allocated_bytes()
        doc_offsets, sentence_offsets, values, labels = batch_arrays(batches, starts, rows)
        allocated = pa.total_allocated_bytes() - before
        dense, lengths, mask = padded(doc_offsets, sentence_offsets, values)
        assert dense[mask].sum(dtype=np.float64) == values.sum(dtype=np.float64)
        if torch is not None:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the mapping is read-only
                nested = torch.nested.nested_tensor_from_jagged(
                    values=torch.from_numpy(values),
                    offsets=torch.from_numpy(sentence_offsets.astype(np.int64)),
                )
            assert nested.size(0) == len(sentence_offsets) - 1
        print(
            json.dumps(
                {
                    "rows": [int(r) for r in rows],
                    "tokens": int(values.shape[0]),
                    "sum": float(values.sum(dtype=np.float64)),
                    "labels": int(labels.sum()),
                    "padded_shape": list(dense.shape),
                    "allocated": int(allocated),
                    "view": len(runs(rows, starts)) == 1,
                }
            )
        )
    source.close()


if __name__ == "__main__":
    main()
