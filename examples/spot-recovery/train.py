"""Data-parallel training that saves portable checkpoints and resumes from the latest one.

`omnidist.runtime.checkpoint(step)` gives a folder that becomes the latest complete checkpoint
when the block ends; `latest_checkpoint()` is where a restarted (or moved) job resumes. A
preempted replica gets SIGTERM first: the handler below asks the loop to save at once, so the
restart loses at most the step under way.
"""

import argparse
import gc
import signal
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # numpy is optional here

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from omnidist import runtime  # noqa: E402

stopping = []
"""Set by SIGTERM: the platform is taking this machine back."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--every", type=int, default=10, help="save a checkpoint every N steps")
    parser.add_argument("--step-seconds", type=float, default=0.1, help="pretend each step takes this long")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))

    ctx = runtime.init_torch()
    device = runtime.torch_device()
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    true_w = torch.randn(16, 1)
    layer = torch.nn.Linear(16, 1).to(device)
    model = DistributedDataParallel(layer, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    last = runtime.latest_checkpoint()
    start = 0
    if last is not None:  # every rank reads the same files: the replicas start in sync
        state = torch.load(last.path / "state.pt", map_location=device)
        layer.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = last.step + 1
    if rank == 0:
        print(f"{ctx.platform}: rank {rank} of {world}, starting at step {start}"
              + (f" (resumed from {last.path.name})" if last else " (fresh)"), flush=True)

    data = torch.Generator().manual_seed(1000 + rank)
    for step in range(start, args.steps):
        data.manual_seed(1000 + rank * 100_000 + step)  # the same batch for a step, resumed or not
        x = torch.randn(64, 16, generator=data)
        y = x @ true_w + 0.01 * torch.randn(64, 1, generator=data)
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch.distributed.barrier()
        asked = torch.tensor([1.0 if stopping else 0.0])
        dist.all_reduce(asked)  # one replica's notice stops them all at the same step
        if rank == 0 and (step % args.every == 0 or asked.item() or step == args.steps - 1):
            with runtime.checkpoint(step) as folder:
                torch.save({"model": layer.state_dict(), "optimizer": optimizer.state_dict()}, folder / "state.pt")
            print(f"step {step:3d}  loss {loss.item():.4f}  saved", flush=True)
        if asked.item():
            if rank == 0:
                print(f"preempted at step {step}: saved, exiting", flush=True)
            raise SystemExit(143)  # what a program stopped by SIGTERM exits with everywhere
        time.sleep(args.step_seconds)

    if rank == 0:
        print(f"done: {args.steps} steps, final loss {loss.item():.4f}", flush=True)
    del model, layer, optimizer, loss
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
