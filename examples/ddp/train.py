"""A small PyTorch DDP training on synthetic data (CPU, gloo), portable across clouds.

The same file runs on Vertex AI, AI Platform, Azure ML, under torchrun, and locally with
`omnidist run job.yaml`: `omnidist.runtime.init_torch()` reads whatever the platform set.
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

    ctx = runtime.init_torch()  # gloo on CPU, nccl when CUDA is available
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"{ctx.platform}: {ctx.role} {ctx.index} is rank {rank} of {world} "
          f"(node {ctx.node_rank}/{ctx.num_nodes}, master {ctx.master_addr}:{ctx.master_port})", flush=True)

    # Every rank draws its own shard of y = X·w + noise from the same true w.
    torch.manual_seed(0)
    true_w = torch.randn(16, 1)
    data = torch.Generator().manual_seed(1000 + rank)
    model = DistributedDataParallel(torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)

    losses = []
    for step in range(args.steps):
        x = torch.randn(args.batch_size, 16, generator=data)
        y = x @ true_w + 0.01 * torch.randn(args.batch_size, 1, generator=data)
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
    del model, optimizer, loss
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()
    if not in_sync or losses[-1] >= losses[0]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
