"""A torch training loop over a lodtensor file or sharded directory with the shipped
``lodtensor.torch.BatchDataset``: DataLoader workers (and distributed ranks, when
``torch.distributed`` is initialised) each read their share of every epoch, and
``torchdata``'s ``StatefulDataLoader`` checkpoints mid-epoch.

    python examples/torch_iterable_dataset.py DATA [WORKERS] [EPOCHS] [CHECKPOINT]

Prints one JSON line per batch: epoch, samples, tokens. With CHECKPOINT, saves the loader's
state there after every batch and, when the file exists at start, resumes from it.
"""

from __future__ import annotations

import json
import os
import sys

import torch
from torchdata.stateful_dataloader import StatefulDataLoader

from lodtensor.torch import BatchDataset


def main(source: str, workers: int = 2, epochs: int = 2, checkpoint: str | None = None) -> None:
    dataset = BatchDataset(source, collate="packed", token_budget=256, shuffle=True, seed=1)
    loader = StatefulDataLoader(dataset, batch_size=None, num_workers=workers)
    start = 0
    if checkpoint and os.path.exists(checkpoint):
        saved = torch.load(checkpoint, weights_only=False)
        loader.load_state_dict(saved["loader"])
        start = saved["epoch"]
    for epoch in range(start, epochs):
        dataset.set_epoch(epoch)  # every worker, persistent ones too
        for item in loader:
            tokens = item["tokens"]  # values, cu_seqlens (int32), position_ids, max_seqlen
            line = {"epoch": epoch, "samples": item["samples"].tolist(), "tokens": len(tokens["values"])}
            print(json.dumps(line), flush=True)
            if checkpoint:
                torch.save({"epoch": epoch, "loader": loader.state_dict()}, checkpoint)


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:4]), *sys.argv[4:5])
