"""Step 2 of a migration: everything between import and compile. The command and image the user
gives (:mod:`omnidist.migration.needs`), the source's settings block and inputs, machine sizes and
labels: what each backend's :class:`~omnidist.backend.contract.MigrationPolicy` says."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Optional

import attrs

from omnidist.backend.contract import Backend, machine_alias_of
from omnidist.compiler import code_data
from omnidist.compiler.delowering import shorten
from omnidist.errors import ValidationError
from omnidist.migration.needs import give_command, give_image
from omnidist.migration.references import rewrite_bound_references
from omnidist.migration.report import Fidelity, ReportEntry
from omnidist.model import data as jobdata
from omnidist.model.job import DistributedJob
from omnidist.model.limits import clipped_repr
from omnidist.model.roles import Role, RoleName, effective_role

_INPUT = re.compile(r"\$\{\{\s*inputs\.([\w.]+)\s*\}\}")


def carry_backend_block(job: DistributedJob, source: Backend,
                        target: Backend) -> tuple[DistributedJob, list[ReportEntry]]:
    """Carry the source block's settings that mean the same on the target (the shared settings
    of a vocabulary both speak); report the rest: dropped when the job loses meaning without
    them (the source's ``left_behind``), hints otherwise."""
    block = dict(job.backends.get(source.name, {}))
    if not block or source.name == target.name:
        return job, []
    own, shared = source.migration, source.migration.shares_with(target.migration)
    carried = {k: block[k] for k in sorted(own.shared_settings) if k in block} if shared else {}
    entries = [
        ReportEntry(
            fidelity=Fidelity.EXACT,
            field=f"backends.{source.name}.{k}",
            message=f"carried to backends.{target.name}.{k} "
                    f"(same {own.vocabulary.replace('_', ' ').title()} vocabulary)",
        )
        for k in carried
    ]
    if own.machine_setting in carried:
        carried[own.machine_setting], renamed = shared_machine_names(carried[own.machine_setting], source, target)
        entries += renamed
    output, their_output = own.output_setting, target.migration.output_setting
    if shared and output in block and their_output:
        carried[their_output] = block[output]
        entries.append(ReportEntry(fidelity=Fidelity.EXACT, field=f"backends.{source.name}.{output}",
                                   message=f"{block[output]} carried to backends.{target.name}.{their_output} (where "
                                           f"{target.name} puts the job's outputs)"))
    for key in block:
        if key in carried or key == output and their_output and shared or key == own.inputs_setting or (
                key == own.machine_setting and not shared):
            continue  # inputs: see inline_inputs; machines: see machine_entries
        why = own.left_behind.get(key)
        entries.append(
            ReportEntry(
                fidelity=Fidelity.DROPPED if why else Fidelity.HINT,
                field=f"backends.{source.name}.{key}",
                message=f"{shorten(block[key])}: {why}" if why
                else f"{source.name}-only setting, not used by {target.name}",
            )
        )
    target_block = {**carried, **job.backends.get(target.name, {})}
    backends = {k: v for k, v in job.backends.items() if k != source.name}
    if target_block:
        backends[target.name] = target_block
    return attrs.evolve(job, backends=backends), entries


def shared_machine_names(machines: Mapping[str, str], source: Backend,
                         target: Backend) -> tuple[dict[str, str], list[ReportEntry]]:
    """Machines named with the source's own aliases (legacy ``large_model``) under the name the
    target shares with it (``n1-highmem-8``), each renaming reported."""
    renamed, entries = {}, []
    for role, name in machines.items():
        alias = machine_alias_of(source, name)
        renamed[role] = alias or name
        if alias:
            entries.append(ReportEntry(
                fidelity=Fidelity.APPROXIMATED, field=f"backends.{source.name}.machine_types.{role}",
                message=f"{name} is {source.name}'s own name for {alias}: {target.name} gets {alias} "
                        "(the same machine)"))
    return renamed, entries


def _referenced(job: DistributedJob) -> set[str]:
    """The input names the job's commands, args and env values refer to as ``${{inputs.NAME}}``."""
    texts = [*job.command, *job.args, *job.env.values()]
    for role in filter(None, (job.role(r) for r in RoleName)):
        texts += [*(role.command or ()), *(role.args or ()), *role.env.values()]
    return {m[1] for text in texts for m in _INPUT.finditer(text)}


def inline_inputs(job: DistributedJob, inputs: Mapping[str, Any],
                  at: str) -> tuple[DistributedJob, list[ReportEntry]]:
    """Write literal inputs (``epochs: 10``) into the command, args and env where they are
    referenced as ``${{inputs.epochs}}`` (the job format's syntax; the source's ``inputs_setting``, at
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
    entries = [ReportEntry(fidelity=Fidelity.APPROXIMATED, field=f"{at}.{k}",
                           message=f"{v!r} written into the command in place of ${{{{inputs.{k}}}}}")
               for k, v in literal.items() if k in used]
    entries += [ReportEntry(fidelity=Fidelity.DROPPED, field=f"{at}.{k}",
                            message=f"a data input ({shorten(v)}) has no equivalent elsewhere; the command still says "
                                    f"${{{{inputs.{k}}}}}: replace it with a path the job can read")
                for k, v in inputs.items() if k not in literal and k in used]
    entries += [ReportEntry(fidelity=Fidelity.HINT, field=f"{at}.{k}",
                            message=f"{shorten(v)}: declared, but nothing refers to ${{{{inputs.{k}}}}}; not carried")
                for k, v in inputs.items() if k not in used]
    return job, entries


MEMORY_SLACK = 0.9
"""Across providers a CPU role asks for this share of its source machine's memory: clouds
package memory differently (``n1-standard-4`` has 15 GB, ``Standard_D4s_v3`` 16 GB), and the
same class of machine should fit."""


def size_for_target(job: DistributedJob, source: Backend, target: Backend) -> tuple[DistributedJob, list[ReportEntry]]:
    """Across providers, size each role whose source machine is known the way the target sizes one.

    A GPU role goes by its accelerator alone: the vCPUs and memory the importer read off that
    machine are one cloud's packaging, and would rule out the other cloud's machines for the
    same GPUs. A CPU role keeps its vCPUs and asks for :data:`MEMORY_SLACK` of its memory, and
    the report says so where the target asks for that memory as it is (a Kubernetes pod, capped
    there); a target that picks a machine for it (its policy's ``machine_setting``) reports the
    machine instead.
    """
    named = machines_named(job, source)
    roles, entries = {}, []
    for name in RoleName:
        role = job.role(name)
        effective = effective_role(job, name)
        if role is None or name.value not in named:
            continue
        if effective.accelerator:
            roles[name.value] = attrs.evolve(role, cpus=None, memory_gb=None)
        elif role.memory_gb is not None:
            memory = round(role.memory_gb * MEMORY_SLACK, 1)
            roles[name.value] = attrs.evolve(role, memory_gb=memory)
            if not target.migration.machine_setting:
                entries.append(ReportEntry(fidelity=Fidelity.APPROXIMATED, field=f"{name.value}.memory_gb", message=(
                    f"{memory:g} GB, {MEMORY_SLACK:.0%} of the {named[name.value]}'s {role.memory_gb:g} GB: "
                    "clouds package memory differently, so the same class of machine fits")))
    return attrs.evolve(job, **roles), entries


def labels_for_target(job: DistributedJob, target: Backend) -> tuple[DistributedJob, list[ReportEntry]]:
    """For a target whose labels follow rules (its policy's ``label_rules``: a cloud's label
    or tag rules), tags those rules refuse (other clouds allow them) rewritten into valid
    labels (:meth:`omnidist.model.labels.LabelRules.rewrite`): each rewrite is a change
    (``--strict`` refuses it), each tag beyond what a job can carry is dropped."""
    rules = target.migration.label_rules
    if rules is None or not rules.problems(job.labels):
        return job, []
    rewritten, changes = rules.rewrite(job.labels)
    entries = [
        ReportEntry(
            fidelity=Fidelity.CHANGED,
            field=f"labels.{c.tag}",
            message=f"{c.tag}: {c.tag_value!r} is now {c.key}: {c.value!r} ({rules.summary})",
        )
        if c.key is not None
        else ReportEntry(
            fidelity=Fidelity.DROPPED,
            field=f"labels.{c.tag}",
            message=f"{shorten(c.tag_value)}: a job carries at most {rules.max_job_labels} {rules.name} "
            "besides omnidist's own",
        )
        for c in changes
    ]
    return attrs.evolve(job, labels=rewritten), entries


def move_job(job: DistributedJob, source: Backend, target: Backend, image: Optional[str] = None,
             command: Optional[str] = None, entries: Optional[list[ReportEntry]] = None,
             world: Any = None) -> tuple[DistributedJob, list[ReportEntry]]:
    """Everything between import and compile: the command, the image, the source's settings,
    inputs, sizes. ``entries`` are the import's (``--image`` answers some); the result is
    every entry, those included. ``world``: what the program saw on the source, which
    :func:`~omnidist.migration.keep.keep_observed` keeps where omnidist can."""
    if world is not None and source != target and command is None:
        from omnidist.migration.keep import keep_observed

        job, kept_world = keep_observed(job, world)
        entries = [*(entries or []), *kept_world]
    job, commanded = give_command(job, command)
    job, kept, imaged = give_image(job, source, target, image, list(entries or []))
    moved = kept + commanded + imaged
    key = source.migration.inputs_setting
    inputs = job.backends.get(source.name, {}).get(key) if key and source.name != target.name else None
    if inputs:
        job, inlined = inline_inputs(job, inputs, f"backends.{source.name}.{key}")
        moved += inlined
    if source.name != target.name:
        job, bound = rewrite_bound_references(job, target.name)
        moved += bound
    if not source.migration.shares_with(target.migration) and source.name != target.name:
        job, sized = size_for_target(job, source, target)
        moved += sized
    job, tpu = tpu_hosts_for_target(job, source, target)
    moved += tpu
    folder = job.backends.get(source.name, {}).get(source.migration.output_setting)
    job, carried = carry_backend_block(job, source, target)
    if folder and any(e.field == f"backends.{source.name}.{source.migration.output_setting}"
                      and e.fidelity is Fidelity.EXACT
                      for e in carried):  # the import's approximation of that folder: the carry answers it
        moved = [e for e in moved if not (e.fidelity is Fidelity.APPROXIMATED and e.message.startswith(f"{folder}:"))]
    job, relabelled = labels_for_target(job, target)
    job, code = carry_code(job, source, target)
    return job, moved + carried + relabelled + code


TPU_WAYS = {
    "node": "TPU Nodes: the program runs on a VM of its own and reaches the TPU over the network by name "
            "(TPUClusterResolver(tpu=NAME), $TPU_NAME)",
    "vm": "TPU VMs: the program runs on the TPU hosts themselves, one process per host "
          "(TPUClusterResolver(tpu='local'), jax.distributed.initialize())",
}
"""A backend policy's ``tpus`` -> how its TPU jobs reach the TPU, for the report (SPEC §13)."""


def tpu_hosts_for_target(job: DistributedJob, source: Backend,
                         target: Backend) -> tuple[DistributedJob, list[ReportEntry]]:
    """A TPU job moving between a backend that runs TPU Nodes and one that runs TPU VMs (SPEC §13):
    reported ``changed`` (code that finds its TPU by name must change), and the machine the program
    ran on beside the TPU Node (named, or its vCPUs and memory) is not carried, since the TPU hosts
    are the machines on the other side."""
    ways = source.migration.tpus, target.migration.tpus
    primary = effective_role(job, RoleName.PRIMARY)
    if not (primary.accelerator and primary.accelerator.tpu) or not all(ways) or ways[0] == ways[1]:
        return job, []
    setting = source.migration.machine_setting
    block = dict(job.backends.get(source.name, {}))
    machines = dict(block.get(setting) or {}) if setting else {}
    host = machines.pop(RoleName.PRIMARY.value, None) if ways[0] == "node" else None
    if host is not None:
        block[setting] = machines
        job = attrs.evolve(job, backends={**job.backends, source.name: {k: v for k, v in block.items() if v}})
    if ways[0] == "node":
        job = attrs.evolve(job, primary=attrs.evolve(job.primary, cpus=None, memory_gb=None))
    entries = [ReportEntry(fidelity=Fidelity.CHANGED, field="primary.accelerator", message=(
        f"{primary.accelerator}: {source.name} runs {TPU_WAYS[ways[0]]}; {target.name} runs {TPU_WAYS[ways[1]]}. "
        "Code that finds its TPU by name must change"))]
    if host is not None:
        entries.append(ReportEntry(
            fidelity=Fidelity.APPROXIMATED, field=f"backends.{source.name}.{setting}.primary", message=(
            f"{host}: the VM that ran the program beside the TPU Node is not carried; on {target.name} the program "
            "runs on the TPU hosts")))
    return job, entries


def carry_code(job: DistributedJob, source: Backend, target: Backend) -> tuple[DistributedJob, list[ReportEntry]]:
    """A local ``code`` folder travels when it is there (beside the native file, as the source
    cloud read it); one that is not is left out, and said so: the target would refuse it."""
    if job.code is None or source.name == target.name or jobdata.scheme(job.code) != "local":
        return job, []
    kind = code_data.path_kind(code_data.local_path(job, job.code))
    if kind == code_data.FOLDER:
        return job, []
    where = f"beside {os.path.basename(job.source)}" if job.source else "here"
    why = {code_data.MISSING: "no such folder", code_data.FILE: "a file, not a folder"}.get(kind, kind)
    return attrs.evolve(job, code=None), [ReportEntry(
        fidelity=Fidelity.DROPPED, field="code",
        message=f"{clipped_repr(job.code)[1:-1]}: {why} {where}, so the code is not shipped: run migrate where "
                "the folder is, or bake the code into the image")]


def machines_named(job: DistributedJob, backend: Backend) -> dict[str, str]:
    """Role -> machine named in the job's block for ``backend`` (its policy's ``machine_setting``):
    one per role with per-role machines, else one for the nodes that train (primary and workers)."""
    setting = backend.migration.machine_setting
    named = job.backends.get(backend.name, {}).get(setting) if setting else None
    if not named:
        return {}
    if backend.capabilities.per_role_machines:
        return dict(named)
    return {r.value: named for r in (RoleName.PRIMARY, RoleName.WORKERS)}  # parameter servers share these nodes


def give_accelerators(job: DistributedJob, given: Mapping[str, str],
                      entries: list[ReportEntry]) -> tuple[DistributedJob, list[ReportEntry]]:
    """The accelerators ``--accelerator`` names (role -> ``TYPE:COUNT``), for a spec whose machines
    the import could not read (a job on a named compute cluster): each replaces the
    import's lines about that role's accelerator with an exact one.

    Raises:
        ValidationError: an accelerator that does not parse, or a role the job does not have.
    """
    from omnidist.model.roles import AUTO, Accelerator, processes_per_node

    entries, ran = list(entries), processes_per_node(job)
    for name, text in given.items():
        try:
            role_name = RoleName(name)
            accelerator = Accelerator.parse(text)
        except ValueError as exc:
            raise ValidationError(f"{name}={text}: {exc}. Write TYPE:COUNT (every role) or ROLE=TYPE:COUNT, "
                                  f"ROLE one of {', '.join(r.value for r in RoleName)}", path="--accelerator") from None
        role = job.role(role_name)
        if role is None:
            raise ValidationError(f"{name}={text}: the job has no {name}", path="--accelerator")
        job = attrs.evolve(job, **{role_name.value: attrs.evolve(role, accelerator=accelerator)})
        field = f"{role_name.value}.accelerator"
        entries = [e for e in entries if e.field != field]
        entries.append(ReportEntry(fidelity=Fidelity.EXACT, field=field, message=f"{accelerator} (from --accelerator)"))
    if job.processes_per_node == AUTO and processes_per_node(job) != ran:  # the GPUs were there all along: the
        job = attrs.evolve(job, processes_per_node=ran)  # program ran as many processes per node as it did
    return job, entries
