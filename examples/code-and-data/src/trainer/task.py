"""A tiny probe trained on premise/hypothesis word overlap: standard library only, so the
example runs anywhere. It reads its data and writes its model where the job says, and shows
what ``omnidist.runtime.context()`` reports about them."""

from __future__ import annotations

import argparse
import csv
import json
import os
from collections import Counter, defaultdict

from omnidist import runtime


def read_examples(folder: str) -> list[tuple[str, float]]:
    rows = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".tsv"):
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                for row in csv.DictReader(fh, delimiter="\t"):
                    premise, hypothesis = set(row["premise"].lower().split()), set(row["hypothesis"].lower().split())
                    rows.append((row["label"], len(premise & hypothesis) / max(len(hypothesis), 1)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", required=True)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--model-dir", required=True)
    args = parser.parse_args()

    ctx = runtime.context()
    print(f"{ctx.role} {ctx.index}: inputs {sorted(ctx.inputs)}, outputs {sorted(ctx.outputs)}")
    examples = read_examples(args.train)
    overlap: dict[str, float] = defaultdict(float)
    for _ in range(args.epochs):  # the mean overlap per label, refined once per epoch
        counts = Counter(label for label, _ in examples)
        for label in counts:
            overlap[label] = sum(o for seen, o in examples if seen == label) / counts[label]
    if ctx.role == "primary":
        os.makedirs(args.model_dir, exist_ok=True)
        with open(os.path.join(args.model_dir, "probe.json"), "w", encoding="utf-8") as fh:
            json.dump(dict(sorted(overlap.items())), fh, indent=2)
        print(f"trained on {len(examples)} examples for {args.epochs} epochs; model in {args.model_dir}")


if __name__ == "__main__":
    main()
