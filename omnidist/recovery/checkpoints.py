"""Before a move, the latest complete checkpoint is copied to the next cloud's storage (SPEC §15).

Where an attempt's checkpoints are: the job's output named ``checkpoints``, as the attempt's
profile's ``data_map`` rewrites it (the same rule the compilers follow, so the new job's
``checkpoints`` output already points where the copy goes). When the two locations differ, the
newest ``step-N`` folder holding the completion marker (the layout of
:mod:`omnidist.runtime.checkpoints`) is copied from one to the other, object by object through
a local temporary file, the marker last: a copy cut off half-way leaves a folder without the
marker, which :func:`omnidist.runtime.latest_checkpoint` ignores, and the next watcher copies it
again.

Each store is a backend's: :class:`CheckpointStore` is three calls on object URIs a backend
gives for its profile's settings (``checkpoint_store(settings)``; its vendor kit makes them with
the cloud's storage SDK), and it says which URI schemes it reads. A location no store of its
backend reads (a local path, a volume, a scheme without one) is not copied: the watcher says so
and the new attempt starts from what its own location holds.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Sequence
from typing import Any, Optional, TypeVar

import attrs

from omnidist.backend.settings import DEFAULT_POLICY, RetryPolicy
from omnidist.compiler.code_data import rewrite
from omnidist.errors import BackendError
from omnidist.model.data import scheme
from omnidist.runtime.checkpoints import MARKER, OUTPUT, PREFIX
from omnidist.submission import retry

_STEP = re.compile(rf"{PREFIX}(\d+)")
T = TypeVar("T")


@attrs.frozen(kw_only=True)
class CheckpointStore:
    """An object store as three calls on object URIs (each SDK's errors left to ``translate``).

    Attributes:
        schemes: the URI schemes it reads (``model.data.scheme`` names, as ``"s3"``).
        listing: the URIs of every object whose URI begins with a prefix URI.
        download: writes the object at a URI to a local file path.
        upload: puts a local file (its path) at a URI, replacing what is there.
        translate: the SDK's errors as omnidist's (``None`` for an exception that is not one).
        retry: how a transient error is retried (the profile's settings' policy, by :func:`store_for`).
    """

    schemes: tuple[str, ...]
    listing: Callable[[str], Sequence[str]]
    download: Callable[[str, str], None]
    upload: Callable[[str, str], None]
    translate: Optional[Callable[[BaseException], Optional[BackendError]]] = None
    retry: RetryPolicy = DEFAULT_POLICY

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()``, retried while it fails transiently, with an SDK error raised as omnidist's
        naming ``what`` was being done."""
        return retry.call(lambda: self._once(what, fn), self.retry)

    def _once(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except BackendError:
            raise
        except Exception as exc:
            found = self.translate(exc) if self.translate is not None else None
            if found is None:
                raise
            try:
                said = type(found)(f"{what}: {found.detail}", backend=found.backend, status=found.status,
                                   retry_after=found.retry_after)
            except TypeError:  # an error class with arguments of its own: keep it as the SDK's reading
                said = found
            raise said from exc


def location(job: Any, settings: Any) -> Optional[str]:
    """The job's ``checkpoints`` output under ``settings``' ``data_map``; ``None`` when it declares none."""
    output = job.outputs.get(OUTPUT)
    if output is None or output.default or not output.uri:
        return None
    return rewrite(output.uri, getattr(settings, "data_map", None) or {}) or output.uri


def store_for(driver: Any, settings: Any, uri: str) -> Optional[CheckpointStore]:
    """The store ``driver`` gives for ``settings`` when it reads ``uri``'s scheme, else ``None``."""
    hook = getattr(driver, "checkpoint_store", None)
    store = hook(settings) if hook is not None else None
    if store is None or scheme(uri) not in store.schemes:
        return None
    policy = getattr(settings, "retry_policy", None)
    return attrs.evolve(store, retry=policy()) if callable(policy) else store


def latest_complete(store: CheckpointStore, root: str) -> Optional[tuple[int, list[str]]]:
    """The newest complete save under ``root``: its step and the names of its objects (relative
    to its ``step-N/`` folder), or ``None`` when there is none."""
    root = root.rstrip("/") + "/"
    names: dict[int, list[str]] = {}
    for uri in store.call(f"listing {root}", lambda: list(store.listing(root))):
        top, _, rest = uri[len(root):].partition("/")
        found = _STEP.fullmatch(top)
        if found is not None and rest:  # a hidden temporary save matches no step-N
            names.setdefault(int(found[1]), []).append(rest)
    complete = [step for step, files in names.items() if MARKER in files]
    if not complete:
        return None
    step = max(complete)
    return step, sorted(names[step])


def copy_latest(source: CheckpointStore, source_uri: str, target: CheckpointStore, target_uri: str) -> Optional[int]:
    """Copy the newest complete save under ``source_uri`` to ``target_uri`` (the marker last),
    unless a complete copy of it is there already. Returns its step; ``None`` when there is none.

    Raises:
        BackendError: a store call failed (nothing is marked complete that was not fully copied).
    """
    found = latest_complete(source, source_uri)
    if found is None:
        return None
    step, names = found
    folder = f"{PREFIX}{step}/"
    src, dst = source_uri.rstrip("/") + "/" + folder, target_uri.rstrip("/") + "/" + folder
    there = target.call(f"listing {dst}", lambda: set(target.listing(dst)))
    if dst + MARKER in there:
        return step
    with tempfile.TemporaryDirectory(prefix="omnidist-checkpoint-") as scratch:
        local = os.path.join(scratch, "object")
        for name in [n for n in names if n != MARKER] + [MARKER]:
            source.call(f"reading {src + name}", lambda: source.download(src + name, local))  # noqa: B023
            target.call(f"writing {dst + name}", lambda: target.upload(dst + name, local))  # noqa: B023
    return step


def carry(job: Any, before: tuple[Any, Any], after: tuple[Any, Any], say: Callable[[str], None]) -> Optional[int]:
    """Before a move from ``before`` to ``after`` (each ``(backend, settings)``): copy the latest
    complete checkpoint from the one's location to the other's. Says what it did or why it did not.

    Returns:
        The step copied (or found already there); ``None`` when nothing was copied.

    Raises:
        BackendError: a store call failed.
    """
    source, target = location(job, before[1]), location(job, after[1])
    if source is None or target is None or source == target:
        return None
    stores = store_for(*before, source), store_for(*after, target)
    if stores[0] is None or stores[1] is None:
        missing = source if stores[0] is None else target
        say(f"recovery: checkpoints not copied: {before[0].name if stores[0] is None else after[0].name} "
            f"has no store that reads {missing}; the next attempt starts from what {target} holds")
        return None
    step = copy_latest(stores[0], source, stores[1], target)
    say(f"recovery: no complete checkpoint in {source} to copy" if step is None
        else f"recovery: checkpoint {PREFIX}{step} copied from {source} to {target}")
    return step
