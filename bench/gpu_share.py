"""Local replicas sharing a GPU: ``omnidist run`` of a 4-replica DDP job on one GPU (gloo over CUDA
tensors), against the same 4 replicas on the CPU (``omnidist run --cpu``) and against 1 replica
with nccl on that GPU. Each run trains 30 DDP steps of a 1024-4096-1024 MLP, batch 256 per
replica (bench/gpu_share_train.py); the timed steps are measured inside rank 0, after warm-up
steps, so process start-up is not counted (the whole run's wall time is printed beside it).

    python bench/gpu_share.py            # needs an NVIDIA GPU and a CUDA build of torch
    python bench/gpu_share.py --runs 5   # the median of 5 runs of each (default 3)

Without a GPU it says so and measures nothing. ``make gpu-check`` runs it after the GPU tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

BENCH = Path(__file__).resolve().parent
TRAIN = BENCH / "gpu_share_train.py"

CASES = (
    ("4 replicas sharing one GPU (gloo on cuda:0)", 4, False),
    ("the same 4 replicas on the CPU (--cpu, gloo)", 4, True),
    ("1 replica on the GPU (nccl on cuda:0)", 1, False),
)
"""(what runs, replicas, --cpu), in the order the table lists them."""


def cuda_devices() -> int:
    """CUDA devices this interpreter's torch sees (0 without an NVIDIA GPU or a CUDA torch)."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def job_file(folder: Path, replicas: int, steps: int) -> Path:
    """The benchmark job: ``replicas`` local replicas of the training, one GPU made visible."""
    workers = f"workers: {{replicas: {replicas - 1}}}\n" if replicas > 1 else ""
    path = folder / f"share-{replicas}.yaml"
    path.write_text(f"name: gpu-share-{replicas}\nframework: pytorch\ncommand: [python, {TRAIN}]\n"
                    f"args: [--steps, '{steps}']\nenv: {{OMP_NUM_THREADS: '4'}}\nprimary: {{}}\n{workers}"
                    f"backends: {{local: {{emulate: vertex, runs_dir: {folder / 'runs'}}}}}\n")
    return path


def run_once(path: Path, cpu: bool, env: dict[str, str]) -> tuple[dict[str, Any], float]:
    """One ``omnidist run``: rank 0's result and the run's wall time."""
    argv = [sys.executable, "-m", "omnidist.cli", "run", str(path), *(["--cpu"] if cpu else [])]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
    wall = time.perf_counter() - start
    lines = [line.split("RESULT ", 1)[1] for line in done.stdout.splitlines() if "RESULT " in line]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return json.loads(lines[-1]), wall


def measure(runs: int, steps: int) -> list[dict[str, Any]]:
    """Each case ``runs`` times, round robin (so a drift in the machine hits every case alike)."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OMNIDIST_")},
           "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0],
           "OMNIDIST_STATE_DIR": tempfile.mkdtemp(prefix="omnidist-gpu-bench-")}
    folder = Path(tempfile.mkdtemp(prefix="omnidist-gpu-share-"))
    found: dict[str, list[tuple[dict[str, Any], float]]] = {label: [] for label, _, _ in CASES}
    for _ in range(runs):
        for label, replicas, cpu in CASES:
            found[label].append(run_once(job_file(folder, replicas, steps), cpu, env))
    rows = []
    for label, replicas, _ in CASES:
        results = found[label]
        seconds = statistics.median(r["seconds"] for r, _ in results)
        first = results[0][0]
        rows.append({"case": label, "replicas": replicas, "backend": first["backend"], "device": first["device"],
                     "seconds": seconds, "wall": statistics.median(w for _, w in results),
                     "samples_per_s": replicas * first["batch_size"] * first["steps"] / seconds,
                     "in_sync": all(r["in_sync"] for r, _ in results)})
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The cases side by side, each with its ratio to the shared-GPU run."""
    shared = rows[0]
    lines = ["| run | backend on device | timed steps (s) | whole run (s) | samples/s | time / the shared GPU's |",
             "|---|---|---:|---:|---:|---:|"]
    for row in rows:
        ratio = row["seconds"] / shared["seconds"] if row is not shared else 1.0
        lines.append(f"| {row['case']} | {row['backend']} on {row['device']} | {row['seconds']:.2f} | "
                     f"{row['wall']:.1f} | {row['samples_per_s']:.0f} | {ratio:.2f}x |")
    cpu, nccl = rows[1], rows[2]
    lines.append("")
    lines.append(f"4 replicas sharing the GPU / the same 4 on the CPU (time): {shared['seconds'] / cpu['seconds']:.2f}")
    lines.append(f"4 replicas sharing the GPU / 1 replica with nccl (time for 4x the samples): "
                 f"{shared['seconds'] / nccl['seconds']:.2f}; throughput "
                 f"{shared['samples_per_s'] / nccl['samples_per_s']:.2f}x the single replica's")
    lines.append(f"weights in sync in every run: {all(r['in_sync'] for r in rows)}")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each case; the median is reported")
    parser.add_argument("--steps", type=int, default=30, help="timed DDP steps per run")
    args = parser.parse_args(argv)
    if cuda_devices() == 0:
        print("no GPU: this machine's torch sees no CUDA device; nothing measured (run it where "
              "`python -c 'import torch; print(torch.cuda.is_available())'` prints True)")
        return 0
    print(table(measure(args.runs, args.steps)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
