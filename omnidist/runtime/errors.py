"""The root of omnidist's exception tree and the runtime's own error, standard library only.

They live here, not in :mod:`omnidist.errors`, because the runtime runs inside training
containers and must not import attrs; :mod:`omnidist.errors` re-exports both, so the tree
drawn there stays the one tree every caller sees.
"""

from __future__ import annotations


class OmnidistError(Exception):
    """Base of every error omnidist raises."""

    exit_code: int = 1


class RuntimeEnvError(OmnidistError, ValueError):
    """A platform environment variable inside the training container is malformed or missing.

    Attributes:
        variable: the environment variable at fault (``CLUSTER_SPEC``, ``OMPI_COMM_WORLD_RANK``…).
    """

    exit_code = 2

    def __init__(self, variable: str, message: str):
        self.variable = variable
        self.message = message
        super().__init__(f"environment variable {variable}: {message}")

    def __reduce__(self):  # keep pickling (multiprocessing, pytest-xdist) working with two args
        return type(self), (self.variable, self.message)
