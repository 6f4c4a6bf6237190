"""The ``omnidist`` console script (and ``python -m omnidist.cli``): the CLI of :mod:`omnidist.cli`,
started with the cyclic garbage collector set for a command-line process.

A CLI start allocates hundreds of thousands of objects that live until the process exits —
modules, classes, functions, the job model, a backend's tables — and almost no garbage. With the
interpreter's default thresholds the collector still walks them dozens of times while they load,
and once more, all of them, at exit. Measured on ``omnidist compile`` (bench/run.py, "cold start"):
about a sixth of the command's CPU time. So, before anything is imported:

- the youngest generation is collected after :data:`GEN0_THRESHOLD` new container objects instead
  of 700 (the older generations as before, relative to it): start-up runs no collection, and a
  command that runs for hours (``run``, ``watch``, ``submit --wait``) still collects, its cyclic
  garbage bounded by that many objects between collections;
- at exit, everything still alive is frozen (:func:`gc.freeze`), so the interpreter's last
  collection does not walk it: those objects go with the process. Objects only in reference
  cycles are not finalized then, which Python never promises at exit anyway.

The library (``import omnidist`` in a notebook or a program) leaves the collector as it is.
"""

from __future__ import annotations

import atexit
import gc

GEN0_THRESHOLD = 100_000
"""New container objects between collections of the youngest generation, in the CLI process."""


def main() -> None:
    """Run the ``omnidist`` command (:data:`omnidist.cli.main`) with the CLI's collector settings."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, older, oldest)
    atexit.register(gc.freeze)
    from omnidist.cli import main as command

    command()


if __name__ == "__main__":  # pragma: no cover - the console script calls main()
    main()
