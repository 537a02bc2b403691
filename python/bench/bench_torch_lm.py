"""torch data loading at language-model batch sizes: lodtensor.torch.BatchDataset packing
int32 token ids into windows of 257, beside LitData (`TokensLoader`) and MosaicML Streaming
(MDS windows), with 2 DataLoader workers each, shuffled, interleaved in one run.

    python python/bench/bench_torch_lm.py [--tokens 20_000_000] [--batch-sizes 8,64]
                                          [--repeat 2] [--workers 2] [--dir /tmp] [--no-peers]

The corpus: `--tokens` int32 ids (uniform below 32,000) in documents of log-normal lengths
(mu 7.0, sigma 1.2: a mean of about 2,250 tokens, as a byte-level BPE gives files of a
Linux machine's documentation and Python library), each with a `source` string (a path of
a file on this machine), written with `lt.write_shards`. Contenders, for each batch size B:

- lodtensor: `BatchDataset(dir, pack=256, pack_extra_token=True, batch_size=B,
  collate="packed", shuffle=True)`, with `columns=["tokens"]` and with `["tokens",
  "source"]` (the side column: each piece's file name, a list of strings);
- torch's floor: the same DataLoader over a dataset that yields a dict of the same keys,
  each a new tensor of one element (what the DataLoader costs per item by itself);
- LitData: `optimize` of each document's ids (`TokensLoader`), read by `StreamingDataset(
  item_loader=TokensLoader(block_size=257), shuffle=True)` in a `StreamingDataLoader`;
- MosaicML Streaming: the same windows lodtensor makes, in order, as `MDSWriter` samples
  (`ndarray:int32`, 257 ids), read by `StreamingDataset(shuffle=True)` in a
  `StreamingDataLoader`.

The step is `values.sum()` on the item's token tensor (it reads every byte once). Every
contender's epoch runs in turn, round after round (one warm-up round, then `--repeat`),
so that all see the same load; tokens/s is each one's best epoch, CPU the time of every
process (the main one and the workers) over the timed rounds, per token and per item.
Prints a Markdown table, the ratios of the same run and the load average.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import tempfile
import time
import warnings

import numpy as np
import pyarrow as pa
import torch
from bench_torch import cpu_seconds, dataloader_floor  # python/bench, the script's own directory
from torch.utils.data import DataLoader

import lodtensor as lt
from lodtensor.torch import BatchDataset

PACK = 256
SEED = 7
warnings.filterwarnings("ignore")


def corpus(n_tokens: int, seed: int = 1) -> pa.Table:
    """Documents of log-normal lengths, `n_tokens` int32 ids in all, and their file names."""
    rng = np.random.default_rng(seed)
    lengths = []
    while sum(lengths) < n_tokens:
        lengths.extend(np.maximum(1, rng.lognormal(7.0, 1.2, 1024).astype(np.int64)).tolist())
    lengths = np.array(lengths)
    lengths = lengths[: int(np.searchsorted(np.cumsum(lengths), n_tokens)) + 1]
    ids = pa.array(rng.integers(0, 32_000, int(lengths.sum()), dtype=np.int32))
    tokens = pa.LargeListArray.from_arrays(pa.array(np.r_[0, np.cumsum(lengths)]), ids)
    names = file_names(len(lengths))
    return pa.table({"tokens": tokens, "source": pa.array(names)})


def file_names(n: int) -> list[str]:
    """`n` paths of files on this machine (repeated when it has fewer)."""
    names: list[str] = []
    for root in ("/usr/share/doc", "/usr/lib/python3", "/usr/share/man"):
        for here, _, files in os.walk(root):
            names.extend(os.path.join(here, f) for f in files)
            if len(names) >= n:
                return names[:n]
    names = names or ["/dev/null"]
    return [names[i % len(names)] for i in range(n)]


def windows(path: str):
    """lodtensor's windows of PACK + 1 ids, in order: what the MDS shards hold."""
    loader = lt.open(path).loader(pack=PACK, pack_extra_token=True, batch_size=1024)
    for batch in loader:
        yield from np.asarray(batch.values("tokens")).reshape(-1, PACK + 1)


def write_peers(path: str, table: pa.Table, work: str) -> list[str]:
    """The corpus in each installed peer's format; the peers written."""
    written = []
    try:
        from streaming import MDSWriter

        with MDSWriter(out=os.path.join(work, "mds"), columns={"tokens": "ndarray:int32"}, size_limit="64mb") as out:
            for window in windows(path):
                out.write({"tokens": window})
        written.append("mds")
    except ImportError:
        pass
    try:
        import litdata
        from litdata.streaming.item_loader import TokensLoader

        offsets = table.column("tokens").chunk(0).offsets.to_numpy()
        ids = table.column("tokens").chunk(0).values.to_numpy()
        litdata.optimize(
            fn=_Document(ids, offsets), inputs=list(range(len(offsets) - 1)), output_dir=os.path.join(work, "litdata"),
            chunk_size=(PACK + 1) * 8192, item_loader=TokensLoader(), num_workers=1, verbose=False,
        )
        written.append("litdata")
    except ImportError:
        pass
    return written


class _Document:
    """LitData's `fn` (picklable): document `i`'s ids as a tensor."""

    def __init__(self, ids: np.ndarray, offsets: np.ndarray) -> None:
        self.ids, self.offsets = ids, offsets

    def __call__(self, i: int):
        yield torch.from_numpy(self.ids[self.offsets[i] : self.offsets[i + 1]].copy())


class Floor(torch.utils.data.IterableDataset):
    """`items` dicts shaped as `like` (an item), each leaf a new tensor of one element."""

    def __init__(self, like: dict, items: int) -> None:
        self.like, self.items = like, items

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        for _ in range(self.items // (info.num_workers if info else 1)):
            yield _small(self.like)


def _small(tree):
    if isinstance(tree, torch.Tensor):
        return torch.zeros(1, dtype=tree.dtype)
    if isinstance(tree, dict):
        return {k: _small(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_small(v) for v in tree[:1]]
    return tree


def lodtensor_epoch(loader) -> tuple[int, int]:
    tokens = items = 0
    for item in loader:
        values = item["tokens"]["values"]
        values.sum()
        tokens, items = tokens + values.numel(), items + 1
    return tokens, items


def tensor_epoch(loader, key: str | None = None) -> tuple[int, int]:
    tokens = items = 0
    for item in loader:
        values = item if key is None else item[key]
        values.sum()
        tokens, items = tokens + values.numel(), items + 1
    return tokens, items


def contenders(path: str, work: str, batch: int, workers: int, batches: int, peers: list[str]) -> dict:
    """name -> a function that runs one shuffled epoch and returns (tokens, items)."""
    dl = dict(batch_size=None, num_workers=workers, persistent_workers=True)
    opts = dict(pack=PACK, pack_extra_token=True, batch_size=batch, collate="packed", shuffle=True, seed=SEED)
    out = {}
    like = None
    for columns in (["tokens"], ["tokens", "source"]):
        loader = DataLoader(BatchDataset(path, columns=columns, **opts), **dl)
        out[f"lodtensor, {'+'.join(columns)}"] = lambda loader=loader: lodtensor_epoch(loader)
        like = next(iter(DataLoader(BatchDataset(path, columns=columns, **opts), batch_size=None)))
        floor = DataLoader(Floor(like, batches), **dl)
        out[f"torch's floor, {'+'.join(columns)}"] = lambda floor=floor: lodtensor_epoch(floor)
    common = dict(batch_size=batch, num_workers=workers, persistent_workers=True)
    if "litdata" in peers:
        import litdata
        from litdata.streaming.item_loader import TokensLoader

        lit = litdata.StreamingDataset(
            os.path.join(work, "litdata"), item_loader=TokensLoader(block_size=PACK + 1), shuffle=True, seed=SEED,
            drop_last=True,
        )
        dl_lit = litdata.StreamingDataLoader(lit, **common)
        out["LitData (TokensLoader)"] = lambda: tensor_epoch(dl_lit)
    if "mds" in peers:
        import streaming

        mds = streaming.StreamingDataset(
            local=os.path.join(work, "mds"), shuffle=True, shuffle_seed=SEED, batch_size=batch
        )
        dl_mds = streaming.StreamingDataLoader(mds, **common)
        out["MosaicML Streaming (MDS)"] = lambda: tensor_epoch(dl_mds, "tokens")
    return out


def interleaved(runs: dict, repeat: int) -> dict:
    """Each contender's epoch in turn, a warm-up round then `repeat` rounds: name ->
    (best seconds, tokens, items, CPU seconds an epoch)."""
    for run in runs.values():
        run()
    out = {name: [float("inf"), 0, 0, 0.0] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            cpu, start = cpu_seconds(), time.perf_counter()
            tokens, items = run()
            seconds = time.perf_counter() - start
            row = out[name]
            row[0], row[1], row[2], row[3] = min(row[0], seconds), tokens, items, row[3] + cpu_seconds() - cpu
    return {name: (s, t, i, cpu / repeat) for name, (s, t, i, cpu) in out.items()}


def report(batch: int, results: dict, floor_ints: float) -> None:
    print(f"\n### {batch} × {PACK + 1} ids a batch\n")
    print("| contender | M tokens/s | CPU ns a token | CPU µs an item |")
    print("| --- | ---: | ---: | ---: |")
    for name, (seconds, tokens, items, cpu) in results.items():
        if name.startswith("torch"):  # one-element tensors: no tokens to speak of
            print(f"| {name} | — | — | {cpu / items * 1e6:.0f} |")
        else:
            print(f"| {name} | {tokens / seconds / 1e6:.2f} | {cpu / tokens * 1e9:.0f} | {cpu / items * 1e6:.0f} |")
    speed = {name: t / s for name, (s, t, _, _) in results.items()}
    per_item = {name: cpu / i for name, (_, _, i, cpu) in results.items()}
    for side in ("tokens", "tokens+source"):
        ours = f"lodtensor, {side}"
        beyond = per_item[ours] - per_item[f"torch's floor, {side}"]
        peers = [name for name in speed if not name.startswith(("lod", "torch"))]
        ratios = ", ".join(f"{speed[ours] / speed[name]:.1f}× {name.split(' (')[0]}" for name in peers)
        bare = per_item[ours] - floor_ints
        print(f"\n{ours}: {beyond * 1e6:.0f} µs CPU an item beyond torch's floor, {bare * 1e6:.0f} µs beyond "
              f"the DataLoader over ints" + (f"; {ratios}" if ratios else ""))
    print(f"\nDataLoader over ints: {floor_ints * 1e6:.0f} µs CPU an item; load average {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=20_000_000)
    parser.add_argument("--batch-sizes", default="8,64")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--no-peers", action="store_true", help="lodtensor and torch's floor only")
    args = parser.parse_args()
    torch.set_num_threads(1)  # the step's threads would fight the workers for the CPUs
    work = tempfile.mkdtemp(dir=args.dir, prefix="bench_torch_lm_")
    try:
        path = os.path.join(work, "corpus")
        table = corpus(args.tokens)
        lt.write_shards(path, table, shard_rows=1024)
        peers = [] if args.no_peers else write_peers(path, table, work)
        multiprocessing.set_start_method("fork", force=True)  # LitData's optimize sets spawn
        n_tokens = len(table.column("tokens").chunk(0).values)
        print(f"{table.num_rows} documents, {n_tokens} int32 ids; torch {torch.__version__}, {os.cpu_count()} CPUs, "
              f"{args.workers} workers, best of {args.repeat} shuffled epochs after a warm-up; "
              f"load average {os.getloadavg()[0]:.1f}")
        for batch in (int(b) for b in args.batch_sizes.split(",")):
            batches = n_tokens // (PACK * batch)
            runs = contenders(path, work, batch, args.workers, batches, peers)
            report(batch, interleaved(runs, args.repeat), dataloader_floor(args.workers))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
