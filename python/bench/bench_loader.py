"""Python training-loop speed: lodtensor's Loader from Python beside a pure-pyarrow loop
over the same memory-mapped file, and the Rust loader in the same process.

    python python/bench/bench_loader.py [--mib 256] [--dir /tmp] [--repeat 5]

When the `datasets` package (Hugging Face) is installed, it runs too, on a copy of the file in
its own format (an Arrow IPC stream, the tensor extension type replaced by its storage, which
`datasets` requires), read with `with_format("arrow")`.

The file: documents -> sentences -> tokens of f32[64], normal floats (incompressible),
written with lodtensor.write. Every loop hands the training step the same thing per batch:
the token values as a numpy [tokens, 64] array and the sentence offsets (int64, from 0).
The Rust column is the same loader reading the epoch in Rust in the same process
(`Loader._epoch_in_rust("tokens", 1)`), doing per batch what `batch.values("tokens")` and
`batch.offsets("tokens", 1)` do short of making numpy arrays: the values' address and shape,
and the rebased sentence offsets copied into a new vector. The in-order line also gives the
Rust loader alone (batches only, nothing taken from them).
Batches: at most 4096 tokens, documents in file order, or shuffled with seed 7 (the same
batches for every contender: pyarrow follows the Loader's plan). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import bisect
import os
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

import lodtensor as lt

try:
    import datasets
except ImportError:
    datasets = None

DIM = 64
BUDGET = 4096


def make_file(path: str, mib: int, seed: int = 1) -> None:
    lt.write(path, documents(mib, seed))


def documents(mib: int, seed: int = 1, easy: bool = False) -> pa.Table:
    """About `mib` MiB of documents -> sentences -> tokens of f32[64]: normal floats, or
    with `easy` small whole numbers (compressible, as embeddings of a few distinct tokens)."""
    rng = np.random.default_rng(seed)
    tokens_wanted = mib * 2**20 // (DIM * 4)
    n_docs = max(1, tokens_wanted * 2 // 315)  # 10.5 sentences of 15 tokens on average
    sentences = rng.integers(1, 21, n_docs)
    tokens = rng.integers(1, 30, int(sentences.sum()))
    n_values = int(tokens.sum()) * DIM
    if easy:
        values = rng.integers(0, 4, n_values).astype(np.float32)
    else:
        values = rng.standard_normal(n_values, dtype=np.float32)
    elements = pa.FixedSizeListArray.from_arrays(pa.array(values), DIM)
    sents = pa.LargeListArray.from_arrays(pa.array(np.r_[0, np.cumsum(tokens)]), elements)
    docs = pa.LargeListArray.from_arrays(pa.array(np.r_[0, np.cumsum(sentences)]), sents)
    return pa.table({"tokens": docs})


def race(contenders: dict, repeat: int) -> dict:
    """The best time and the result of each contender, run in turns whose order rotates
    from round to round, so that the load of a shared machine, and what one contender leaves
    in the caches and the allocator for the next, fall on all of them alike."""
    names = list(contenders)
    times = {name: [] for name in names}
    out = {}
    for round_ in range(repeat):
        k = round_ % len(names)
        for name in names[k:] + names[:k]:
            start = time.perf_counter()
            out[name] = contenders[name]()
            times[name].append(time.perf_counter() - start)
    return {name: (min(times[name]), out[name]) for name in names}


class PyarrowFile:
    """The file opened the pyarrow way: memory_map, record batches, row starts."""

    def __init__(self, path: str):
        self.source = pa.memory_map(path)
        reader = ipc.open_file(self.source)
        self.batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
        self.starts = np.cumsum([0] + [b.num_rows for b in self.batches]).tolist()

    def pieces(self, samples: np.ndarray):
        """(record batch, local rows) for each record batch the samples touch, in order."""
        out = []
        for s in samples.tolist():
            b = bisect.bisect_right(self.starts, s) - 1
            local = s - self.starts[b]
            if out and out[-1][0] == b:
                out[-1][1].append(local)
            else:
                out.append((b, [local]))
        return out


def arrays_of(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    sents = column.flatten()
    tokens = sents.flatten()
    tokens = getattr(tokens, "storage", tokens)
    values = tokens.flatten().to_numpy(zero_copy_only=True).reshape(-1, DIM)
    offsets = sents.offsets.to_numpy()
    return values, offsets - offsets[0]


def pyarrow_slices(f: PyarrowFile, plan: list[tuple[int, int, int]]) -> int:
    """In order: one slice per batch (a plan entry is record batch, first row, rows)."""
    tokens = 0
    for b, first, n in plan:
        values, _ = arrays_of(f.batches[b].column(0).slice(first, n))
        tokens += len(values)
    return tokens


def pyarrow_take(f: PyarrowFile, plan: list[list[tuple[int, list[int]]]]) -> int:
    """Shuffled: per batch, take the rows of each record batch, concatenate the pieces."""
    tokens = 0
    for pieces in plan:
        parts = [arrays_of(f.batches[b].column(0).take(pa.array(rows))) for b, rows in pieces]
        values = np.concatenate([p[0] for p in parts]) if len(parts) > 1 else parts[0][0]
        tokens += len(values)
    return tokens


def pyarrow_slices_concat(f: PyarrowFile, plan: list[list[tuple[int, list[int]]]]) -> int:
    """Shuffled: per batch, one slice per row, values and lengths concatenated with numpy."""
    tokens = 0
    for pieces in plan:
        parts = [arrays_of(f.batches[b].column(0).slice(r, 1)) for b, rows in pieces for r in rows]
        values = np.concatenate([p[0] for p in parts])
        lengths = np.concatenate([np.diff(p[1]) for p in parts])
        offsets = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        tokens += len(values)
    return tokens


def hf_copy(path: str) -> str:
    """The file as `datasets` takes it: an IPC stream, fixed-size lists without the tag."""
    copy = path[: -len(".arrow")] + ".hf.arrow"
    if not os.path.exists(copy):
        with pa.memory_map(path) as source:
            table = ipc.open_file(source).read_all()
        with ipc.new_stream(copy, pa.schema([("tokens", UNTAGGED)])) as writer:
            for b in table.to_batches():
                docs = b.column(0)
                sents = docs.values
                plain = pa.LargeListArray.from_arrays(
                    docs.offsets, pa.LargeListArray.from_arrays(sents.offsets, sents.values.storage)
                )
                writer.write_batch(pa.record_batch([plain], names=["tokens"]))
    return copy


UNTAGGED = pa.large_list(pa.large_list(pa.list_(pa.float32(), DIM)))


def hf_arrays(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    parts = [arrays_of(c) for c in table.column(0).chunks]
    if len(parts) == 1:
        return parts[0]
    values = np.concatenate([p[0] for p in parts])
    lengths = np.concatenate([np.diff(p[1]) for p in parts])
    return values, np.r_[0, np.cumsum(lengths)]


def hf_in_order(hf, plan: list[np.ndarray]) -> int:
    tokens = 0
    for samples in plan:
        values, _ = hf_arrays(hf[int(samples[0]) : int(samples[-1]) + 1])
        tokens += len(values)
    return tokens


def hf_shuffled(hf, plan: list[np.ndarray]) -> int:
    tokens = 0
    for samples in plan:
        values, _ = hf_arrays(hf[samples.tolist()])
        tokens += len(values)
    return tokens


def lodtensor_epoch(loader) -> int:
    tokens = 0
    for batch in loader:
        values = batch.values("tokens")
        batch.offsets("tokens", 1)
        tokens += len(values)
    return tokens


def rust_epoch(loader) -> int:
    """The same work as lodtensor_epoch per batch (values and offsets of the column), in Rust."""
    return loader._epoch_in_rust("tokens", 1)[1]


def rust_batches_only(loader) -> int:
    return loader._epoch_in_rust()[1]


def in_order_pieces(f: PyarrowFile, plan: list[np.ndarray]) -> list[tuple[int, int, int]]:
    """(record batch, first row, rows) slices of each in-order batch; a batch that crosses
    a record batch is read as two slices, as the Loader gathers it."""
    out = []
    for samples in plan:
        for b, local in f.pieces(samples):
            out.append((b, local[0], len(local)))
    return out


def batches(ds, f, hf, shuffle: bool, repeat: int) -> tuple[list, float | None]:
    """Table rows for one epoch of 4096-token batches, and HF datasets' tokens/s."""
    loader = ds.loader(token_budget=BUDGET, shuffle=shuffle, seed=7)
    plan = [b.samples.copy() for b in ds.loader(token_budget=BUDGET, shuffle=shuffle, seed=7)]
    contenders = {"lt": lambda: lodtensor_epoch(loader), "rs": lambda: rust_epoch(loader)}
    if shuffle:
        pieces = [f.pieces(samples) for samples in plan]
        baselines = {
            "take": (lambda: pyarrow_take(f, pieces), 1),
            "row slices + np.concatenate": (lambda: pyarrow_slices_concat(f, pieces), repeat),
        }
        if hf is not None:
            contenders["hf"] = lambda: hf_shuffled(hf, plan)
    else:
        slices = in_order_pieces(f, plan)
        baselines = {"slice": (lambda: pyarrow_slices(f, slices), repeat)}
        contenders["rs alone"] = lambda: rust_batches_only(loader)
        if hf is not None:
            contenders["hf"] = lambda: hf_in_order(hf, plan)
    rows, hf_speed = [], None
    for how, (baseline, runs) in baselines.items():
        if runs == 1:  # too slow to repeat: one run, apart
            t_py, tokens = race({"py": baseline}, 1)["py"]
            r = race(contenders, repeat) if not rows else r
        else:
            r = race({"py": baseline, **contenders}, repeat)
            t_py, tokens = r["py"]
        (t_lt, tokens_lt), (t_rs, tokens_rs) = r["lt"], r["rs"]
        assert tokens == tokens_lt == tokens_rs, (tokens, tokens_lt, tokens_rs)
        if "hf" in r:
            assert r["hf"][1] == tokens
            hf_speed = tokens / r["hf"][0]
        name = "shuffled" if shuffle else "in order"
        rows.append((name, tokens, t_py, t_lt, t_rs, how))
        if "rs alone" in r:
            assert r["rs alone"][1] == tokens
            rows.append((name, tokens, None, t_lt, r["rs alone"][0], "Rust: batches only"))
    return rows, hf_speed


def lookups(ds, f, hf, path: str, repeat: int) -> dict:
    """Seconds per random document and per open, for each contender."""
    picks = np.random.default_rng(3).integers(0, ds.num_rows, 100_000).tolist()
    ds.row(0)  # the pyarrow record batches are imported once, on first use

    def py_sample():
        for s in picks:
            b = bisect.bisect_right(f.starts, s) - 1
            f.batches[b].slice(s - f.starts[b], 1)

    def lt_sample():
        for s in picks:
            ds.row(s)

    def py_open():
        with pa.memory_map(path) as source:
            reader = ipc.open_file(source)
            [reader.get_batch(i) for i in range(reader.num_record_batches)]

    samples = {"py": py_sample, "lt": lt_sample}
    opens = {"py": py_open, "lt": lambda: lt.open(path)}
    per_call = {"py": len(picks), "lt": len(picks)}
    if hf is not None:
        samples["hf"] = lambda: [hf[s] for s in picks[:10_000]]
        opens["hf"] = lambda: datasets.Dataset.from_file(hf_copy(path))
        per_call["hf"] = 10_000
    sample = race(samples, repeat)
    opened = race(opens, 20)
    return {
        name: (sample[name][0] / per_call[name], opened[name][0]) for name in samples
    }


def report(ds, size: int, repeat: int, rows: list, looked: dict, hf_speeds: dict) -> None:
    print(f"File: {size / 2**20:.0f} MiB, {ds.num_rows} documents, {ds.num_batches} record "
          f"batches, f32[{DIM}] tokens; {BUDGET}-token batches; best of {repeat} "
          "(pyarrow take: one run).\nPer batch, every contender takes the token values "
          "[tokens, 64] and the sentence offsets from 0 (Rust: their address and shape, and the "
          "offsets in a new vector; Python: two numpy arrays), except the 'batches only' row.\n")
    print("| | pure pyarrow | lodtensor from Python | Rust Loader (same process) "
          "| lodtensor / pyarrow | Python / Rust |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, tokens, tp, tl, tr, how in rows:
        def mt(t):
            return f"{tokens / t / 1e6:.{0 if tokens / t >= 1e7 else 1}f} M tokens/s"
        py, ratio = (mt(tp), f"{tp / tl:.2f}x") if tp is not None else ("", "")
        print(f"| {name} ({how}) | {py} | {mt(tl)} | {mt(tr)} | {ratio} "
              f"| {tr / tl * 100:.0f} % |")
    (s_py, o_py), (s_lt, o_lt) = looked["py"], looked["lt"]
    print(f"| random document | {s_py * 1e6:.2f} µs | {s_lt * 1e6:.2f} µs | | {s_py / s_lt:.2f}x | |")
    print(f"| open | {o_py * 1e3:.3f} ms | {o_lt * 1e3:.3f} ms | | {o_py / o_lt:.2f}x | |")
    if "hf" in looked:
        s_hf, o_hf = looked["hf"]
        print(f"\nHF datasets {datasets.__version__} (arrow format, same batches): "
              f"in order {hf_speeds[False] / 1e6:.1f} M tokens/s, "
              f"shuffled {hf_speeds[True] / 1e6:.1f} M tokens/s, "
              f"a random document {s_hf * 1e6:.1f} µs, open {o_hf * 1e3:.3f} ms.")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    path = os.path.join(args.dir, f"lodtensor-bench-{args.mib}.arrow")
    if not os.path.exists(path):
        make_file(path, args.mib)
    ds = lt.open(path)
    f = PyarrowFile(path)
    hf = datasets.Dataset.from_file(hf_copy(path)).with_format("arrow") if datasets else None
    rows, hf_speeds = [], {}
    for shuffle in [False, True]:
        more, hf_speeds[shuffle] = batches(ds, f, hf, shuffle, args.repeat)
        rows += more
    looked = lookups(ds, f, hf, path, args.repeat)
    report(ds, os.path.getsize(path), args.repeat, rows, looked, hf_speeds)


if __name__ == "__main__":
    main()
