"""The importer fuzz: every cloud backend's native importer, fed mutated real job files (the corpus
beside the checkout when it is there, and each backend's compiled requests), each input imported
and migrated to another backend in process, as ``omnidist import`` / ``migrate`` do.

    .venv/bin/python bench/fuzz.py                 # 10,000 inputs per backend (50,000 over five), the counts as a table
    .venv/bin/python bench/fuzz.py --inputs 200    # a smaller run
    .venv/bin/python bench/run.py --only fuzz      # the same, as a section of the benchmarks

A defect is any input that ends in something other than an import or a clean error (an exit code
and a message); the goal is none. The campaign is seeded: the same arguments give the same inputs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"


def campaigns(inputs: int, seed: int = 1) -> dict[str, Any]:
    """Backend -> its campaign's :class:`omnidist.testing.fuzz.Counts` (and how many seed files it had)."""
    from omnidist.backend import registry
    from omnidist.testing import fuzz
    from omnidist.testing.harness import cloud_backends

    found = {}
    for backend in sorted(cloud_backends()):
        corpus, compiled = fuzz.seeds(CORPUS, backend)
        seeds = corpus + compiled
        targets = [t for t in registry.installed() if t != backend]
        counts = fuzz.campaign(backend, seeds, inputs, seed=seed, targets=targets)
        found[backend] = (counts, len(corpus), len(seeds))
    return found


def rows(inputs: int) -> list[Any]:
    """The campaigns as rows of bench/run.py's table (defects against the goal of none)."""
    from run import Row

    table = []
    for backend, (counts, corpus, seeds) in campaigns(inputs).items():
        table.append(Row(f"importer fuzz {backend}: {seeds} seed files ({corpus} from the corpus), mutated, "
                         "imported and migrated", f"{len(counts.defects)} defects",
                         f"{counts.inputs} inputs: {counts.clean} clean errors, {counts.imported} imported, "
                         f"{counts.seconds:.0f} s", len(counts.defects) / max(counts.inputs, 1), "0 defects",
                         not counts.defects))
    return table


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=10000, help="mutated inputs per backend (default 10000)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    print("| backend | seed files (corpus) | inputs | clean errors | imported | defects | seconds |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    defects = []
    for backend, (counts, corpus, seeds) in campaigns(args.inputs, args.seed).items():
        print(f"| {backend} | {seeds} ({corpus}) | {counts.inputs} | {counts.clean} | {counts.imported} | "
              f"{len(counts.defects)} | {counts.seconds:.0f} |", flush=True)
        defects += counts.defects
    for defect in defects[:5]:
        print(f"\n{defect.detail}\ninput:\n{defect.source}", file=sys.stderr)
    return 1 if defects else 0


if __name__ == "__main__":
    sys.exit(main())
