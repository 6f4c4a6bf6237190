"""The ``local`` backend: run a job's replicas as processes on this machine, with the
environment the cloud it emulates would give them (``omnidist run``).

Each replica is one process, except where the emulated platform starts several per node
itself (a processes-per-instance setting). Elsewhere, when a job asks for several
processes per node (``processes_per_node`` > 1), starting them is the job's business, as on
the clouds: the training command calls ``omnidist launch -- train.py`` (torchrun), which reads
``OMNIDIST_PROCESSES_PER_NODE`` and the emulated platform's variables. The emulation follows
what compile for the emulated platform decides (:mod:`omnidist.local.emulated`), and each
training replica gets its own GPUs (:mod:`omnidist.local.gpus`).
"""

from omnidist.local.backend import LocalBackend, LocalSettings

__all__ = ["LocalBackend", "LocalSettings"]
