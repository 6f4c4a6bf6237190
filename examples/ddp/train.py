"""A small PyTorch DDP training on synthetic data, portable across clouds and devices.

The same file runs on Vertex AI, AI Platform, Azure ML, under torchrun, and locally with
`omnidist run job.yaml`: `omnidist.runtime.init_torch()` reads whatever the platform set and
picks nccl on a GPU of this process's own, else gloo (on a GPU it shares, or the CPU); `runtime.torch_device()` is
where the model and the data go.
"""

import argparse
import gc
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # numpy is optional here

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from omnidist import runtime  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    ctx = runtime.init_torch()  # nccl on this process's own GPU, else gloo on a shared GPU or the CPU
    device = runtime.torch_device()
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"{ctx.platform}: {ctx.role} {ctx.index} is rank {rank} of {world} "
          f"(node {ctx.node_rank}/{ctx.num_nodes}, master {ctx.master_addr}:{ctx.master_port}, "
          f"{dist.get_backend()} on {device})", flush=True)

    # Every rank draws its own shard of y = X·w + noise from the same true w (drawn on the CPU,
    # so every device sees the same numbers).
    torch.manual_seed(0)
    true_w = torch.randn(16, 1)
    data = torch.Generator().manual_seed(1000 + rank)
    layer = torch.nn.Linear(16, 1).to(device)
    model = DistributedDataParallel(layer, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)

    losses = []
    for step in range(args.steps):
        x = torch.randn(args.batch_size, 16, generator=data)
        y = x @ true_w + 0.01 * torch.randn(args.batch_size, 1, generator=data)
        x, y = x.to(device), y.to(device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()  # DDP all-reduces the gradients across every replica here
        optimizer.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(mean.item() / world)
        if rank == 0 and step % 20 == 0:
            print(f"step {step:3d}  loss {losses[-1]:.4f}", flush=True)

    # The replicas must end with identical weights: DDP kept them in sync.
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.empty_like(weights) for _ in range(world)]
    dist.all_gather(gathered, weights)
    in_sync = all(torch.equal(weights, other) for other in gathered)
    if rank == 0:
        print(f"summary: world size {world}, loss {losses[0]:.4f} -> {losses[-1]:.4f}, "
              f"replicas in sync: {in_sync}", flush=True)
    # Release DDP's hooks and wait for every rank before tearing the group down: gloo threads
    # still holding work at interpreter exit can abort the process (a known torch issue).
    del model, layer, optimizer, loss
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()
    if not in_sync or losses[-1] >= losses[0]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
