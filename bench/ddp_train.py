"""A tiny gloo DDP training for the local-run benchmark: the same file runs under
``omnidist run ddp4.yaml`` and ``torchrun --nproc_per_node 4`` (``runtime.init_torch`` reads
whichever environment it is in)."""

import argparse
import os
import sys
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from omnidist import runtime  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    runtime.init_torch(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    true_w = torch.randn(16, 1)
    data = torch.Generator().manual_seed(rank)
    model = DistributedDataParallel(torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(args.steps):
        x = torch.randn(32, 16, generator=data)
        loss = torch.nn.functional.mse_loss(model(x), x @ true_w)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if rank == 0:
        print(f"world {world}: final loss {loss.item():.4f}", flush=True)
    del model, optimizer
    dist.barrier()
    dist.destroy_process_group()
    # gloo's threads can abort the interpreter's teardown ("terminate called without an active
    # exception", exit 134: a known torch issue); the work is done, so leave without teardown.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
