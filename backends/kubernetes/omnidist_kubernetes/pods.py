"""One replica's pod template -> what the portable job can hold of it. Pure.

:func:`native_to_pod` reads the template the way the operator and the API server would (the
container the operator requires, quantities as the CRD types them, nulls dropped) into a
:class:`NativePod`, and notes everything a portable job cannot carry: volumes, host networking,
affinity, ``envFrom``, values from secrets, extended resources other than ``nvidia.com/gpu`` and
``google.com/tpu`` (with GKE's TPU node labels, SPEC §13), security settings, sidecars…
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Optional

import attrs

from omnidist.kit import (
    Note,
    NoteKind,
    ValidationError,
    portable_env,
)
from omnidist_k8s import quantities
from omnidist_k8s.nodes import (
    CPU,
    EPHEMERAL_STORAGE,
    GPU_PRODUCT_LABEL,
    GPU_PRODUCTS,
    GPU_RESOURCE,
    INSTANCE_TYPE_LABELS,
    MEMORY,
    SHM_PATH,
    SPOT_NODE_LABELS,
)
from omnidist_k8s.templates import items, mapping, string_map, strings, text
from omnidist_kubernetes import expansion
from omnidist_kubernetes.tables import (
    GKE_ACCELERATOR_LABEL,
    GKE_PORTABLE,
    GKE_TPU_ACCELERATOR_LABEL,
    GKE_TPU_TOPOLOGY_LABEL,
    TPU_RESOURCE,
    Kind,
    instance_gpus,
)

DEFAULT_PORT_NAMES = frozenset({"pytorchjob-port", "tfjob-port"})
"""Ports the training operator adds to its container (``kubectl get`` output shows them)."""

_CONTAINER_KEYS = frozenset({"args", "command", "env", "envFrom", "image", "name", "resources", "volumeMounts"})
_POD_KEYS = frozenset({"containers", "imagePullSecrets", "nodeSelector", "restartPolicy", "serviceAccount",
                       "serviceAccountName", "tolerations", "volumes"})

OPERATIONAL_KEYS = frozenset({
    "dnsPolicy", "enableServiceLinks", "imagePullPolicy", "livenessProbe", "ports", "readinessProbe", "startupProbe",
    "stdin", "terminationGracePeriodSeconds", "terminationMessagePath", "terminationMessagePolicy", "tty",
})
"""Pod and container fields that say how Kubernetes runs the program, not what it computes: left
behind with a hint. Every other field the portable job has no place for is reported dropped."""


@attrs.frozen(kw_only=True)
class NativePod:
    """What one replica type's pods run and where, as the importer reads it.

    Attributes:
        image, command, args, env: the main container's program (``$(VAR)`` escapes undone).
        cpus, memory_gb, disk_gb: requests (limits when a resource has no request).
        gpus: the ``nvidia.com/gpu`` count.
        accelerator: the GPU model the node selection names (a portable name), if any.
        accelerator_labels: the node labels that named it.
        tpus: the ``google.com/tpu`` count (the chips of the pod's TPU host).
        tpu_labels: GKE's TPU node labels the pod selects (``cloud.google.com/gke-tpu-*``).
        node_selector: the other node labels (spot's removed).
        spot: the pod selects spot capacity (:data:`SPOT_NODE_LABELS`).
        spot_labels: the node labels that said so.
        tolerations: as written.
        service_account, pull_secrets: the pod's.
        shm_size: a memory-backed ``/dev/shm`` volume's size limit (``""``: no limit).
        references: ``$(VAR)`` references Kubernetes expands in command, args and env.
        path: where the template is (for messages).
    """

    image: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: dict[str, str]
    cpus: Optional[float] = None
    memory_gb: Optional[float] = None
    disk_gb: Optional[int] = None
    gpus: int = 0
    accelerator: Optional[str] = None
    accelerator_labels: dict[str, str] = attrs.field(factory=dict)
    tpus: int = 0
    tpu_labels: dict[str, str] = attrs.field(factory=dict)
    node_selector: dict[str, str] = attrs.field(factory=dict)
    spot: bool = False
    spot_labels: dict[str, str] = attrs.field(factory=dict)
    tolerations: tuple[dict[str, Any], ...] = ()
    service_account: Optional[str] = None
    pull_secrets: tuple[str, ...] = ()
    shm_size: Optional[str] = None
    references: tuple[str, ...] = ()
    path: str = ""


def dropped(notes: list[Note], field: str, message: str, kind: NoteKind = NoteKind.DROPPED) -> None:
    """Note something the portable job cannot carry (once)."""
    note = Note(kind=kind, field=field, message=message)
    if note not in notes:
        notes.append(note)


# --- the container ---------------------------------------------------------------------------------

def main_container(pod: Mapping[str, Any], kind: Kind, path: str, notes: list[Note]) -> Mapping[str, Any]:
    """The container the operator trains in: the one named after the framework (MPIJob: the first).

    Raises:
        ValidationError: no containers, or none with the name the operator's webhook requires.
    """
    containers = items(pod.get("containers"), f"{path}.containers")
    if not containers:
        raise ValidationError("a replica needs at least one container", path=f"{path}.containers")
    found = [mapping(c, f"{path}.containers[{i}]", required=True) for i, c in enumerate(containers)]
    if kind.container is None:
        main = found[0]
    else:
        named = [c for c in found if c.get("name") == kind.container]
        if not named:
            have = ", ".join(repr(c.get("name")) for c in found)
            raise ValidationError(f"no container is named {kind.container!r} (it has {have}); the training "
                                  f"operator's webhook refuses a {kind.kind} replica without one: rename the "
                                  f"training container to {kind.container}", path=f"{path}.containers")
        main = named[0]
    for other in found:
        if other is not main:
            dropped(notes, f"{path}.containers", f"container {other.get('name')!r} besides the training container: "
                                                 "a portable job runs one program per replica")
    return main


def env_to_portable(value: Any, path: str, notes: list[Note]) -> tuple[dict[str, str], tuple[str, ...]]:
    """``[{name, value}]`` -> (variables, their ``$(VAR)`` references); ``valueFrom`` is dropped."""
    env: dict[str, str] = {}
    refs: list[str] = []
    for i, item in enumerate(items(value, path)):
        item = mapping(item, f"{path}[{i}]", required=True)
        name = text(item.get("name"), f"{path}[{i}].name")
        if "valueFrom" in item:
            source = ", ".join(mapping(item["valueFrom"], f"{path}[{i}].valueFrom"))
            dropped(notes, f"{path}[{i}]", f"{name} comes from {source or 'a reference'} (a secret, config map or "
                                           "field of the pod): set it in the job's env or the image")
            continue
        raw = item.get("value", "")
        if not isinstance(raw, str):
            raise ValidationError(f"expected a string, got {raw!r}; quote it", path=f"{path}[{i}].value")
        env[name], found = expansion.unescape(raw)
        refs.extend(found)
    return portable_env(env, path, notes), tuple(refs)


def program(container: Mapping[str, Any], path: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(command, args, references) with Kubernetes' ``$$`` escapes undone."""
    command: list[str] = []
    args: list[str] = []
    refs: list[str] = []
    for key, out in (("command", command), ("args", args)):
        for arg in strings(container.get(key), f"{path}.{key}"):
            literal, found = expansion.unescape(arg)
            out.append(literal)
            refs.extend(found)
    return tuple(command), tuple(args), tuple(refs)


# --- resources -------------------------------------------------------------------------------------

def _quantities(resources: Mapping[str, Any], key: str, path: str) -> dict[str, Decimal]:
    block = mapping(resources.get(key), f"{path}.{key}")
    return {name: quantities.parse(value, f"{path}.{key}.{name}") for name, value in block.items()}


def resources_to_portable(container: Mapping[str, Any], path: str, notes: list[Note]) -> dict[str, Any]:
    """``cpus``, ``memory_gb``, ``disk_gb`` (requests, else limits) and ``gpus`` (limits, else requests)."""
    where = f"{path}.resources"
    resources = mapping(container.get("resources"), where)
    requests, limits = _quantities(resources, "requests", where), _quantities(resources, "limits", where)
    either = {**limits, **requests}
    for name, beyond in ((CPU, "CPUs beyond it are"), (MEMORY, "memory beyond it is")):
        if name in requests and name in limits and requests[name] != limits[name]:
            asked, cap = resources["requests"][name], resources["limits"][name]
            capped = " and caps the pod there" if name == MEMORY else ""
            dropped(notes, f"{where}.limits.{name}", (
                f"requests {asked}, limits {cap}: the portable job holds the request; compile asks for it{capped}, "
                f"so {beyond} not carried"), NoteKind.APPROXIMATED)
    found: dict[str, Any] = {}
    if CPU in either:
        found["cpus"] = quantities.to_cpus(either[CPU])
    if MEMORY in either:
        found["memory_gb"] = quantities.to_gigabytes(either[MEMORY])
    if EPHEMERAL_STORAGE in either:
        found["disk_gb"] = quantities.to_whole_gigabytes(either[EPHEMERAL_STORAGE])
    for resource, key in ((GPU_RESOURCE, "gpus"), (TPU_RESOURCE, "tpus")):
        amount = limits.get(resource, requests.get(resource))
        if amount is not None:
            found[key] = quantities.whole(amount, f"{where}.limits.{resource}")
    for name in sorted({*requests, *limits} - {CPU, MEMORY, EPHEMERAL_STORAGE, GPU_RESOURCE, TPU_RESOURCE}):
        amount = limits.get(name, requests.get(name))
        if name.endswith("/gpu") or name.startswith("nvidia.com/"):
            dropped(notes, f"{where}.limits.{name}", f"{amount} accelerators under the cluster's own resource name: "
                                                     f"imported without them (only {GPU_RESOURCE} is portable); "
                                                     "set the role's accelerator", NoteKind.CHANGED)
        else:
            dropped(notes, f"{where}.limits.{name}", f"{name}: {amount} has no portable form (devices, hugepages…)")
    return found


# --- where the pod runs ----------------------------------------------------------------------------

def gpu_model(selector: Mapping[str, str]) -> tuple[Optional[str], dict[str, str]]:
    """The portable GPU model the node labels name, and the labels that named it."""
    if selector.get(GKE_ACCELERATOR_LABEL) in GKE_PORTABLE:
        value = selector[GKE_ACCELERATOR_LABEL]
        return GKE_PORTABLE[value], {GKE_ACCELERATOR_LABEL: value}
    product = selector.get(GPU_PRODUCT_LABEL)
    if product:
        model = next((name for pattern, name in GPU_PRODUCTS if pattern.search(product)), None)
        if model:
            return model, {GPU_PRODUCT_LABEL: product}
    for label in INSTANCE_TYPE_LABELS:
        machine = selector.get(label)
        if machine in instance_gpus():
            return instance_gpus()[machine][0], {label: machine}
    return None, {}


def _spot(selector: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in selector.items() if SPOT_NODE_LABELS.get(k, "").lower() == v.lower() and v}


def _shm(pod: Mapping[str, Any], container: Mapping[str, Any], path: str,
         notes: list[Note]) -> Optional[str]:
    """The size of a memory-backed volume mounted at ``/dev/shm``; every other volume is noted."""
    mounts = {
        text(mapping(m, f"{path}.volumeMounts[{i}]", required=True).get("name"), f"{path}.volumeMounts[{i}].name"): m
        for i, m in enumerate(items(container.get("volumeMounts"), f"{path}.volumeMounts"))
    }
    shm = None
    for i, volume in enumerate(items(pod.get("volumes"), f"{path}.volumes")):
        volume = mapping(volume, f"{path}.volumes[{i}]", required=True)
        name = text(volume.get("name"), f"{path}.volumes[{i}].name")
        source = {k: v for k, v in volume.items() if k != "name"}
        empty = mapping(source.get("emptyDir"), f"{path}.volumes[{i}].emptyDir")
        at = mapping(mounts.get(name), f"{path}.volumeMounts").get("mountPath")
        if at == SHM_PATH and set(source) == {"emptyDir"} and empty.get("medium") == "Memory":
            limit = empty.get("sizeLimit")
            shm = "" if limit is None else str(limit)
            if limit is not None:
                quantities.parse(limit, f"{path}.volumes[{i}].emptyDir.sizeLimit")
            continue
        kinds = ", ".join(source) or "no source"
        where = f" at {at}" if at else " (not mounted)"
        dropped(notes, f"{path}.volumes", f"volume {name!r} ({kinds}){where}: the portable job mounts nothing; read "
                                          "the data from a URI (inputs) or bake it into the image")
    return shm


def native_to_pod(template: Any, kind: Kind, path: str, notes: list[Note]) -> NativePod:
    """Read one replica's ``template``; note what cannot move.

    Raises:
        ValidationError: what the API server or the operator's webhook would refuse, at its path.
    """
    template = mapping(template, path, required=True)
    pod = mapping(template.get("spec"), f"{path}.spec", required=True)
    path = f"{path}.spec"
    meta = mapping(template.get("metadata"), f"{path[:-5]}.metadata")
    for key in ("labels", "annotations"):
        found = mapping(meta.get(key), f"{path[:-5]}.metadata.{key}")  # the API server takes a mapping only
        if found:
            dropped(notes, f"{path[:-5]}.metadata.{key}", f"pod {key} ({', '.join(map(str, found))}) are not carried")
    container = main_container(pod, kind, path, notes)
    where = f"{path}.containers[{list(items(pod['containers'], path)).index(container)}]"
    command, args, refs = program(container, where)
    env, env_refs = env_to_portable(container.get("env"), f"{where}.env", notes)
    if container.get("envFrom"):
        dropped(notes, f"{where}.envFrom", "variables from secrets or config maps: set them in the job's env or the "
                                           "image")
    _other_keys(container, _CONTAINER_KEYS, where, notes)
    resources = resources_to_portable(container, where, notes)
    selector = string_map(pod.get("nodeSelector"), f"{path}.nodeSelector")
    spot = _spot(selector)
    model, model_labels = gpu_model(selector) if resources.get("gpus") else (None, {})
    tpu_labels = {k: selector[k] for k in (GKE_TPU_ACCELERATOR_LABEL, GKE_TPU_TOPOLOGY_LABEL)
                  if k in selector and resources.get("tpus")}
    rest = {k: v for k, v in selector.items() if k not in spot and k not in model_labels and k not in tpu_labels}
    tolerations = tuple(dict(mapping(t, f"{path}.tolerations[{i}]", required=True))
                        for i, t in enumerate(items(pod.get("tolerations"), f"{path}.tolerations")))
    secrets = tuple(text(mapping(s, f"{path}.imagePullSecrets[{i}]", required=True).get("name"),
                         f"{path}.imagePullSecrets[{i}].name")
                    for i, s in enumerate(items(pod.get("imagePullSecrets"), f"{path}.imagePullSecrets")))
    _other_keys(pod, _POD_KEYS, path, notes)
    return NativePod(
        image=text(container.get("image"), f"{where}.image"), command=command, args=args, env=env,
        cpus=resources.get("cpus"), memory_gb=resources.get("memory_gb"), disk_gb=resources.get("disk_gb"),
        gpus=resources.get("gpus", 0), accelerator=model, accelerator_labels=model_labels,
        tpus=resources.get("tpus", 0), tpu_labels=tpu_labels, node_selector=rest,
        spot=bool(spot), spot_labels=spot, tolerations=tolerations,
        service_account=pod.get("serviceAccountName") or pod.get("serviceAccount") or None, pull_secrets=secrets,
        shm_size=_shm(pod, container, path, notes), references=(*refs, *env_refs), path=path,
    )


def _other_keys(block: Mapping[str, Any], known: frozenset[str], path: str, notes: list[Note]) -> None:
    for key in sorted(set(block) - known):
        value = block[key]
        if key == "ports" and all(isinstance(p, Mapping) and isinstance(p.get("name"), str)
                                  and p["name"] in DEFAULT_PORT_NAMES for p in items(value, f"{path}.ports")):
            continue  # the operator's own port, added to every job it reads
        if value in (None, {}, []):
            continue
        if key in OPERATIONAL_KEYS:
            dropped(notes, f"{path}.{key}", f"{_short(value)}: left behind (how Kubernetes runs it)", NoteKind.HINT)
        else:
            dropped(notes, f"{path}.{key}", f"{_short(value)}: not part of the portable job")


def _short(value: Any, width: int = 60) -> str:
    shown = str(value)
    return shown if len(shown) <= width else shown[:width - 1] + "…"
