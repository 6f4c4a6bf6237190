"""Moving a job between clouds: import a native spec, compile it for another backend, and
report what carried over exactly, what was approximated, inferred, changed or dropped.

The steps, each reporting what it did: :func:`import_job` (the source's importer, then the
framework), :func:`move_job` (the command and image the user gives, see
:mod:`omnidist.migration_needs`; the source's settings block and inputs, machine sizes: what
each backend's :class:`~omnidist.backend.MigrationPolicy` says),
:func:`compile_dropping` (what the target's capabilities say it lacks given up, see
:func:`plan`, then the target's compiler once),
:func:`machine_entries` (which machine the target chose for each role, and why).

``--strict`` refuses any drop or change in meaning. A machine picked for the same
accelerator type and count is not a change in meaning; another GPU model or count is.
"""

from __future__ import annotations

import enum
import os
import re
import shlex
from collections.abc import Mapping
from typing import Any, Optional, Union

import attrs

from omnidist import api, importing, jobdata, labels, lowering, registry, serde
from omnidist.backend import CompiledJob, MigrationPolicy, Note
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.features import HARDWARE, ROLE_FEATURES, Feature, NoteCode, Refusal, used
from omnidist.job import Accelerator, DistributedJob, Framework, Interconnect, Role, RoleName
from omnidist.migration_report import (  # noqa: F401 - re-exported: the report is part of this API
    Fidelity,
    MigrationReport,
    ReportEntry,
    StrictMigrationError,
    _entry,
    _order,
)
from omnidist.migration_needs import cannot_express, give_command, give_image, with_flag_hint
from omnidist.native import Native, detect_backend, read_native  # noqa: F401 - re-exported

_INPUT = re.compile(r"\$\{\{\s*inputs\.([\w.]+)\s*\}\}")


_IMAGE_HINTS = (
    ("deepspeed", Framework.DEEPSPEED),
    ("horovod", Framework.HOROVOD),
    ("pytorch", Framework.PYTORCH),
    ("torch", Framework.PYTORCH),
    ("tensorflow", Framework.TENSORFLOW),
    ("tf-", Framework.TENSORFLOW),
    ("tf2-", Framework.TENSORFLOW),
)
"""Substrings of prebuilt training-container names -> framework, checked in order."""


def infer_framework(job: DistributedJob) -> tuple[Framework, str]:
    """A framework for a job whose native spec did not say, and why."""
    if job.parameter_servers is not None and job.parameter_servers.replicas:
        return Framework.TENSORFLOW, "the job has parameter servers (a TF_CONFIG-style cluster)"
    image = (job.image or job.primary.image or "").lower()
    name = image.rsplit("/", 1)[-1]
    for needle, framework in _IMAGE_HINTS:
        if needle in name:
            return framework, f"the image {image!r} is a {framework.value} container"
    return Framework.CUSTOM, "nothing in the spec says; set it with --framework (pytorch, tensorflow, …)"


def import_job(
    native: Native,
    source: Optional[str] = None,
    framework: Optional[Union[Framework, str]] = None,
) -> tuple[DistributedJob, str, list[ReportEntry]]:
    """Import a native spec: the job, the source backend's name, and what was inferred.

    The framework is ``framework`` when given; a spec that names none (the importer gave
    ``custom``) gets one from :func:`infer_framework`, replacing the importer's own remark.
    """
    data, filename = read_native(native)
    try:
        source = source or detect_backend(data)
        job, notes = registry.get(source).import_with_notes(data)
    except ValidationError as exc:
        raise (exc if exc.source else exc.with_source(filename)) from None
    entries = [_entry(n) for n in notes]
    if filename and job.source is None:  # a local code folder or input is relative to the native file
        job = attrs.evolve(job, source=filename)
    if framework is not None:
        job = attrs.evolve(job, framework=framework)
        entries = [e for e in entries if e.field != "framework"]
        entries.append(ReportEntry(fidelity="exact", field="framework", message=f"{job.framework.value} (from --framework)"))
    elif job.framework is Framework.CUSTOM:
        guessed, why = infer_framework(job)
        job = attrs.evolve(job, framework=guessed)
        entries = [e for e in entries if e.field != "framework"]
        entries.append(ReportEntry(fidelity="inferred", field="framework", message=f"{guessed.value}: {why}"))
    return job, source, entries


# --- moving it ----------------------------------------------------------------------------------

def _policy(backend: str) -> MigrationPolicy:
    return registry.get(backend).migration


def carry_backend_block(job: DistributedJob, source: str, target: str) -> tuple[DistributedJob, list[ReportEntry]]:
    """Carry the source block's settings that mean the same on the target (the shared settings
    of a vocabulary both speak); report the rest: dropped when the job loses meaning without
    them (the source's ``left_behind``), hints otherwise."""
    block = dict(job.backends.get(source, {}))
    if not block or source == target:
        return job, []
    policy, shared = _policy(source), _policy(source).shares_with(_policy(target))
    carried = {k: block[k] for k in sorted(policy.shared_settings) if k in block} if shared else {}
    entries = [ReportEntry(fidelity="exact", field=f"backends.{source}.{k}", message=f"carried to backends.{target}.{k} "
                           f"(same {policy.vocabulary.replace('_', ' ').title()} vocabulary)") for k in carried]
    if policy.machine_setting in carried:
        carried[policy.machine_setting], renamed = shared_machine_names(carried[policy.machine_setting], source, target)
        entries += renamed
    for key in block:
        if key in carried or key == policy.inputs_setting or (key == policy.machine_setting and not shared):
            continue  # inputs: see inline_inputs; machines: see machine_entries
        why = policy.left_behind.get(key)
        entries.append(ReportEntry(fidelity="dropped" if why else "hint", field=f"backends.{source}.{key}",
                                   message=f"{_short(block[key])}: {why}" if why else f"{source}-only setting, not used by {target}"))
    target_block = {**carried, **job.backends.get(target, {})}
    backends = {k: v for k, v in job.backends.items() if k != source}
    if target_block:
        backends[target] = target_block
    return attrs.evolve(job, backends=backends), entries


def shared_machine_names(machines: Mapping[str, str], source: str,
                         target: str) -> tuple[dict[str, str], list[ReportEntry]]:
    """Machines named with the source's own aliases (legacy ``large_model``) under the name the
    target shares with it (``n1-highmem-8``), each renaming reported."""
    driver, renamed, entries = registry.get(source), {}, []
    for role, name in machines.items():
        alias = driver.machine_alias(name)
        renamed[role] = alias or name
        if alias:
            entries.append(ReportEntry(
                fidelity="approximated", field=f"backends.{source}.machine_types.{role}",
                message=f"{name} is {source}'s own name for {alias}: {target} gets {alias} (the same machine)"))
    return renamed, entries


_short = importing.short


def _referenced(job: DistributedJob) -> set[str]:
    """The input names the job's commands, args and env values refer to as ``${{inputs.NAME}}``."""
    texts = [*job.command, *job.args, *job.env.values()]
    for role in filter(None, (job.role(r) for r in RoleName)):
        texts += [*(role.command or ()), *(role.args or ()), *role.env.values()]
    return {m[1] for text in texts for m in _INPUT.finditer(text)}


def inline_inputs(job: DistributedJob, inputs: Mapping[str, Any],
                  at: str) -> tuple[DistributedJob, list[ReportEntry]]:
    """Write literal inputs (``epochs: 10``) into the command, args and env where they are
    referenced as ``${{inputs.epochs}}`` (Azure ML's syntax; the source's ``inputs_setting``, at
    ``at``); data inputs (paths, assets) cannot move and are dropped."""
    literal = {k: v for k, v in inputs.items() if isinstance(v, (str, int, float, bool))}
    used = _referenced(job)

    def fill(argv: Optional[tuple[str, ...]]) -> Optional[tuple[str, ...]]:
        return None if argv is None else tuple(_INPUT.sub(lambda m: str(literal.get(m[1], m[0])), a) for a in argv)

    def fill_env(env: Mapping[str, str]) -> dict[str, str]:
        return {k: _INPUT.sub(lambda m: str(literal.get(m[1], m[0])), v) for k, v in env.items()}

    def fill_role(role: Optional[Role]) -> Optional[Role]:
        return role and attrs.evolve(role, command=fill(role.command), args=fill(role.args), env=fill_env(role.env))

    job = attrs.evolve(job, command=fill(job.command), args=fill(job.args), env=fill_env(job.env),
                       **{r.value: fill_role(job.role(r)) for r in RoleName})
    entries = [ReportEntry(fidelity="approximated", field=f"{at}.{k}",
                           message=f"{v!r} written into the command in place of ${{{{inputs.{k}}}}}")
               for k, v in literal.items() if k in used]
    entries += [ReportEntry(fidelity="dropped", field=f"{at}.{k}",
                            message=f"a data input ({_short(v)}) has no equivalent elsewhere; the command still says "
                                    f"${{{{inputs.{k}}}}}: replace it with a path the job can read")
                for k, v in inputs.items() if k not in literal and k in used]
    entries += [ReportEntry(fidelity="hint", field=f"{at}.{k}",
                            message=f"{_short(v)}: declared, but nothing refers to ${{{{inputs.{k}}}}}; not carried")
                for k, v in inputs.items() if k not in used]
    return job, entries


MEMORY_SLACK = 0.9
"""Across providers a CPU role asks for this share of its source machine's memory: clouds
package memory differently (``n1-standard-4`` has 15 GB, ``Standard_D4s_v3`` 16 GB), and the
same class of machine should fit."""


def size_for_target(job: DistributedJob, source: str) -> DistributedJob:
    """Across providers, size each role whose source machine is known the way the target sizes one.

    A GPU role goes by its accelerator alone: the vCPUs and memory the importer read off that
    machine are one cloud's packaging, and would rule out the other cloud's machines for the
    same GPUs. A CPU role keeps its vCPUs and asks for :data:`MEMORY_SLACK` of its memory.
    """
    named = _machines(job, source)
    roles = {}
    for name in RoleName:
        role = job.role(name)
        effective = lowering.effective_role(job, name)
        if role is None or name.value not in named:
            continue
        if effective.accelerator:
            roles[name.value] = attrs.evolve(role, cpus=None, memory_gb=None)
        elif role.memory_gb is not None:
            roles[name.value] = attrs.evolve(role, memory_gb=round(role.memory_gb * MEMORY_SLACK, 1))
    return attrs.evolve(job, **roles)


def google_labels(job: DistributedJob, target: str) -> tuple[DistributedJob, list[ReportEntry]]:
    """For a target that holds labels to Google Cloud's rules (its policy's ``label_rules``), tags
    those rules refuse (other clouds allow any) rewritten into valid labels
    (:func:`omnidist.labels.rewrite`): each rewrite is a change (``--strict`` refuses it), each
    tag beyond what a job can carry is dropped."""
    if not _policy(target).label_rules or not labels.problems(job.labels):
        return job, []
    rewritten, changes = labels.rewrite(job.labels)
    entries = [
        ReportEntry(fidelity="changed", field=f"labels.{c.tag}",
                    message=f"{c.tag}: {c.tag_value!r} is now {c.key}: {c.value!r} ({labels.RULES})")
        if c.key is not None else
        ReportEntry(fidelity="dropped", field=f"labels.{c.tag}",
                    message=f"{_short(c.tag_value)}: a Google Cloud job carries at most {labels.MAX_JOB_LABELS} "
                            "labels besides omnidist's own")
        for c in changes]
    return attrs.evolve(job, labels=rewritten), entries


def move_job(job: DistributedJob, source: str, target: str, image: Optional[str] = None,
             command: Optional[str] = None,
             entries: Optional[list[ReportEntry]] = None) -> tuple[DistributedJob, list[ReportEntry]]:
    """Everything between import and compile: the command, the image, the source's settings,
    inputs, sizes. ``entries`` are the import's (``--image`` answers some); the result is
    every entry, those included."""
    job, commanded = give_command(job, command)
    job, kept, imaged = give_image(job, source, target, image, list(entries or []))
    moved = kept + commanded + imaged
    key = _policy(source).inputs_setting
    inputs = job.backends.get(source, {}).get(key) if key and source != target else None
    if inputs:
        job, inlined = inline_inputs(job, inputs, f"backends.{source}.{key}")
        moved += inlined
    if not _policy(source).shares_with(_policy(target)) and source != target:
        job = size_for_target(job, source)
    job, carried = carry_backend_block(job, source, target)
    job, relabelled = google_labels(job, target)
    job, code = carry_code(job, source, target)
    return job, moved + carried + relabelled + code


def carry_code(job: DistributedJob, source: str, target: str) -> tuple[DistributedJob, list[ReportEntry]]:
    """A local ``code`` folder travels when it is there (beside the native file, as the source
    cloud read it); one that is not is left out, and said so: the target would refuse it."""
    if job.code is None or source == target or jobdata.scheme(job.code) != "local":
        return job, []
    from omnidist import data

    if data.local_path(job, job.code).is_dir():
        return job, []
    where = f"beside {os.path.basename(job.source)}" if job.source else "here"
    return attrs.evolve(job, code=None), [ReportEntry(
        fidelity="dropped", field="code",
        message=f"{job.code}: no such folder {where}, so the code is not shipped: run migrate where the folder "
                "is, or bake the code into the image")]


# --- giving up what the target lacks, then compiling once ------------------------------------------

ROLE_GIVEN_UP = (Fidelity.DROPPED, "the role is left out")
HARDWARE_GIVEN_UP = (Fidelity.CHANGED, "the role runs on the primary's hardware instead")
INFINIBAND_GIVEN_UP = (Fidelity.CHANGED, "interconnect: any (the nodes talk over the target's ordinary network)")
SPOT_GIVEN_UP = (Fidelity.CHANGED, "runs on on-demand capacity instead")
"""What each give-up does to the job, as the report says it (with the target's own refusal)."""


def _given_up(outcome: tuple[Fidelity, str], refusal: UnsupportedFeatureError) -> ReportEntry:
    fidelity, what = outcome
    return ReportEntry(fidelity=fidelity, field=refusal.subject, message=f"{what}: {refusal.message}")


def plan(job: DistributedJob, target: str) -> tuple[DistributedJob, list[ReportEntry]]:
    """Give up, before compiling, what the job uses and the target's declared capabilities lack:
    a role it does not have (or not with the job's framework), spot capacity, InfiniBand, a role
    on other hardware than the primary's. Each is reported in the target's own words (its
    :attr:`~omnidist.backend.Capabilities.refusals`); a feature the target lacks without saying
    how it refuses it is left to its compiler, whose refusal :func:`compile_dropping` gives up.
    Anything else the target lacks (an accelerator, a program per role) is not given up."""
    capabilities = registry.get(target).capabilities
    worded = capabilities.refusals
    entries: list[ReportEntry] = []
    for role, feature in ROLE_FEATURES.items():
        if feature in worded and feature in used(job) and not capabilities.has_role(RoleName(role), job.framework):
            entries.append(_given_up(ROLE_GIVEN_UP, worded[feature].error(feature, target,
                                                                          framework=job.framework.value)))
            job = attrs.evolve(job, **{role: None})
    if Feature.SPOT in worded and job.spot and not capabilities.spot:
        entries.append(_given_up(SPOT_GIVEN_UP, worded[Feature.SPOT].error(Feature.SPOT, target)))
        job = attrs.evolve(job, spot=False)
    if Feature.INFINIBAND in worded and job.interconnect is Interconnect.INFINIBAND and not capabilities.infiniband:
        entries.append(_given_up(INFINIBAND_GIVEN_UP, worded[Feature.INFINIBAND].error(Feature.INFINIBAND, target)))
        job = attrs.evolve(job, interconnect=Interconnect.ANY)
    if Feature.PER_ROLE_MACHINES in worded and not capabilities.per_role_machines:
        job, inherited = _primary_hardware(job, target, worded[Feature.PER_ROLE_MACHINES])
        entries += inherited
    return job, entries


def _primary_hardware(job: DistributedJob, target: str, refusal: Refusal) -> tuple[DistributedJob, list[ReportEntry]]:
    """Every role's own hardware given up: it runs on the primary's."""
    primary, entries = lowering.effective_role(job, RoleName.PRIMARY), []
    for role in lowering.effective_roles(job):
        written = job.role(role.name)
        own = [f for f in HARDWARE if getattr(written, f) is not None and getattr(role, f) != getattr(primary, f)]
        if role.name is RoleName.PRIMARY or not own:
            continue
        for field in own:
            entries.append(_given_up(HARDWARE_GIVEN_UP, refusal.error(
                Feature.PER_ROLE_MACHINES, target, role=role.name.value, field=field,
                nodes=role.name.value.replace("_", " "))))
        job = attrs.evolve(job, **{role.name.value: attrs.evolve(written, **{f: None for f in own})})
    return job, entries


def _fallback(job: DistributedJob, refusal: UnsupportedFeatureError) -> Optional[tuple[DistributedJob, ReportEntry]]:
    """A give-up for a refusal the capabilities could not foresee; ``None`` when there is none."""
    role = next((r for r, f in ROLE_FEATURES.items() if f is refusal.feature), None)
    if role is not None and job.role(role) is not None:
        return attrs.evolve(job, **{role: None}), _given_up(ROLE_GIVEN_UP, refusal)
    if refusal.feature is Feature.INFINIBAND and job.interconnect is Interconnect.INFINIBAND:
        return attrs.evolve(job, interconnect=Interconnect.ANY), _given_up(INFINIBAND_GIVEN_UP, refusal)
    if refusal.feature is Feature.SPOT and job.spot:
        return attrs.evolve(job, spot=False), _given_up(SPOT_GIVEN_UP, refusal)
    if refusal.feature is Feature.CODE and job.module and job.image and job.code and jobdata.is_package(job.code):
        return attrs.evolve(job, code=None), ReportEntry(
            fidelity=Fidelity.DROPPED, field="code", message=f"{refusal.message} The job runs python -m "
                                                             f"{job.module} on {job.image}, which must have the package installed")
    role, _, field = refusal.subject.partition(".")  # a target without worded refusals names it role.field
    written = job.role(role) if refusal.feature is Feature.PER_ROLE_MACHINES else None
    if written is not None and field in HARDWARE and getattr(written, field) is not None:
        return attrs.evolve(job, **{role: attrs.evolve(written, **{field: None})}), _given_up(HARDWARE_GIVEN_UP, refusal)
    return None


def _without_machine(job: DistributedJob, target: str, exc: ValidationError) -> Optional[tuple[DistributedJob, str, str]]:
    """When the target rejects a machine type carried from the source, drop it so the target
    picks one for the role's accelerator; returns the new job, the role and the machine."""
    setting = _policy(target).machine_setting
    prefix = f"backends.{target}.{setting}."
    for problem in exc.problems:
        if setting and problem.path.startswith(prefix):
            role = problem.path[len(prefix):].split(".")[0]
            machines = dict(job.backends.get(target, {}).get(setting, {}))
            if role in machines:
                machine = machines.pop(role)
                block = {**job.backends[target], setting: machines}
                return attrs.evolve(job, backends={**job.backends, target: block}), role, machine
    return None


def compile_dropping(job: DistributedJob, target: str, profile: Optional[str] = None,
                     settings: Optional[Mapping[str, Any]] = None) -> tuple[CompiledJob, DistributedJob, list[ReportEntry]]:
    """Give up what the target's capabilities say it lacks (:func:`plan`), then compile once.

    Two things can still stop that compile, and are given up after it: support the capabilities
    declare but that depends on the job (InfiniBand-class networking only on some of the
    target's machines, a Reduction Server only with GPU workers and without parameter servers),
    which only the target's compiler can judge; and a machine type carried from the source that
    the target does not offer (the target picks one for the same accelerator). Each removes
    something from a finite job, so the compiles end. Returns the compiled job, the job it was
    compiled from, and the entries.
    """
    job, entries = plan(job, target)
    while True:
        try:
            return api.compile(job, backend=target, profile=profile, settings=settings), job, entries
        except UnsupportedFeatureError as exc:
            given = _fallback(job, exc)
            if given is None:
                raise with_flag_hint(exc) from None
            job, entry = given
            entries.append(entry)
        except ValidationError as exc:
            fixed = _without_machine(job, target, exc)
            if fixed is None:
                raise cannot_express(exc, target) from None
            job, role, machine = fixed
            entries.append(ReportEntry(fidelity="approximated",
                                       field=f"backends.{target}.{_policy(target).machine_setting}.{role}",
                                       message=f"{target} does not offer {machine}; it picks one for the same accelerator"))


# --- which machines the target chose ------------------------------------------------------------

def _machines(job: DistributedJob, backend: str) -> dict[str, str]:
    """Role -> machine named in the job's block for ``backend`` (its policy's ``machine_setting``):
    one per role with per-role machines, else one for the nodes that train (primary and workers)."""
    setting = _policy(backend).machine_setting
    named = job.backends.get(backend, {}).get(setting) if setting else None
    if not named:
        return {}
    if registry.get(backend).capabilities.per_role_machines:
        return dict(named)
    return {r.value: named for r in (RoleName.PRIMARY, RoleName.WORKERS)}  # parameter servers share these nodes


def _chose(note: Note, role: str, machine: str) -> bool:
    """True for the target's note that it picked ``machine`` for ``role`` (or for every node)."""
    return (note.code is NoteCode.MACHINE_CHOSEN and note.data.get("machine") == machine
            and note.data.get("role", role) == role)


def _hardware(role: Optional[lowering.EffectiveRole]) -> str:
    if role is None:
        return "nothing"
    if role.accelerator:
        return str(role.accelerator)
    size = "".join(f", {v:g} {unit}" for v, unit in ((role.cpus, "vCPUs"), (role.memory_gb, "GB")) if v)
    return f"CPU-only{size}"


def _same_gpus(a: Optional[Accelerator], b: Optional[Accelerator]) -> bool:
    return (a.type, a.count) == (b.type, b.count) if a and b else a is b is None


def machine_entries(imported: DistributedJob, final: DistributedJob, compiled: CompiledJob, source: str,
                    target: str) -> tuple[list[ReportEntry], set[Note]]:
    """One entry per role whose machine the target chose: the machine, what the source ran, and
    why (the target's own note, which is consumed). Reading the target's request back with its
    importer tells the GPUs the machine really has: another model or count is a change in meaning."""
    try:
        readback, _ = registry.get(target).import_with_notes(compiled.request)
    except (ValidationError, UnsupportedFeatureError):  # pragma: no cover - compilers write what importers read
        return [], set()
    chosen, before, carried = _machines(readback, target), _machines(imported, source), _machines(final, target)
    entries, consumed = [], set()
    for role in lowering.effective_roles(final):
        name = role.name.value
        machine = chosen.get(name)
        if machine is None or carried.get(name) == machine:
            continue  # no machine named (an Azure cluster), or carried as it was (reported with the block)
        got = lowering.effective_role(readback, name)
        why = [n for n in compiled.diagnostics if _chose(n, name, machine)]
        consumed.update(why)
        origin = f"{source} ran {before[name]}" if name in before else f"the {source} spec names no machine"
        role = _as_imported(role, imported)
        text = f"{machine} for {_hardware(role)} ({origin})"
        if got is not None and not _same_gpus(role.accelerator, got.accelerator):
            entries.append(ReportEntry(fidelity="changed", field=f"{name}.machine",
                                       message=f"{text}: it has {_hardware(got)}, not {_hardware(role)}"))
        else:
            reason = why[0].message if why else "the target's machine for it"
            basis = "accelerator equivalence" if role.accelerator else "vCPUs and memory"
            entries.append(ReportEntry(fidelity="approximated", field=f"{name}.machine",
                                       message=f"{text}, chosen by {basis}: {reason}"))
    return entries, consumed


def region_entries(final: DistributedJob, source: str, target: str, profile: Optional[str],
                   settings: Optional[Mapping[str, Any]]) -> list[ReportEntry]:
    """The region a target with regions runs the job in, when neither the source spec nor the
    caller's settings named one: the profile's, or the target's default."""
    _, driver, resolved = api.prepare(final, target, profile, settings)
    region = getattr(resolved, "region", None)
    if not region or "region" in final.backends.get(target, {}) or "region" in (settings or {}):
        return []
    default = attrs.fields_dict(type(resolved))["region"].default
    if region != default:
        return [ReportEntry(fidelity="exact", field="region", message=f"{region} (from the profile)")]
    return [ReportEntry(fidelity="approximated", field="region",
                        message=f"{region}: the {source} spec names no region, so {target} uses its default; set "
                                f"backends.{target}.region (or the profile's region) to choose")]


JOB_FIELDS = ("name", "framework", "image", "command", "args", "env", "processes_per_node", "interconnect", "spot", "timeout", "labels",
              "tuning", "description", "code", "module", "framework_version", "inputs", "outputs")
"""Job-wide fields listed as exact when set and no other entry speaks of them."""


def _as_imported(role: lowering.EffectiveRole, imported: Optional[DistributedJob]) -> lowering.EffectiveRole:
    """The role with the memory its source machine had (the target was asked for a little less,
    see :data:`MEMORY_SLACK`), for the report."""
    before = lowering.effective_role(imported, role.name) if imported is not None else None
    if before is None or role.accelerator or before.cpus != role.cpus:
        return role
    return attrs.evolve(role, memory_gb=before.memory_gb)


def exact_entries(job: DistributedJob, entries: list[ReportEntry],
                  imported: Optional[DistributedJob] = None) -> list[ReportEntry]:
    """What mapped exactly: each role that kept its replicas and hardware, and each job-wide
    field that no other entry mentions."""
    spoken = {part for e in entries for part in e.field.split(".")}
    changed = {e.field.split(".")[0] for e in entries if e.fidelity.breaks_strict or "." not in e.field}
    found = [ReportEntry(fidelity="exact", field=r.name.value,
                         message=f"{r.replicas} replica(s), {_hardware(_as_imported(r, imported))}")
             for r in lowering.effective_roles(job) if r.name.value not in changed]
    found += own_program_entries(job, spoken | changed)
    for name in JOB_FIELDS:
        value = getattr(job, name)
        if name not in spoken and value not in (None, (), {}, False, "auto", Interconnect.ANY):
            found.append(ReportEntry(fidelity="exact", field=name, message=_shown(value, name)))
    return found


def own_program_entries(job: DistributedJob, spoken: set[str]) -> list[ReportEntry]:
    """Each role's own image, command and args (they differ from the job's), carried as written."""
    found = []
    for name in RoleName:
        role = job.role(name)
        for field in ("image", "command", "args"):
            value = getattr(role, field, None) if role is not None else None
            if value and name.value not in spoken:
                found.append(ReportEntry(fidelity="exact", field=f"{name.value}.{field}", message=_shown(value, field)))
    return found


def _shown(value: Any, name: str) -> str:
    if name == "timeout":
        return serde.format_duration(value)
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, tuple):
        return _short(shlex.join(value))
    if name in ("inputs", "outputs"):
        return _short(", ".join(f"{k}={v.to_data()}" for k, v in value.items()))
    if isinstance(value, Mapping):
        from omnidist.display import mask_env

        return _short(" ".join(f"{k}={v}" for k, v in mask_env(value).items()))
    return _short(str(value))


def migrate(
    native: Native,
    source: Optional[str] = None,
    target: Optional[str] = None,
    *,
    strict: bool = False,
    framework: Optional[Union[Framework, str]] = None,
    image: Optional[str] = None,
    profile: Optional[str] = None,
    settings: Optional[Mapping[str, Any]] = None,
    command: Optional[str] = None,
) -> tuple[CompiledJob, MigrationReport]:
    """Import ``native`` from ``source`` (detected when omitted) and compile it for ``target``.

    Args:
        native: the native spec (a mapping) or the path of a YAML/JSON file holding it.
        source: the spec's backend; detected from the content when omitted.
        target: the backend to compile for (required).
        strict: refuse the migration if anything is dropped or changes meaning.
        framework: the job's framework, instead of inferring it (legacy specs do not say).
        image: the container to run, for specs that ran something only their cloud has (a
            legacy Python-package job, a registered, built or conda Azure ML environment).
        profile: the profile supplying the target's settings.
        settings: explicit target settings.
        command: the command to run, one string read like a shell reads it (for a spec that
            names none, or to run something else).

    Returns:
        The compiled request and a :class:`MigrationReport`.

    Raises:
        StrictMigrationError: with ``strict``, when anything would be dropped or changed.
        UnsupportedFeatureError: when the target cannot express something that cannot be given up
            (an image only the source has, without ``image``, among them).
        ValidationError: when the native spec is malformed, or no ``target`` is named.
    """
    if not target:
        raise ValidationError(f"name the backend to migrate to (target=…, or --to): {', '.join(registry.installed())}")
    imported, source, entries = import_job(native, source, framework)
    job, entries = move_job(imported, source, target, image, command, entries)
    compiled, final, given_up = compile_dropping(job, target, profile, settings)
    machines, consumed = machine_entries(imported, final, compiled, source, target)
    entries += given_up + machines + [_entry(n) for n in compiled.diagnostics if n not in consumed]
    entries += region_entries(final, source, target, profile, settings)
    entries += exact_entries(final, entries, imported)
    report = MigrationReport(source=source, target=target, entries=sorted(entries, key=_order))
    if strict and report.breaks_strict:
        raise StrictMigrationError(report)
    return compiled, report


def job_yaml_with_comments(job: DistributedJob, entries: list[ReportEntry], source: str, filename: Optional[str]) -> str:
    """The imported job as YAML, with a header saying where it came from and a comment on each
    top-level key whose value was inferred or approximated."""
    text = serde.job_to_yaml(job)
    remarks = {e.field.split(".")[0]: e for e in entries if e.fidelity in (Fidelity.INFERRED, Fidelity.APPROXIMATED)}
    lines = []
    for line in text.splitlines():
        key = line.split(":", 1)[0]
        entry = remarks.get(key) if line and not line[0].isspace() else None
        lines.append(f"{line}  # {entry.fidelity.value}: {entry.message}" if entry and ":" in line else line)
    header = [f"# imported from {filename or 'a'} {source} spec by omnidist"]
    header += [f"# {e}" for e in entries if e.fidelity not in (Fidelity.EXACT,)]
    return "\n".join(header + lines) + "\n"
