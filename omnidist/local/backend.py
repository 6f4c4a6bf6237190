"""The ``local`` backend: every replica of a job as a process on this machine, with the
environment a chosen cloud would give it.

``compile`` returns the plan (one entry per replica: role, index, argv, env, cwd) with
preview ports; ``run`` (``omnidist run``) starts it in the foreground; ``submit`` starts it
detached under a supervisor that records state and output in a run directory, which
``status``, ``logs`` and ``cancel`` read and act on.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar, Optional

import attrs

from omnidist.backend.billing import Billing
from omnidist.backend.contract import Backend, Capabilities, Imports, Placement
from omnidist.backend.values import CompiledJob, Footprint, JobState, JobStatus, Note, NoteKind, Pool
from omnidist.compiler.lowering import refuse_tpus
from omnidist.errors import NotFoundError, UnsupportedFeatureError, ValidationError
from omnidist.local import code_data, emulated, gpus, plan, preemption, runner
from omnidist.local.environments import PLATFORM_PREFIXES, PLATFORM_VARIABLES
from omnidist.local.gpus import VARIABLE as GPU_VARIABLE
from omnidist.local.runs import RunDir, runs_root
from omnidist.model import accelerators
from omnidist.model.features import Feature, NoteCode
from omnidist.model.job import DistributedJob, Framework
from omnidist.model.roles import Role, RoleName, effective_roles, replica_count
from omnidist.runtime import hints, platforms
from omnidist.secrets import mask_lines, secret_values

if TYPE_CHECKING:  # compiling for local loads no submission code
    from omnidist.submission.handle import JobHandle


def _one_of(choices: tuple[str, ...]) -> Callable[[Any, attrs.Attribute, Any], None]:
    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if value not in choices:
            raise ValidationError(f"must be one of {', '.join(choices)}, got {value!r}", path=attribute.name)
    return check


def _emulation(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    """One of the platforms :mod:`omnidist.runtime.platforms` can emulate (found when asked)."""
    _one_of(platforms.emulations())(instance, attribute, value)


def _non_negative(instance: Any, attribute: attrs.Attribute, value: float) -> None:
    if value < 0:
        raise ValidationError(f"must be >= 0 seconds, got {value}", path=attribute.name)


def _data_map(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    from omnidist.compiler import code_data

    code_data.check_data_map(instance, attribute, value)


@attrs.frozen(kw_only=True)
class LocalSettings:
    """Settings of the local backend (profile keys and the job's ``backends.local`` block).

    Attributes:
        emulate: the platform whose environment replicas get: one of
            :func:`omnidist.runtime.platforms.emulations` (a platform module's name, or ``none``;
            ``omnidist run --help`` lists them). Unset: the cloud of the profile in use, else the
            one the job has a ``backends.<name>`` block for, else
            :data:`omnidist.runtime.platforms.DEFAULT_EMULATION` (:func:`omnidist.local.emulated.chosen`).
        workdir: the replicas' working directory (default: the job file's folder).
        python: the interpreter that replaces a leading ``python``/``python3`` in commands
            (default: the one running omnidist, so the job sees the same packages).
        runs_dir: where ``submit`` keeps run directories (default ``~/.local/state/omnidist/runs``).
        grace_period: seconds between SIGTERM and SIGKILL when replicas are stopped.
        use_chief_in_tf_config: the emulation of a platform whose ``TF_CONFIG`` names its
            primary ``master`` names it ``chief`` instead, on top of what that platform's compile
            decides from the job and its backend block (docs/backends/local.md says which platform
            and when; its module under :mod:`omnidist.runtime.platforms` holds the setting's name).
        data_map: prefix rewrites that turn remote input/output/code URIs into local folders
            (``{"store://bkt/" = "/data/bkt/"}``, with a cloud store's scheme for ``store``).
        cpu: run every replica on the CPU even when this machine has GPUs (``omnidist run
            --cpu``); by default training replicas get the GPUs, one per process, and share them
            round robin when they outnumber them.
    """

    emulate: Optional[str] = attrs.field(default=None, validator=attrs.validators.optional(_emulation))
    workdir: Optional[str] = None
    python: Optional[str] = None
    runs_dir: Optional[str] = None
    grace_period: float = attrs.field(default=5.0, validator=_non_negative)
    use_chief_in_tf_config: bool = False
    data_map: dict[str, str] = attrs.field(factory=dict, validator=_data_map)
    cpu: bool = False


NO_TPUS = "this machine runs the replicas on its CPUs and NVIDIA GPUs; a TPU runs only on a backend that offers TPUs"
"""Why ``omnidist run`` cannot run a TPU job (SPEC §13)."""

STATES = {
    "cancelled": JobState.CANCELLED,
    "failed": JobState.FAILED,
    "queued": JobState.QUEUED,
    "running": JobState.RUNNING,
    "succeeded": JobState.SUCCEEDED,
}
"""Run-directory state -> portable job state."""


def default_run_id(job_name: str) -> str:
    """``<job name>-<UTC time>-<4 hex>``: sortable, unique enough for one machine."""
    return f"{job_name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(2)}"


def shown(note: Note, show: Callable[[Note], None], verbose: bool) -> None:
    """``show(note)``, unless the note is a detail and ``verbose`` is off."""
    if verbose or note.code is not NoteCode.DETAIL:
        show(note)


def _alive(pid: Optional[int]) -> bool:
    if pid is None:
        return False
    child = LocalBackend._children.get(pid)
    if child is not None:
        return child.poll() is None  # our own child: poll also reaps it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LocalBackend(Imports, Placement, Backend):
    """Runs each replica as a local process with an emulated platform environment."""

    name = "local"
    billing = {"local": Billing(free=True, rule="this machine: nothing to pay")}
    capabilities = Capabilities(
        roles=frozenset(RoleName),
        accelerators=frozenset(accelerators.GPUS),
        per_role_machines=True,
        env=True,
        reduction_server=False,
        submit=True,
    )
    settings_type = LocalSettings
    output_format = "json"

    new_run_id: ClassVar[Callable[[str], str]] = staticmethod(default_run_id)
    """Makes a run id from the job name at submit time (replace it in tests)."""

    _children: ClassVar[dict[int, subprocess.Popen]] = {}

    # --- pure -------------------------------------------------------------------------------

    def under_profile_of(self, backend: str, settings: LocalSettings) -> LocalSettings:
        """Under a profile made for a cloud (``omnidist run --profile P``), emulate that cloud
        unless ``emulate`` says otherwise."""
        if settings.emulate is None and backend in platforms.emulations():
            return attrs.evolve(settings, emulate=backend)
        return settings

    @staticmethod
    def _settled(job: DistributedJob, settings: LocalSettings) -> tuple[LocalSettings, list[Note]]:
        """The settings with the emulation chosen (:func:`~omnidist.local.emulated.chosen`) and the
        note saying which and why, when nobody named it; the job checked against it (its layout).

        Raises:
            UnsupportedFeatureError: the emulation cannot run the job; when it is the default,
                naming the emulations that can (:func:`~omnidist.local.emulated.refused`).
        """
        name, why = emulated.chosen(job, settings.emulate)
        settings = attrs.evolve(settings, emulate=name)
        try:
            plan.layout(job, settings)
        except UnsupportedFeatureError as exc:
            # this machine's own limits hold under every emulation: no other one can run the job
            if why != emulated.DEFAULT_REASON or exc.backend == "local":
                raise
            raise emulated.refused(job, name, exc) from None
        if not why:
            return settings, []
        detail = NoteCode.DETAIL if why == emulated.DEFAULT_REASON else None  # what the docs say run does
        return settings, [Note(kind=NoteKind.DEFAULTED, field="emulate", code=detail, message=f"the replicas get "
                               f"{name}'s environment ({why}; --emulate or backends.local.emulate chooses another)")]

    def compile(self, job: DistributedJob, settings: LocalSettings) -> CompiledJob:
        """The replicas that would run, with preview ports (``run``/``submit`` pick free ones)
        and no GPUs (``run``/``submit`` give them out: :mod:`omnidist.local.gpus`)."""
        refuse_tpus(job, self.name, NO_TPUS)
        settings, chosen = self._settled(job, settings)
        layout = plan.layout(job, settings)
        ports = range(plan.PREVIEW_PORT, plan.PREVIEW_PORT + layout.port_count)
        specs = plan.build(job, settings, ports, plan=layout)
        notes = chosen + plan.notes(job, settings, plan=layout)
        notes.append(Note(kind=NoteKind.HINT, field="ports", code=NoteCode.DETAIL, message=f"ports "
                          f"{plan.PREVIEW_PORT}… are a preview; omnidist run and submit use free ports chosen by "
                          "the OS"))
        notes.append(Note(kind=NoteKind.HINT, field="gpus", code=NoteCode.DETAIL, message="GPUs are given out when "
                          f"the job runs (one {GPU_VARIABLE} per replica, from this machine's GPUs)"))
        request = {"emulate": settings.emulate, "replicas": [s.to_dict() for s in specs]}
        if job.tuning is not None:  # each trial runs these replicas, with its values appended
            from omnidist.local import tuning

            tuning.check(job.tuning)
            request["tuning"] = tuning.describe(job)
        return CompiledJob(backend=self.name, request=request, diagnostics=notes, format=self.output_format, job=job)

    def footprint(self, compiled: CompiledJob, settings: LocalSettings) -> Optional[Footprint]:
        """Every replica on this machine, for nothing; offered when the machine has the GPUs the
        training replicas need (each process one), unknown for a job without GPUs."""
        job = compiled.job
        if job is None:
            return None
        pools = [Pool(role=role.name.value, replicas=replica_count(job, role.name) or 1, machine="this machine",
                      accelerator=role.accelerator.type if role.accelerator else None,
                      count=role.accelerator.count if role.accelerator else 0) for role in effective_roles(job)]
        needed = sum(p.count * p.replicas for p in pools)
        offered = len(gpus.visible_gpus()) >= needed if needed else None
        return Footprint(service="local", region=None, pools=pools, offered=offered)

    def import_native(self, request: Mapping[str, Any]) -> DistributedJob:
        """A job from a local plan: roles by replica count, the primary's command, the job's env.

        Platform variables and hints are dropped (they are derived); the job name and
        framework come back from the hints when the plan carries them.
        """
        replicas = request.get("replicas")
        if not isinstance(replicas, list) or not replicas or not all(isinstance(r, Mapping) for r in replicas):
            raise ValidationError("expected a non-empty list of replicas", path="replicas")
        counts: dict[str, int] = {}
        seen: set[tuple[str, Any]] = set()
        for i, replica in enumerate(replicas):
            role = replica.get("role")
            if role not in {r.singular for r in RoleName} or not isinstance(replica.get("argv"), list):
                raise ValidationError(f"each replica needs a role ({', '.join(r.singular for r in RoleName)}) "
                                      "and an argv list", path=f"replicas[{i}]")
            if (role, replica.get("index", i)) not in seen:  # several processes of one replica count once
                seen.add((role, replica.get("index", i)))
                counts[role] = counts.get(role, 0) + 1
        first = replicas[0]
        env = {k: str(v) for k, v in (first.get("env") or {}).items()
               if k not in PLATFORM_VARIABLES and not k.startswith(PLATFORM_PREFIXES) and not hints.is_hint(k)}
        hinted = first.get("env") or {}
        roles = {name.value: Role(replicas=counts[name.singular]) for name in RoleName
                 if name is not RoleName.PRIMARY and name.singular in counts}
        return DistributedJob(name=hinted.get(hints.JOB_NAME, "local-job"),
                              framework=hinted.get(hints.FRAMEWORK, Framework.CUSTOM.value),
                              command=tuple(first["argv"]), env=env, **roles)

    # --- running ------------------------------------------------------------------------------

    def run(self, job: DistributedJob, settings: LocalSettings, out: Optional[IO[str]] = None,
            err: Optional[IO[str]] = None, *, verbose: bool = False,
            show: Optional[Callable[[Note], None]] = None, preempt: Optional[str] = None) -> runner.RunResult:
        """Run the job in the foreground (``omnidist run``) and return how it ended.

        Args:
            job: the job.
            settings: the local backend's settings.
            out: where the replicas' prefixed output goes (default stdout).
            err: where omnidist's own lines go (default stderr).
            verbose: also show the notes that are details (:attr:`~omnidist.model.features.NoteCode.DETAIL`).
            show: prints one note (default: ``omnidist: note: MESSAGE`` on ``err``).
            preempt: ``REPLICA@DURATION``: preempt that replica as the emulated platform would
                (:mod:`omnidist.local.preemption`); with the job's ``recovery`` the run restarts in
                the same run folder, its checkpoints kept.

        Raises:
            ValidationError: ``preempt`` is malformed or names no replica of the run (exit 2).
        """
        err = err or sys.stderr
        wanted = preemption.parse(preempt) if preempt else None
        settings, chosen = self._settled(job, settings)
        show = show or (lambda note: err.write(f"omnidist: note: {note.message}\n"))
        refuse_tpus(job, self.name, NO_TPUS)
        if job.tuning is not None:  # its trials, sampled by Optuna (omnidist.local.tuning)
            from omnidist.local import tuning

            return tuning.run(job, settings, out=out, err=err,
                              show=lambda note: shown(note, show, verbose), notes=chosen)
        run_dir = runs_root(settings.runs_dir) / self.new_run_id(job.name)  # where outputs land (SPEC §7)
        specs, found = self._plan(job, settings, run_dir)
        shot = None
        if wanted is not None:
            signum, grace = platforms.preemption(settings.emulate)
            shot = preemption.Preemption(replica=wanted[0], after=wanted[1], signum=signum, grace=grace,
                                         platform=settings.emulate)
            preemption.check(shot, specs)
        code_data.make_output_dirs(job, settings, run_dir)
        if any(n.field == "emulate" and n.code is NoteCode.DETAIL for n in chosen):
            # nobody asked for this emulation: that its backend is missing is a detail (-v), not news
            found = [attrs.evolve(n, code=NoteCode.DETAIL) if n.field == "emulate" else n for n in found]
        for note in chosen + found:
            shown(note, show, verbose)
        err.flush()
        restarted = 0
        while True:
            result = runner.run(specs, out=out, err=err, grace=settings.grace_period, masked=True, preempt=shot,
                                timeout=job.timeout, memory_gb=_memory(job))
            if not preemption.restarts(result.ended, job.recovery, restarted):
                return result
            restarted += 1
            err.write(f"omnidist: the run ended by {result.ended}; restarting it ({restarted} of "
                      f"{job.recovery.max_restarts} restarts), its checkpoints kept in {run_dir}\n")
            err.flush()
            shot = None  # the preemption happens once
            specs, _ = self._plan(job, settings, run_dir)  # new free ports

    @staticmethod
    def _plan(job: DistributedJob, settings: LocalSettings, run_dir: Path) -> tuple[list[plan.ReplicaSpec], list[Note]]:
        """The processes to start now (free ports, this machine's GPUs; outputs in ``run_dir``)
        and the notes to print."""
        layout = plan.layout(job, settings)
        found = gpus.visible_gpus()
        specs = plan.build(job, settings, runner.free_ports(layout.port_count), gpus=found, plan=layout,
                           run_dir=run_dir)
        return specs, plan.notes(job, settings, plan=layout, gpus=found)

    def submit(self, compiled: CompiledJob, settings: LocalSettings) -> JobHandle:
        """Start the run detached, under a supervisor that records it in a run directory."""
        from omnidist.submission.handle import JobHandle

        job = compiled.job
        if job is not None and job.tuning is not None:
            raise UnsupportedFeatureError(
                Feature.TUNING,
                self.name,
                "a detached local run holds one job, not a search.",
                "Run the trials in the foreground with omnidist run.",
            )
        if job is None:
            raise ValidationError("the local backend submits compiled jobs that carry their job; "
                                  "use omnidist.submit(job) or omnidist.compile(job, backend='local')")
        settings, chosen = self._settled(job, settings)
        run_id = self.new_run_id(job.name)
        store = RunDir(runs_root(settings.runs_dir) / run_id)
        specs, found = self._plan(job, settings, store.path)
        found = chosen + found
        store.create({"job": job.name, "emulate": settings.emulate, "grace_period": settings.grace_period,
                      "timeout": job.timeout, "memory_gb": _memory(job),
                      "notes": [n.message for n in found],
                      "replicas": [s.to_dict() for s in specs]})
        code_data.make_output_dirs(job, settings, store.path)
        with open(store.path / "supervisor.log", "ab") as log:
            child = subprocess.Popen([sys.executable, "-m", "omnidist.local.runner", str(store.path)],
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                     cwd=str(store.path))
        self._children[child.pid] = child
        store.write_supervisor_pid(child.pid)
        return JobHandle(backend=self.name, id=run_id, url=self.console_url(run_id, settings),
                         settings=settings, driver=self)

    def _store(self, job_id: str, settings: LocalSettings) -> RunDir:
        root = runs_root(settings.runs_dir)
        store = RunDir(root / job_id)
        if not job_id or Path(job_id).name != job_id or not store.exists():
            raise NotFoundError(f"no local run {job_id!r} in {root}", backend=self.name)
        return store

    def status(self, job_id: str, settings: LocalSettings) -> JobStatus:
        """The run's state from its run directory (a vanished supervisor means failed/cancelled)."""
        store = self._store(job_id, settings)
        state = store.read_state()
        native = state.get("state", "queued")
        pid = store.supervisor_pid()
        if native in ("queued", "running") and pid is not None and not _alive(pid):
            state = store.read_state()  # re-read: it may have finished between the two looks
            native = state.get("state", "queued")
            if native in ("queued", "running"):
                native = "cancelled" if store.cancel_requested() else "failed"
                return JobStatus(state=STATES[native], native_state=native,
                                 message="the supervisor ended without recording a result")
        message = ""
        if native == "failed" and state.get("reason"):
            message = state["reason"]
        elif native == "failed" and state.get("failed"):
            message = f"{state['failed']} exited with code {state.get('exit_code')}"
        elif native in ("failed", "cancelled") and state.get("exit_code") is not None:
            message = f"exit code {state['exit_code']}"
        return JobStatus(state=STATES.get(native, JobState.UNKNOWN), native_state=native, message=message)

    def logs(self, job_id: str, settings: LocalSettings, follow: bool = False,
             poll: float = 0.2) -> Iterator[str]:
        """The run's prefixed output, its replicas' secrets masked (the run log keeps them as
        written); with ``follow``, until the run ends."""
        store = self._store(job_id, settings)
        lines = self._raw_logs(store, job_id, settings, follow, poll)
        return mask_lines(lines, secret_values(store.read_plan().get("replicas", [])))

    def _raw_logs(self, store: RunDir, job_id: str, settings: LocalSettings, follow: bool,
                  poll: float) -> Iterator[str]:
        with open(store.log_path, encoding="utf-8", errors="replace") as fh:
            pending = ""
            while True:
                chunk = fh.read()
                if chunk:
                    pending += chunk
                    *lines, pending = pending.split("\n")
                    yield from lines
                    continue
                if not follow or self.status(job_id, settings).state.terminal:
                    rest = pending + fh.read()
                    yield from (line for line in rest.split("\n") if line)
                    return
                time.sleep(poll)

    def cancel(self, job_id: str, settings: LocalSettings) -> None:
        """Stop every replica of the run (SIGTERM, then SIGKILL); a no-op once it has ended."""
        store = self._store(job_id, settings)
        if self.status(job_id, settings).state.terminal:
            return
        store.request_cancel()
        pid = store.supervisor_pid()
        if _alive(pid):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + settings.grace_period + 3.0
        while time.monotonic() < deadline and not self.status(job_id, settings).state.terminal:
            time.sleep(0.05)
        if not self.status(job_id, settings).state.terminal:  # the supervisor is stuck: do its job
            for pgid in store.read_state().get("groups", []):
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
            store.update(state="cancelled", finished=time.time())

    def console_url(self, job_id: str, settings: LocalSettings) -> str:
        """The run directory, as a ``file://`` URL."""
        return (runs_root(settings.runs_dir) / job_id).resolve().as_uri()


def _memory(job: DistributedJob) -> dict[str, float]:
    """Each role's memory_gb by the name its replicas run as (``worker``), for the runner to say
    when one is killed."""
    return {role.name.singular: role.memory_gb for role in effective_roles(job) if role.memory_gb}
