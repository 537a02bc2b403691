"""The peers of bench_remote.py: MosaicML Streaming and LitData reading the same documents from
the same S3 server, and a TCP proxy in front of the server that counts the bytes it sends
(every contender reads through it, so bytes fetched are measured the same way for all)."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import numpy as np
from s3_server import pipe  # python/tests, on the path bench_remote.py sets


class CountingProxy:
    """127.0.0.1:`port` -> `upstream` (host, port); `received` counts the bytes the server
    sent to clients (responses: bodies and headers)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.received = 0
        self.lock = threading.Lock()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            threading.Thread(target=pipe, args=(client, server), daemon=True).start()
            threading.Thread(target=pipe, args=(server, client, self._count), daemon=True).start()

    def _count(self, n: int) -> None:
        with self.lock:
            self.received += n

    def take(self) -> int:
        """Bytes counted since the last take."""
        with self.lock:
            n, self.received = self.received, 0
        return n

    def close(self) -> None:
        self.listener.close()


def per_document(local: Path):
    """Each document of the lodtensor dataset at `local` as {"tokens": its values}: float32
    [n, 64] features or int32 [n] token ids."""
    import lodtensor as lt

    for batch in lt.open(local).loader(batch_size=1):
        yield {"tokens": np.array(batch.values("tokens"))}


def write_mds(local: Path, out: Path, shard_mib: int) -> None:
    from streaming import MDSWriter

    docs = per_document(local)
    first = next(docs)
    columns = {"tokens": f"ndarray:{first['tokens'].dtype.name}"}
    with MDSWriter(out=str(out), columns=columns, size_limit=shard_mib << 20) as w:
        w.write(first)
        for doc in docs:
            w.write(doc)


class LitDoc:
    """LitData's `fn` (picklable): document `i` of the dataset at `path`."""

    def __init__(self, path: str):
        self.path = path
        self.docs = None

    def __call__(self, i):
        if self.docs is None:
            self.docs = list(per_document(Path(self.path)))
        return self.docs[i]


def write_litdata(local: Path, out: Path, shard_mib: int) -> None:
    import litdata
    import lodtensor as lt

    n = lt.open(local).num_rows
    litdata.optimize(
        fn=LitDoc(str(local)), inputs=list(range(n)), output_dir=str(out),
        chunk_bytes=f"{shard_mib}MB", num_workers=1,
    )


def upload_tree(client, root: Path, bucket: str, prefix: str) -> str:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            key = f"{prefix}/{path.relative_to(root).as_posix()}"
            client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
    return f"s3://{bucket}/{prefix}"


def concat(items: list[dict]):
    """A peer's batch: its documents' tokens joined (`torch.cat`), and how many documents."""
    import torch

    return torch.cat([torch.as_tensor(np.asarray(i["tokens"])) for i in items]), len(items)


def count_joined(batch) -> tuple[int, int]:
    """Documents and tokens of a batch `concat` made, every value read once (`sum`)."""
    values, documents = batch
    values.sum()
    return documents, int(values.shape[0])


def timed_epochs(loader, epochs: int, proxy, count=count_joined) -> list[tuple]:
    """Per epoch: seconds to the first batch, seconds, documents, tokens (`count(batch)`
    gives a batch's, reading its values), and `proxy.take()` after the epoch (what the
    proxy counted during it)."""
    out = []
    for _ in range(epochs):
        proxy.take()
        start = time.perf_counter()
        first, documents, tokens = None, 0, 0
        for batch in loader:
            first = first or time.perf_counter() - start
            d, t = count(batch)
            documents, tokens = documents + d, tokens + t
        out.append((first or 0.0, time.perf_counter() - start, documents, tokens, proxy.take()))
    return out


def mosaic_epochs(
    remote: str, cache: Path, limit: int | None, batch: int, proxy, epochs: int, shuffle: bool = False, workers: int = 2
):
    import streaming
    from streaming.base.util import clean_stale_shared_memory
    from torch.utils.data import DataLoader

    clean_stale_shared_memory()
    shutil.rmtree(cache, ignore_errors=True)
    os.environ["S3_ENDPOINT_URL"] = proxy.endpoint
    ds = streaming.StreamingDataset(
        remote=remote, local=str(cache), cache_limit=limit, batch_size=batch, shuffle=shuffle, shuffle_seed=1
    )
    dl = DataLoader(ds, batch_size=batch, num_workers=workers, collate_fn=concat)
    return timed_epochs(dl, epochs, proxy)


def litdata_epochs(
    remote: str, cache: Path, limit: int | None, batch: int, proxy, epochs: int, shuffle: bool = False, workers: int = 2
):
    import litdata
    from litdata.streaming import downloader

    # LitData's chunk downloads go through obstore, whose client LitData builds without
    # `allow_http` (an http:// endpoint fails with "builder error"): the one option added.
    downloader._OBSTORE_CLIENT_OPTIONS["allow_http"] = True
    shutil.rmtree(cache, ignore_errors=True)
    os.environ["AWS_ENDPOINT_URL"] = proxy.endpoint
    kwargs = {"max_cache_size": limit} if limit else {}
    ds = litdata.StreamingDataset(
        remote, cache_dir=str(cache), shuffle=shuffle, seed=1,
        storage_options={"endpoint_url": proxy.endpoint}, **kwargs,
    )
    dl = litdata.StreamingDataLoader(ds, batch_size=batch, num_workers=workers, collate_fn=concat)
    return timed_epochs(dl, epochs, proxy)
