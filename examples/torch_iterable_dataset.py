"""A torch ``IterableDataset`` over a lodtensor file: each DataLoader worker (and each
distributed rank) reads its own shard of every epoch's batches, so no sample is seen twice.

    python examples/torch_iterable_dataset.py DATA.arrow [WORKERS] [EPOCHS]

Prints one JSON line per batch: epoch, the worker's shard, the samples, the tokens. Batches
come from the Rust loader (token budget, seeded shuffle); the DataLoader runs with
``batch_size=None`` because the loader batches already.
"""

from __future__ import annotations

import json
import sys

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

import lodtensor as lt


class LodTensorBatches(IterableDataset):
    """The batches of ``lt.open(path).loader(**options)``, sharded over workers and ranks."""

    def __init__(self, path: str, column: str = "tokens", **options):
        self.path, self.column, self.options, self.epoch = path, column, options, 0

    def set_epoch(self, epoch: int) -> None:
        """Call before each epoch, as with ``DistributedSampler``: each epoch shuffles anew."""
        self.epoch = epoch

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        rank, ranks = 0, 1
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            rank, ranks = torch.distributed.get_rank(), torch.distributed.get_world_size()
        # Opened in the worker: a mapping is per process, and opening costs no reads.
        loader = lt.open(self.path).loader(
            **self.options, rank=rank * workers + worker, world_size=ranks * workers
        )
        loader.set_epoch(self.epoch)
        for batch in loader:
            yield {
                "samples": torch.from_numpy(batch.samples.copy()),
                "values": torch.tensor(batch.values(self.column)),
                "offsets": torch.from_numpy(batch.offsets(self.column, batch.num_levels(self.column) - 1)),
                "shard": rank * workers + worker,
            }


def main(path: str, workers: int = 2, epochs: int = 2) -> None:
    dataset = LodTensorBatches(path, token_budget=256, shuffle=True, seed=1)
    loader = DataLoader(dataset, batch_size=None, num_workers=workers)
    for epoch in range(epochs):
        dataset.set_epoch(epoch)
        for batch in loader:
            line = {
                "epoch": epoch,
                "shard": int(batch["shard"]),
                "samples": batch["samples"].tolist(),
                "tokens": int(batch["offsets"][-1]),
            }
            print(json.dumps(line))


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
