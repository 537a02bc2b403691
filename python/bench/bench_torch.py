"""torch data loading: lodtensor.torch.BatchDataset in a DataLoader beside the bare Loader,
MosaicML Streaming, LitData and Hugging Face datasets, on the same tokens, in one run.

    python python/bench/bench_torch.py [--mib 128] [--dir /tmp] [--repeat 3] [--workers 2]
                                       [--token-budget 4096] [--no-peers] [--remote]

Needs torch; the peers run when installed (mosaicml-streaming, litdata, datasets: install
them in a virtual environment of their own, not the test one). The data: documents ->
sentences -> tokens, two columns of the same lengths, `tokens` f32[64] normal floats and
`ids` int32, written once per format: a lodtensor file; MDS shards (`MDSWriter`, one
`ndarray` per column and document, no compression); LitData chunks (`optimize`); a
Hugging Face dataset saved to disk (`Array2D` tokens). Each contender is run as its users
run it: lodtensor batches of at most `--token-budget` tokens (4096 unless told); the
others batches of as many documents as the Loader's batches hold on average, joined by a
collate function (`torch.cat`).
The in-process ceiling: the bare Loader's epoch plus what a DataLoader of 0 workers
adds to each item by itself (measured over items made beforehand), the most any dataset
reaches through it. Every training step is `tokens.sum() + ids.sum()` on the tensors it gets (it reads every
byte once); lodtensor's contenders also take each level's offsets of both columns (the
peers' batches carry none). torch runs the step on one thread. Tokens/s is the best of `--repeat` epochs, after one warm-up epoch (persistent
workers); in file order and shuffled (seed 7). CPU ns a token: the CPU time of every
process (the main one and the DataLoader's workers) over those epochs, per token: what a
contender costs whatever else runs on the machine. The resume line: from `load_state_dict` of
a state saved mid-epoch to the next batch in hand (median of 5), and the same with a stateful
dataset that does nothing (what torch's worker start-up costs). Prints a Markdown table.

With `--remote` (needs moto and boto3): the same documents as shards in moto's S3 server on
127.0.0.1, read by `BatchDataset(url, ...)` through a node cache (filled by the warm-up
epoch), twice: as it hands batches over (a view batch as its place in the cache file) and
with every view copied into the worker's shared memory, as before the loader reported
places (a subclass that reports none): before and after in one run.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import tempfile
import time
import warnings

import numpy as np
import pyarrow as pa
import torch
from torch.utils.data import DataLoader

import lodtensor as lt
from lodtensor.torch import BatchDataset

DIM = 64
SEED = 7
warnings.filterwarnings("ignore")


def documents(mib: int, seed: int = 1) -> pa.Table:
    """About `mib` MiB of f32[64] tokens (and 4 bytes of id each), 2 levels."""
    rng = np.random.default_rng(seed)
    n_docs = max(1, mib * 2**20 // (DIM * 4) * 2 // 315)  # 10.5 sentences of 15 tokens
    sentences = rng.integers(1, 21, n_docs)
    tokens = rng.integers(1, 30, int(sentences.sum()))
    n = int(tokens.sum())
    values = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * DIM, dtype=np.float32)), DIM)
    ids = pa.array(rng.integers(0, 50_000, n, dtype=np.int32))
    sent_offsets = pa.array(np.r_[0, np.cumsum(tokens)])
    doc_offsets = pa.array(np.r_[0, np.cumsum(sentences)])

    def two_levels(elements):
        return pa.LargeListArray.from_arrays(doc_offsets, pa.LargeListArray.from_arrays(sent_offsets, elements))

    return pa.table({"tokens": two_levels(values), "ids": two_levels(ids)})


def step(tokens: torch.Tensor, ids: torch.Tensor) -> int:
    """The training step: reads every byte once; returns the tokens."""
    tokens.sum()
    ids.sum()
    return len(ids)


def per_document(path: str):
    """Each document as numpy arrays: tokens [n, 64], ids [n], sentence offsets."""
    for batch in lt.open(path).loader(batch_size=1):
        yield {
            "tokens": np.array(batch.values("tokens")),
            "ids": np.array(batch.values("ids")),
            "sentences": batch.offsets("tokens", 1),
        }


def concat(items: list[dict]) -> dict:
    """The collate function of the per-document formats: one batch of their tokens."""
    return {
        "tokens": torch.cat([torch.as_tensor(np.asarray(i["tokens"])).reshape(-1, DIM) for i in items]),
        "ids": torch.cat([torch.as_tensor(np.asarray(i["ids"])) for i in items]),
    }


def epoch_tokens(loader) -> int:
    return sum(step(item["tokens"], item["ids"]) for item in loader)


def lodtensor_epoch(loader) -> int:
    return sum(step(item["tokens"]["values"], item["ids"]["values"]) for item in loader)


def bare_epoch(loader) -> int:
    """What BatchDataset hands over (collate=None), taken from the Loader's batches."""
    n = 0
    for batch in loader:
        batch.offsets("tokens"), batch.offsets("ids")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            n += step(torch.from_numpy(batch.values("tokens")), torch.from_numpy(batch.values("ids")))
    return n


def cpu_seconds() -> float:
    """CPU time of this process and of its children alive now (DataLoader workers)."""
    t = os.times()
    total = t.user + t.system
    tick = os.sysconf("SC_CLK_TCK")
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                children = f.read().split()
        except OSError:
            continue
        for pid in children:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def best(run, repeat: int) -> tuple[float, int, float]:
    """The fastest of `repeat` epochs after a warm-up: seconds, tokens, and the CPU seconds
    per epoch (all of them, every process)."""
    run()  # warm-up: workers started, page cache
    times, tokens = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        tokens = run()
        times.append(time.perf_counter() - start)
    epochs = max(repeat, round(1.0 / min(times)))  # a second's worth: the clock has 10 ms ticks
    cpu = cpu_seconds()
    for _ in range(epochs):
        run()
    return min(times), tokens, (cpu_seconds() - cpu) / epochs


def dataloader_floor(workers: int, items: int = 2000) -> float:
    """CPU seconds (every process) per item of a DataLoader of `workers` persistent workers
    over a dataset that yields an int: what the DataLoader itself costs per batch."""

    class Ints(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            return iter(range(items // (info.num_workers if info else 1)))

    dl = DataLoader(Ints(), batch_size=None, num_workers=workers, persistent_workers=True)
    sum(1 for _ in dl)
    cpu = cpu_seconds()
    n = sum(1 for _ in dl) + sum(1 for _ in dl)
    return (cpu_seconds() - cpu) / n


class Prebuilt(torch.utils.data.IterableDataset):
    """Items made beforehand."""

    def __init__(self, items):
        self.items = items

    def __iter__(self):
        return iter(self.items)


def dataloader_cost(path: str, budget: int, repeat: int = 5) -> float:
    """Seconds a DataLoader of 0 workers adds to each item by itself: over an epoch of
    BatchDataset's items made beforehand, no step, against a plain loop over them."""
    items = list(DataLoader(BatchDataset(path, token_budget=budget), batch_size=None))
    loader = DataLoader(Prebuilt(items), batch_size=None)

    def fastest(run) -> float:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        return min(times)

    through = fastest(lambda: sum(1 for _ in loader))
    plain = fastest(lambda: sum(1 for _ in items))
    return (through - plain) / len(items)


class CopiedViews(BatchDataset):
    """BatchDataset with no place reported for any array: a worker copies a view batch's
    values into its shared memory (what a URL dataset's workers did before the loader
    reported places in its cache files)."""

    def _column(self, batch, name, leaf, places, packed):
        return super()._column(batch, name, leaf, None, packed)


def remote_contenders(remote: tuple[str, dict, str], shuffle: bool, workers: int, budget: int) -> dict:
    """The shards in S3 (`url`, `options`, the node cache `cache`) through a DataLoader of
    `workers` workers: as handed over, and with every view copied."""
    url, options, cache = remote
    opts = dict(token_budget=budget, shuffle=shuffle, seed=SEED, storage_options=options, cache_dir=cache)
    out = {}
    for name, kind in ((f"lodtensor.torch over S3 (moto), {workers} workers", BatchDataset),
                       (f"the same, views copied (before), {workers} workers", CopiedViews)):
        dl = DataLoader(kind(url, **opts), batch_size=None, num_workers=workers, persistent_workers=True)
        out[name] = lambda dl=dl: lodtensor_epoch(dl)
    return out


def start_remote(table: pa.Table, work: str, budget: int):
    """moto's S3 server with `table` as shards in a bucket: the server, and the URL, the
    storage options and a cache directory."""
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from s3_server import S3Server

    local = os.path.join(work, "shards")
    lt.write_shards(local, table, shard_rows=max(1, table.num_rows // 16))
    server = S3Server()
    url = server.upload_dir(local, "bench", "docs")
    return server, (url, server.storage_options(), os.path.join(work, "cache"))


def contenders(
    path: str, work: str, shuffle: bool, workers: int, docs_per_batch: int, budget: int, peers: bool
) -> dict:
    """name -> a function that runs one epoch and returns its tokens."""
    opts = dict(token_budget=budget, shuffle=shuffle, seed=SEED)
    out = {}
    bare = lt.open(path).loader(**opts)
    out["Loader (bare, in-process)"] = lambda: bare_epoch(bare)
    ds0 = BatchDataset(path, **opts)
    out["lodtensor.torch, 0 workers"] = lambda: lodtensor_epoch(DataLoader(ds0, batch_size=None))
    dsw = BatchDataset(path, **opts)
    dlw = DataLoader(dsw, batch_size=None, num_workers=workers, persistent_workers=True)
    out[f"lodtensor.torch, {workers} workers"] = lambda: lodtensor_epoch(dlw)
    if not peers:
        return out
    common = dict(batch_size=docs_per_batch, num_workers=workers, collate_fn=concat, persistent_workers=True)
    try:
        import streaming

        mds = streaming.StreamingDataset(
            local=os.path.join(work, "mds"), shuffle=shuffle, shuffle_seed=SEED, batch_size=docs_per_batch
        )
        dl_mds = streaming.StreamingDataLoader(mds, **common)
        out[f"MosaicML Streaming, {workers} workers"] = lambda: epoch_tokens(dl_mds)
    except ImportError:
        pass
    try:
        import litdata

        lit = litdata.StreamingDataset(os.path.join(work, "litdata"), shuffle=shuffle, seed=SEED)
        dl_lit = litdata.StreamingDataLoader(lit, **common)
        out[f"LitData, {workers} workers"] = lambda: epoch_tokens(dl_lit)
    except ImportError:
        pass
    try:
        import datasets

        hf = datasets.load_from_disk(os.path.join(work, "hf")).with_format("torch")
        dl_hf = DataLoader(hf, shuffle=shuffle, generator=torch.Generator().manual_seed(SEED), **common)
        out[f"HF datasets with_format('torch'), {workers} workers"] = lambda: epoch_tokens(dl_hf)
    except ImportError:
        pass
    return out


def write_peers(path: str, work: str) -> None:
    """The same documents in each peer's format (when installed)."""
    try:
        from streaming import MDSWriter

        columns = {"tokens": "ndarray:float32", "ids": "ndarray:int32", "sentences": "ndarray:int64"}
        with MDSWriter(out=os.path.join(work, "mds"), columns=columns, size_limit="64mb") as out:
            for doc in per_document(path):
                out.write(doc)
    except ImportError:
        pass
    try:
        import litdata

        docs = list(per_document(path))
        litdata.optimize(
            fn=_lit_doc(docs), inputs=list(range(len(docs))), output_dir=os.path.join(work, "litdata"),
            chunk_bytes="64MB", num_workers=1,
        )
    except ImportError:
        pass
    try:
        import datasets

        features = datasets.Features(
            {
                "tokens": datasets.Array2D(shape=(None, DIM), dtype="float32"),
                "ids": datasets.Sequence(datasets.Value("int32")),
                "sentences": datasets.Sequence(datasets.Value("int64")),
            }
        )
        hf = datasets.Dataset.from_generator(lambda: per_document(path), features=features)
        hf.save_to_disk(os.path.join(work, "hf"))
    except ImportError:
        pass


class _lit_doc:
    """LitData's `fn` (picklable): document `i`."""

    def __init__(self, docs):
        self.docs = docs

    def __call__(self, i):
        return self.docs[i]


class Counting(torch.utils.data.IterableDataset):
    """torch's floor for a resume: a stateful IterableDataset that does nothing."""

    def __init__(self):
        self.next = 0

    def __iter__(self):
        while self.next < 1000:
            self.next += 1
            yield torch.zeros(1)

    def state_dict(self):
        return {"next": self.next}

    def load_state_dict(self, state):
        self.next = state["next"]


def resume_once(make, workers: int, steps: int) -> float:
    """Seconds from a new StatefulDataLoader's load_state_dict (of a state saved after
    `steps` batches) to the next batch in hand."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    dl = StatefulDataLoader(make(), batch_size=None, num_workers=workers)
    it = iter(dl)
    for _ in range(steps):
        next(it)
    saved = dl.state_dict()
    del it, dl
    start = time.perf_counter()
    dl = StatefulDataLoader(make(), batch_size=None, num_workers=workers)
    dl.load_state_dict(saved)
    next(iter(dl))
    return time.perf_counter() - start


def resume_latency(path: str, workers: int, budget: int, runs: int = 5) -> dict:
    """Milliseconds from load_state_dict of a mid-epoch state to the next batch in hand, the
    median of `runs`; beside it torch's own floor, the same with a dataset that does nothing."""
    out = {}
    opts = dict(token_budget=budget, shuffle=True, seed=SEED)
    loader = lt.open(path).loader(**opts)
    steps = min(10, len(loader) // 2)  # mid-epoch, however few the batches
    if steps == 0:
        return out
    it = iter(loader)
    for _ in range(steps):
        state = next(it).next_state_dict()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fresh = lt.open(path).loader(**opts)
        fresh.load_state_dict(state)
        next(iter(fresh))
        times.append(time.perf_counter() - start)
    out["Loader (bare): open + load_state_dict + next"] = statistics.median(times)
    for w in (0, workers):
        ours, floor = [], []
        for _ in range(runs):  # interleaved, so that both see the same load
            ours.append(resume_once(lambda: BatchDataset(path, **opts), w, steps))
            floor.append(resume_once(Counting, w, steps))
        out[f"StatefulDataLoader, {w} workers: BatchDataset"] = statistics.median(ours)
        out[f"StatefulDataLoader, {w} workers: a dataset that does nothing (torch's floor)"] = statistics.median(floor)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=128)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--token-budget", type=int, default=4096, help="tokens per lodtensor batch")
    parser.add_argument("--no-peers", action="store_true", help="lodtensor's contenders only")
    parser.add_argument("--remote", action="store_true", help="also over shards in moto's S3 (needs moto)")
    args = parser.parse_args()
    budget = args.token_budget
    torch.set_num_threads(1)  # the step's threads would fight the workers for the CPUs
    work = tempfile.mkdtemp(dir=args.dir, prefix="bench_torch_")
    server = None
    try:
        path = os.path.join(work, "docs.arrow")
        table = documents(args.mib)
        lt.write(path, table)
        if args.remote:
            server, remote = start_remote(table, work, budget)
        del table
        ds = lt.open(path)
        batches = len(ds.loader(token_budget=budget))
        docs_per_batch = max(1, round(ds.num_rows / batches))
        if not args.no_peers:
            write_peers(path, work)
        # LitData's optimize sets the start method to spawn; DataLoader workers start as they
        # do by default on Linux (fork) for every contender.
        multiprocessing.set_start_method("fork", force=True)
        tokens_total = int(ds.offsets("tokens", 1)[-1])
        print(f"{ds.num_rows} documents, {tokens_total} tokens, "
              f"{os.path.getsize(path) / 2**20:.0f} MiB; {batches} batches of <= {budget} tokens, "
              f"peers: {docs_per_batch} documents a batch; torch {torch.__version__}, {os.cpu_count()} CPUs\n")
        rows, cpus = {}, {}
        for shuffle in (False, True):
            runs = contenders(path, work, shuffle, args.workers, docs_per_batch, budget, not args.no_peers)
            if server is not None:
                runs |= remote_contenders(remote, shuffle, args.workers, budget)
            for name, run in runs.items():
                seconds, tokens, cpu = best(run, args.repeat)
                rows.setdefault(name, {})[shuffle] = tokens / seconds / 1e6
                cpus.setdefault(name, {})[shuffle] = cpu / tokens * 1e9
        bare = rows["Loader (bare, in-process)"]
        print(f"load average {os.getloadavg()[0]:.1f}\n")
        print("| contender | in order, M tokens/s | shuffled, M tokens/s | vs bare Loader | CPU ns a token |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for name, speed in rows.items():
            ratio = "/".join(f"{speed[s] / bare[s]:.2f}" for s in (False, True))
            cpu = "/".join(f"{cpus[name][s]:.0f}" for s in (False, True))
            print(f"| {name} | {speed[False]:.1f} | {speed[True]:.1f} | {ratio} | {cpu} |")
        cost = dataloader_cost(path, budget)
        for shuffle in (False, True):
            seconds = tokens_total / (bare[shuffle] * 1e6) + batches * cost
            rows.setdefault("ceiling", {})[shuffle] = tokens_total / seconds / 1e6
        ceiling, zero = rows.pop("ceiling"), rows["lodtensor.torch, 0 workers"]
        print(f"\nIn-process ceiling (the bare Loader + the DataLoader's own {cost * 1e6:.1f} µs an item): "
              f"{ceiling[False]:.1f} / {ceiling[True]:.1f} M tokens/s, {ceiling[False] / bare[False]:.2f}/"
              f"{ceiling[True] / bare[True]:.2f} of the bare Loader; lodtensor.torch with 0 workers reaches "
              f"{zero[False] / ceiling[False]:.2f}/{zero[True] / ceiling[True]:.2f} of it")
        floor = dataloader_floor(args.workers)
        per_batch = {name: cpus[name][False] * tokens_total / batches / 1e3 for name in cpus}
        print(f"\nCPU a batch, in order: " + ", ".join(f"{n} {us:.0f} µs" for n, us in per_batch.items() if n.startswith(("Loader", "lodtensor"))))
        print(f"DataLoader of {args.workers} workers over a dataset of ints (torch's floor): {floor * 1e6:.0f} µs CPU an item")
        print("\n| resume to the next batch | ms |\n| --- | ---: |")
        for name, seconds in resume_latency(path, args.workers, budget).items():
            print(f"| {name} | {seconds * 1e3:.1f} |")
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
