"""The official ``google.cloud.aiplatform_v1`` package, loaded with only what the client uses.

``google/cloud/aiplatform_v1/__init__.py`` imports every service and message type of Vertex AI
(459 of its own modules, 1,060 in all) before any of them can be used, and its ``types``
subpackage does the same for messages: a second before ``omnidist status`` could ask for one
job. The
client needs ``JobServiceClient`` and ``CustomJob``. :data:`aiplatform_v1` is the real package
module with those two loaded from their own modules (and what they import), while the two
``__init__`` files wait: the first time anything else in the package is asked for by name,
its ``__init__`` runs then, into the same module, so code that wants all of it gets all of it
(``from google.cloud import aiplatform_v1`` elsewhere in the process sees one package).

Usage (inside a function, so that importing the backend stays free)::

    from omnidist_vertex.sdk import aiplatform_v1
    client = aiplatform_v1.JobServiceClient(...)
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any

PACKAGE = "google.cloud.aiplatform_v1"
DEFERRED = (PACKAGE, f"{PACKAGE}.types")
"""Packages whose ``__init__`` imports everything; they run it only when a name needs it."""

USED = {"JobServiceClient": f"{PACKAGE}.services.job_service.client", "CustomJob": f"{PACKAGE}.types.custom_job"}
"""The names the client uses -> the module that defines each."""

_lock = threading.RLock()


def _complete(module: ModuleType) -> None:
    """Run the package's own ``__init__`` into ``module`` (once)."""
    with _lock:
        if module.__dict__.pop("__getattr__", None) is not None:
            module.__spec__.loader.exec_module(module)


def _deferred(name: str) -> ModuleType:
    """The package ``name`` as a module whose ``__init__`` has not run: a submodule asked for
    by name is imported alone; any other name runs the ``__init__`` first."""
    spec = importlib.util.find_spec(name)
    module = importlib.util.module_from_spec(spec)

    def __getattr__(attr: str) -> Any:  # PEP 562
        if not attr.startswith("__"):
            try:  # `from package import submodule`: just that submodule
                return importlib.import_module(f"{name}.{attr}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{name}.{attr}":
                    raise
        _complete(module)
        try:
            return module.__dict__[attr]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}") from None

    module.__getattr__ = __getattr__  # type: ignore[method-assign]  # PEP 562 on a module object
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, module)
    return module


def _load() -> ModuleType:
    with _lock:
        package = sys.modules.get(PACKAGE)
        if package is None:
            importlib.import_module("google.cloud")
            package = _deferred(PACKAGE)
            _deferred(f"{PACKAGE}.types")
        for attr, where in USED.items():
            if attr not in package.__dict__:  # what the package's own __init__ binds, from the same module
                setattr(package, attr, getattr(importlib.import_module(where), attr))
        return package


def __getattr__(name: str) -> Any:  # PEP 562: `from omnidist_vertex.sdk import aiplatform_v1`
    if name == "aiplatform_v1":
        return _load()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
