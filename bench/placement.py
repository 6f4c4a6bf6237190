"""The placement budgets (DESIGN "Performance budgets"), measured against local fake services:

- ``omnidist plan`` over every profile (one per installed cloud backend, and this machine) and the
  whole price catalog costs at most 1.5x ``omnidist compile`` (CLI cold starts, fastest of N,
  interleaved);
- ``omnidist jobs --refresh`` over the clouds asks them in parallel: about the slowest cloud's time,
  not their sum (each fake answers a status read after a fixed delay);
- a failover to the next profile adds under a second to the create it makes (a placement whose first
  profile refuses for quota, next to a submit straight to the profile that takes the job).

Run through ``bench/run.py --only placement`` (its table and ratios), or alone:
``.venv/bin/python bench/placement.py``.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

STATUS_DELAY_S = 0.5
"""How long each fake cloud takes to answer a status read in the refresh measure."""

JOB = {"name": "bench-place", "framework": "pytorch", "image": "us-docker.pkg.dev/p/t/ddp:1",
       "command": ["python", "-m", "trainer.task"], "primary": {"accelerator": "T4:1"}, "workers": {"replicas": 1}}
"""A job every cloud backend compiles."""

QUOTA = {"vertex": "The following quota metrics exceed quota limits: custom_model_training_nvidia_t4_gpus",
         "ai_platform": "Quota failure for project proj: exceeds the allowed maximum of 0 T4 accelerators",
         "azure_ml": "The specified subscription has a Standard NCASv3_T4 Family vCPU quota of 0",
         "kubernetes": 'pytorchjobs.kubeflow.org "x" is forbidden: exceeded quota: gpus'}
"""Each cloud's quota refusal, in its words."""


def _clouds() -> list[str]:
    from omnidist.testing.harness import harnesses

    return sorted(harnesses())


@contextmanager
def fakes(folder: Path) -> Iterator[dict[str, Any]]:
    """Every cloud's fake service, and an ``omnidist.toml`` in ``folder`` with a profile on each
    (named after its backend) and one on this machine."""
    from omnidist.testing import FakeServer
    from omnidist.testing.harness import harnesses

    with ExitStack() as stack:
        services, lines = {}, ['[profiles.laptop]\nbackend = "local"']
        for cloud, harness in sorted(harnesses().items()):
            server = stack.enter_context(FakeServer())
            services[cloud] = harness.service(server)
            settings = {**harness.settings(server.url), "retry_initial_wait_s": 0.01, "poll_interval_s": 0.0,
                        "region" if cloud != "kubernetes" else "gke_region": "us-central1"}
            lines.append(f'[profiles.{cloud}]\nbackend = "{cloud}"')
            lines += [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
        (folder / "omnidist.toml").write_text("\n".join(lines) + "\n")
        (folder / "job.json").write_text(json.dumps(JOB))
        yield services


def plan_vs_compile(runs: int, interleaved: Callable[..., dict[str, float]], env: dict[str, str]) -> list[tuple]:
    """``omnidist plan`` over every profile next to ``omnidist compile`` of the same job: CLI cold
    starts of omnidist installed from wheels (:mod:`wheel_install`), as users install it."""
    import wheel_install

    with tempfile.TemporaryDirectory(prefix="omnidist-bench-plan-") as tmp, fakes(Path(tmp)):
        cli = str(wheel_install.build(Path(tmp) / "env") / "omnidist")
        commands = {"plan": [cli, "plan", "job.json"],
                    "compile": [cli, "compile", "job.json", "--profile", "vertex", "--no-notes"]}
        t = interleaved(commands, runs, cwd=Path(tmp), env=env)
    ratio = t["plan"] / t["compile"]
    return [(f"omnidist plan over every profile ({len(_clouds()) + 1}) and the price catalog / omnidist compile "
             "(CLI, wheel install)",
             f"{t['plan'] * 1e3:.0f} ms", f"{t['compile'] * 1e3:.0f} ms", ratio, "<= 1.5x", ratio <= 1.5)]


def refresh_vs_slowest(rounds: int) -> list[tuple]:
    """``jobs(refresh=True)`` over one live job per cloud, each status read taking
    :data:`STATUS_DELAY_S`: about one delay (the slowest cloud), not one per cloud."""
    import omnidist
    from omnidist import api
    from omnidist.testing import Fault

    with tempfile.TemporaryDirectory(prefix="omnidist-bench-jobs-") as tmp, fakes(Path(tmp)) as services:
        here = os.getcwd()
        os.chdir(tmp)
        try:
            for cloud, service in services.items():
                service.keep_running()
                omnidist.submit(JOB, profile=cloud)
            clouds = len(services)
            times = []
            for _ in range(rounds):
                for service in services.values():
                    service.server.fail(*service.ROUTES["get"], *[Fault.slow(STATUS_DELAY_S)] * 4)
                t0 = time.perf_counter()
                listed = api.jobs(refresh=True)
                times.append(time.perf_counter() - t0)
                assert all(r.state != "submitted" and not r.reason.startswith("refresh failed") for r in listed), \
                    [(r.state, r.reason) for r in listed]
        finally:
            os.chdir(here)
    took = min(times)
    return [(f"omnidist jobs --refresh over {clouds} clouds (each status read {STATUS_DELAY_S:g} s) / the slowest "
             "cloud", f"{took:.2f} s", f"{STATUS_DELAY_S:.2f} s", took / STATUS_DELAY_S, "about 1x, not "
             f"{clouds}x", took < 2 * STATUS_DELAY_S)]


def failover_cost(rounds: int) -> list[tuple]:
    """A placement whose first profile refuses for quota, next to a submit straight to the second."""
    import omnidist
    from omnidist.placement import failover
    from omnidist.testing import Fault

    rows = []
    with tempfile.TemporaryDirectory(prefix="omnidist-bench-failover-") as tmp, fakes(Path(tmp)) as services:
        here = os.getcwd()
        os.chdir(tmp)
        try:
            for first in sorted(services):
                then = "azure_ml" if first != "azure_ml" else "vertex"
                direct, placed = [], []
                omnidist.submit(JOB, profile=then)  # warm: the SDK imported, its client made
                for _ in range(rounds):
                    t0 = time.perf_counter()
                    omnidist.submit(JOB, profile=then)
                    direct.append(time.perf_counter() - t0)
                    services[first].server.fail(*services[first].ROUTES["create"],
                                                Fault.http(429 if first != "kubernetes" else 403, QUOTA[first]))
                    t0 = time.perf_counter()
                    handle = failover.submit(JOB, profile=f"{first},{then}", say=lambda _: None)
                    placed.append(time.perf_counter() - t0)
                    assert handle.backend == then
                added = statistics.median(placed) - statistics.median(direct)
                rows.append((f"failover {first} (quota) -> {then}: placement / a submit straight to {then}",
                             f"{statistics.median(placed):.2f} s", f"{statistics.median(direct):.2f} s",
                             statistics.median(placed) / statistics.median(direct), "adds < 1 s", added < 1.0))
        finally:
            os.chdir(here)
    return rows


def main() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    os.environ.setdefault("OMNIDIST_STATE_DIR", tempfile.mkdtemp(prefix="omnidist-bench-state-"))
    import run

    rows = [run.Row(*r) for r in (plan_vs_compile(7, run._interleaved, run.WHEEL_ENV) + refresh_vs_slowest(3)
                                   + failover_cost(3))]
    print(run.render(rows))


if __name__ == "__main__":
    main()
