"""The ranks of test_index.py's simulated cluster, each a process of its own: a module
that imports nothing but lodtensor (torch only in the rank that uses it), so that a
forkserver that has imported lodtensor once starts a rank in milliseconds rather than
re-importing the test module (pytest, moto, boto3) in every process."""

from __future__ import annotations

import time

import lodtensor as lt


def rank(url, options, cache_dir, mode, rank, world, started, queue, epoch=True):
    """Opens the dataset, builds the loader and reads the epoch (only the first batch
    without `epoch`); puts (rank, samples read, seconds from `started` to the first
    batch, `cache_stats()`) on `queue`."""
    ds = lt.open(url, storage_options=options, cache_dir=cache_dir)
    loader = ds.loader(**mode, rank=rank, world_size=world)
    first = None
    samples = 0
    for batch in loader:
        first = first or time.time() - started
        samples += len(batch.samples)
        if not epoch:
            break
    queue.put((rank, samples, first, ds.cache_stats()))


def rank_with_workers(url, options, cache_dir, mode, rank, world, started, queue, workers=2):
    """A rank whose batches come from a torch DataLoader of `workers` workers (each
    worker a rank of the loader, as `lodtensor.torch.BatchDataset` splits the epoch),
    forked from the rank as Linux's default start method does (a process the forkserver
    started would otherwise start the workers by a forkserver of its own: each a fresh
    interpreter importing torch, seconds of CPU a worker)."""
    from torch.utils.data import DataLoader

    from lodtensor.torch import BatchDataset

    ds = BatchDataset(url, storage_options=options, cache_dir=cache_dir, rank=rank, world_size=world, **mode)
    first = None
    samples = 0
    for item in DataLoader(ds, batch_size=None, num_workers=workers, multiprocessing_context="fork"):
        first = first or time.time() - started
        samples += len(item["samples"])
    queue.put((rank, samples, first, None))
