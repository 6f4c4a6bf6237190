"""Submitting against the local fake services: omnidist's submit next to the SDK called
directly, and a concurrent sweep while the server misbehaves.

Each cloud is a :class:`Target`: its fake service on a FakeServer, omnidist's settings for it,
and the direct-SDK submit a user without omnidist would write.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs

import omnidist
from omnidist.testing import Fault, FakeServer

import sweep


@attrs.define
class Target:
    """One cloud's fake service and the two ways to submit a trial to it."""

    backend: str
    service: Any
    create: tuple[str, str]
    settings: dict[str, Any]
    direct: Callable[[sweep.Trial], Any]

    def omnidist_submit(self, trial: sweep.Trial, **settings: Any) -> Any:
        """``omnidist.submit`` of the trial's portable job."""
        return omnidist.submit(sweep.job_document(trial), backend=self.backend, settings={**self.settings, **settings})


def vertex(server: FakeServer) -> Target:
    """Vertex: ``JobServiceClient.create_custom_job`` (REST) with a CustomJob built from messages."""
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import aiplatform_v1

    from omnidist_vertex.testing import FakeVertex

    client = aiplatform_v1.JobServiceClient(credentials=AnonymousCredentials(), transport="rest",
                                            client_options=ClientOptions(api_endpoint=server.url))
    message = sweep.vertex_message()
    parent = "projects/p/locations/us-central1"
    return Target("vertex", FakeVertex(server), ("POST", r"/customJobs$"),
                  {"project": "p", "region": "us-central1", "api_endpoint": server.url, "credentials": "anonymous"},
                  lambda t: client.create_custom_job(parent=parent, custom_job=message(t), timeout=60))


def ai_platform(server: FakeServer) -> Target:
    """Legacy: the discovery client's ``projects().jobs().create(...).execute()``."""
    from omnidist_ai_platform.testing import FakeMLService

    build = sweep.legacy_builder(sweep.legacy_jobs(server.url), suffix=f"_{random.getrandbits(32):08x}")
    return Target("ai_platform", FakeMLService(server), ("POST", r"/jobs$"),
                  {"project": "p", "api_endpoint": server.url, "credentials": "anonymous"},
                  lambda t: build(t).execute(num_retries=0))


def azure_ml(server: FakeServer) -> Target:
    """Azure ML: ``MLClient.jobs.create_or_update`` of an ``azure.ai.ml.command`` job."""
    from azure.ai.ml import MLClient

    from omnidist_azure_ml.client import PUBLIC_CLOUD, StaticTokenCredential
    from omnidist_azure_ml.testing import FakeAzureML

    base = server.url + "/"
    client = MLClient(StaticTokenCredential(), "sub", "rg", "ws", cloud="bench-direct",
                      cloud_metadata={**PUBLIC_CLOUD, "resource_manager": base}, enable_telemetry=False,
                      show_progress=False)
    make = sweep.azure_command()
    counter = iter(range(10**9))

    def direct(trial: sweep.Trial) -> Any:
        job = make(trial)
        job.name = f"{trial.name}-direct-{next(counter)}"
        return client.jobs.create_or_update(job)

    return Target("azure_ml", FakeAzureML(server), ("PUT", r"/jobs/[^/]+$"),
                  {"subscription_id": "sub", "resource_group": "rg", "workspace": "ws", "credential": "anonymous",
                   "endpoint": server.url}, direct)


TARGETS: dict[str, Callable[[FakeServer], Target]] = {"ai_platform": ai_platform, "azure_ml": azure_ml,
                                                      "vertex": vertex}
"""Backend -> how to stand up its fake service and direct-SDK submit."""


def sequential(name: str, count: int, rounds: int = 3) -> tuple[float, float]:
    """Seconds for ``count`` sequential submits through omnidist and through the SDK directly,
    alternating in ``rounds`` so drift in the machine hits both alike (after one warm-up each)."""
    with FakeServer() as server:
        target = TARGETS[name](server)
        *trials, warm = sweep.trials(count + 1)
        target.omnidist_submit(warm)
        target.direct(warm)
        ours = theirs = 0.0
        per_round = max(1, count // rounds)
        for r in range(rounds):
            batch = trials[r * per_round:(r + 1) * per_round]
            t0 = time.perf_counter()
            for trial in batch:
                target.omnidist_submit(trial)
            t1 = time.perf_counter()
            for trial in batch:
                target.direct(trial)
            t2 = time.perf_counter()
            ours, theirs = ours + t1 - t0, theirs + t2 - t1
        expected = 2 + 2 * per_round * rounds
        assert len(target.service.jobs) == expected, (len(target.service.jobs), expected)
        return ours, theirs


FAST_RETRIES: dict[str, dict[str, Any]] = {
    "ai_platform": {"retry_attempts": 10, "retry_deadline_s": 60.0, "retry_initial_wait_s": 0.01},
    "azure_ml": {"retry_attempts": 10, "retry_deadline_s": 60.0, "retry_initial_wait_s": 0.01},
    "vertex": {"retry_attempts": 10, "retry_deadline_s": 60.0, "retry_initial_wait_s": 0.01},
}
"""The retry knobs (shared :class:`omnidist.retry.ClientSettings` keys) each backend's run uses."""


def _faults(rng: random.Random, count: int, drops: bool) -> list[Fault]:
    faults = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.10:
            faults.append(Fault.http(429, "throttled", retry_after=0))
        elif roll < 0.20:
            faults.append(Fault.http(503, "unavailable", retry_after=0))
        elif drops and roll < 0.23:
            faults.append(Fault.drop_after_create())
        else:
            faults.append(Fault.slow(0))  # answers normally
    return faults


def concurrent_sweep(name: str, count: int, workers: int, faulty: bool, seed: int = 7) -> tuple[float, int, int]:
    """Submit ``count`` trials on ``workers`` threads; with ``faulty``, 20% of every call is
    answered 429/503 (Retry-After 0) and 3% of creates lose their response after creating.

    Returns:
        (wall seconds, jobs that exist on the fake, requests the server saw)
    """
    with FakeServer() as server:
        target = TARGETS[name](server)
        trials = sweep.trials(count)
        if faulty:
            rng = random.Random(seed)
            server.fail(*target.create, *_faults(rng, count * 3, drops=True))
            for method in ("GET",):  # lookups on retry and status reads misbehave too
                server.fail(method, "", *_faults(rng, count * 3, drops=False))
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(lambda t: target.omnidist_submit(t, **FAST_RETRIES[name]), trials))
        elapsed = time.perf_counter() - start
        return elapsed, len(target.service.jobs), len(server.requests)
