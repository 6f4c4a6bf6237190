"""A minimal third-party backend, installed into a temporary site directory by the registry
tests through a real ``*.dist-info/entry_points.txt`` (no patching of omnidist)."""

from __future__ import annotations

from typing import Optional

import attrs

from omnidist.kit import Capabilities, CompiledJob, Imports, JobHandle, JobStatus, RoleName


@attrs.frozen(kw_only=True)
class EchoSettings:
    greeting: Optional[str] = None


class EchoBackend(Imports):
    name = "echo"
    capabilities = Capabilities(roles=frozenset({RoleName.PRIMARY}))
    settings_type = EchoSettings

    def compile(self, job, settings):
        return CompiledJob(backend=self.name, request={"name": job.name, "greeting": settings.greeting}, job=job)

    def import_native(self, request):
        raise NotImplementedError

    def submit(self, compiled, settings):
        return JobHandle(backend=self.name, id=compiled.request["name"])

    def status(self, job_id, settings):
        return JobStatus(state="succeeded")

    def logs(self, job_id, settings, follow=False):
        return iter(())

    def cancel(self, job_id, settings):
        return None


class Misnamed(EchoBackend):
    name = "something-else"


class NotABackend:
    pass
