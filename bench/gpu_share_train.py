"""The GPU-sharing benchmark's training (bench/gpu_share.py): DDP steps of a 1024-4096-1024 MLP on
whatever device ``omnidist.runtime`` picks (nccl on a GPU of its own, gloo on a shared GPU, gloo on
the CPU). Rank 0 prints one ``RESULT {json}`` line: the backend, the device, the seconds the timed
steps took, and whether every rank ended with the same weights."""

import argparse
import json
import os
import sys
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from omnidist import runtime  # noqa: E402


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args()
    runtime.init_torch()
    device = runtime.torch_device()
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    data = torch.Generator().manual_seed(rank)
    batches = [(torch.randn(args.batch_size, 1024, generator=data).to(device),
                torch.randn(args.batch_size, 1024, generator=data).to(device)) for _ in range(4)]

    def step(i: int) -> None:
        x, y = batches[i % len(batches)]
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        optimizer.zero_grad()
        loss.backward()  # DDP all-reduces the gradients here
        optimizer.step()

    for i in range(args.warmup):
        step(i)
    sync(device)
    dist.barrier()
    start = time.perf_counter()
    for i in range(args.steps):
        step(i)
    sync(device)
    dist.barrier()
    seconds = time.perf_counter() - start
    weights = torch.cat([p.detach().flatten() for p in ddp.parameters()]).cpu()
    gathered = [torch.empty_like(weights) for _ in range(world)] if dist.get_backend() == "gloo" else None
    if gathered is not None:
        dist.all_gather(gathered, weights)
    else:  # nccl gathers CUDA tensors
        on_device = weights.to(device)
        gathered = [torch.empty_like(on_device) for _ in range(world)]
        dist.all_gather(gathered, on_device)
        gathered = [g.cpu() for g in gathered]
    in_sync = all(torch.equal(weights, other) for other in gathered)
    if rank == 0:
        print("RESULT " + json.dumps({"backend": dist.get_backend(), "device": str(device), "world": world,
                                      "steps": args.steps, "batch_size": args.batch_size, "seconds": seconds,
                                      "in_sync": in_sync}), flush=True)
    dist.barrier()
    sys.stdout.flush()
    os._exit(0 if in_sync else 1)  # gloo's threads can abort a normal teardown (a known torch issue)


if __name__ == "__main__":
    main()
