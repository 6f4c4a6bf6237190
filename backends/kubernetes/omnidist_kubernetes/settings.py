"""The ``kubernetes`` backend's settings: profile keys and the job's ``backends.kubernetes`` block.

Every key is documented in ``docs/backends/kubernetes.md``; the retry and timeout keys come from
:class:`~omnidist.backend.settings.ClientSettings`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

import attrs

from omnidist.kit import ClientSettings, Problem, ValidationError, as_tuple, canonical_accelerator, check_data_map
from omnidist_k8s import quantities
from omnidist_kubernetes import names
from omnidist_kubernetes.tables import (
    CLEAN_POD_POLICIES,
    RESTART_POLICIES,
    SPOT_NODE_SELECTOR,
    SPOT_TOLERATIONS,
)

TOLERATION_KEYS = ("effect", "key", "operator", "tolerationSeconds", "value")
"""The fields of a ``Toleration``."""

TOLERATION_OPERATORS = ("Equal", "Exists")
TOLERATION_EFFECTS = ("", "NoExecute", "NoSchedule", "PreferNoSchedule")


def _fail(problems: list[Problem]) -> None:
    if problems:
        raise ValidationError(problems)


def _check(rule: Callable[[str], str]) -> Callable[[Any, attrs.Attribute, Any], None]:
    def check(instance: Any, attribute: attrs.Attribute, value: Optional[str]) -> None:
        problem = rule(value) if value is not None else ""
        _fail([Problem(attribute.name, problem)] if problem else [])

    return check


CLUSTER_CLOUDS = ("aws", "azure", "gcp")
"""The clouds whose VMs ``plan`` prices a cluster's nodes as (the ``cloud`` setting)."""


def _one_of(choices: Sequence[str]) -> Callable[[Any, attrs.Attribute, Any], None]:
    def check(instance: Any, attribute: attrs.Attribute, value: Optional[str]) -> None:
        if value is not None and value not in choices:
            raise ValidationError(f"{value!r} is not one of {', '.join(choices)}", path=attribute.name)

    return check


def _at_least_zero(instance: Any, attribute: attrs.Attribute, value: Optional[int]) -> None:
    if value is not None and value < 0:
        raise ValidationError(f"must be >= 0, got {value}", path=attribute.name)


def label_problems(labels: Mapping[str, str], path: str) -> list[Problem]:
    """Every key or value of ``labels`` that Kubernetes refuses, at ``path.KEY``."""
    found = []
    for key, value in labels.items():
        problem = names.label_key(key) or names.label_value(value)
        if problem:
            found.append(Problem(f"{path}.{key}", problem))
    return found


def _selector(instance: Any, attribute: attrs.Attribute, value: Mapping[str, str]) -> None:
    _fail(label_problems(value, attribute.name))


def to_node_selectors(value: Optional[Mapping[str, Mapping[str, str]]]) -> Optional[dict[str, dict[str, str]]]:
    """Accelerator names are portable names in any spelling (``v100``, ``NVIDIA_TESLA_V100``)."""
    if value is None:
        return None
    table = {}
    for name, labels in value.items():
        try:
            table[canonical_accelerator(name)] = dict(labels)
        except ValueError as exc:
            raise ValidationError(str(exc), path=f"node_selectors.{name}") from None
    return table


def _node_selectors(instance: Any, attribute: attrs.Attribute,
                    value: Optional[Mapping[str, Mapping[str, str]]]) -> None:
    for name, labels in (value or {}).items():
        _fail(label_problems(labels, f"{attribute.name}.{name}"))


def toleration_problems(tolerations: Sequence[Mapping[str, Any]], path: str) -> list[Problem]:
    """What is wrong with each toleration (``Toleration`` of the core API)."""
    found = []
    for i, item in enumerate(tolerations):
        where = f"{path}[{i}]"
        unknown = sorted(set(item) - set(TOLERATION_KEYS))
        if unknown:
            found.append(Problem(f"{where}.{unknown[0]}",
                                 f"unknown key; a toleration has {', '.join(TOLERATION_KEYS)}"))
        operator = item.get("operator", "Equal")
        if operator not in TOLERATION_OPERATORS:
            found.append(Problem(f"{where}.operator",
                                 f"{operator!r} is not one of {', '.join(TOLERATION_OPERATORS)}"))
        if item.get("effect", "") not in TOLERATION_EFFECTS:
            found.append(Problem(f"{where}.effect", f"{item.get('effect')!r} is not one of "
                                                    f"{', '.join(e for e in TOLERATION_EFFECTS if e)}"))
        if operator == "Exists" and item.get("value"):
            found.append(Problem(f"{where}.value", "an Exists toleration has no value"))
        for key in ("key", "value", "effect", "operator"):
            if key in item and not isinstance(item[key], str):
                found.append(Problem(f"{where}.{key}", f"expected a string, got {item[key]!r}"))
        seconds = item.get("tolerationSeconds")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
            found.append(Problem(f"{where}.tolerationSeconds",
                                 f"expected a whole number of seconds, got {seconds!r}"))
    return found


def _tolerations(instance: Any, attribute: attrs.Attribute, value: Sequence[Mapping[str, Any]]) -> None:
    _fail(toleration_problems(value, attribute.name))


def _secrets(instance: Any, attribute: attrs.Attribute, value: Sequence[str]) -> None:
    _fail([Problem(f"{attribute.name}[{i}]", problem)
           for i, name in enumerate(value) if (problem := names.dns_subdomain(name))])


def _shm(instance: Any, attribute: attrs.Attribute, value: Optional[str]) -> None:
    if value is not None:
        quantities.parse(value, attribute.name)


def _dicts(value: Any) -> tuple[dict[str, Any], ...]:
    return tuple(dict(v) for v in value)


@attrs.frozen(kw_only=True)
class KubernetesSettings(ClientSettings):
    """Settings of the ``kubernetes`` backend (documented in ``docs/backends/kubernetes.md``)."""

    namespace: str = attrs.field(default="default", validator=_check(names.dns_label))
    kubeconfig: Optional[str] = None
    """A kubeconfig file (default: ``$KUBECONFIG``, else ``~/.kube/config``; in a pod, its service account)."""
    context: Optional[str] = None
    """The kubeconfig context to use (default: its current context)."""
    api_server: Optional[str] = None
    """An API server URL reached without credentials (``kubectl proxy``'s ``http://127.0.0.1:8001``,
    local test servers); when set, no kubeconfig is read."""
    queue: Optional[str] = attrs.field(default=None, validator=_check(names.label_value))
    """A Kueue LocalQueue: the job gets the ``kueue.x-k8s.io/queue-name`` label."""
    node_selectors: Optional[dict[str, dict[str, str]]] = attrs.field(
        default=None, converter=to_node_selectors, validator=_node_selectors)
    """Accelerator -> the node labels a pod with those GPUs selects; unset: GKE's
    ``cloud.google.com/gke-accelerator`` values. A table given replaces GKE's entirely."""
    node_selector: dict[str, str] = attrs.field(factory=dict, validator=_selector)
    """Node labels every pod selects (a node pool, an instance type)."""
    tolerations: tuple[dict[str, Any], ...] = attrs.field(default=(), converter=_dicts, validator=_tolerations)
    """Tolerations every pod gets (``{key, operator, value, effect}``)."""
    spot_node_selector: dict[str, str] = attrs.field(factory=lambda: dict(SPOT_NODE_SELECTOR), validator=_selector)
    """Node labels of spot capacity, selected by ``spot: true`` jobs (GKE's by default)."""
    spot_tolerations: tuple[dict[str, Any], ...] = attrs.field(
        default=SPOT_TOLERATIONS, converter=_dicts, validator=_tolerations)
    """Tolerations ``spot: true`` jobs get (GKE's spot taint by default)."""
    service_account: Optional[str] = attrs.field(default=None, validator=_check(names.dns_subdomain))
    image_pull_secrets: tuple[str, ...] = attrs.field(default=(), converter=as_tuple, validator=_secrets)
    shm_size: Optional[str] = attrs.field(default=None, validator=_shm)
    """Memory-backed ``/dev/shm`` per pod (a quantity, ``16Gi``); pods with several GPUs get 16Gi unless set."""
    restart_policy: Optional[str] = attrs.field(default=None, validator=_one_of(RESTART_POLICIES))
    backoff_limit: Optional[int] = attrs.field(default=None, validator=_at_least_zero)
    clean_pod_policy: Optional[str] = attrs.field(default=None, validator=_one_of(CLEAN_POD_POLICIES))
    ttl_seconds_after_finished: Optional[int] = attrs.field(default=None, validator=_at_least_zero)
    base_output_dir: Optional[str] = None
    """Where ``default`` outputs go (a URI the program writes, or a path on a volume of the image)."""
    data_map: dict[str, str] = attrs.field(factory=dict, validator=check_data_map)
    """Prefix rewrites for input, output and code URIs (``{"azureml://…/" = "gs://bkt/"}``)."""
    region: Optional[str] = None
    """The region of the cluster the job goes to (``us-central1``): never sent, read by ``omnidist
    plan`` to price the pods as the nodes they need (``cloud``'s VMs) and recorded in the ledger."""
    cloud: str = attrs.field(default="gcp", validator=_one_of(CLUSTER_CLOUDS))
    """Whose VMs the cluster's nodes are: ``gcp`` (GKE: Compute Engine prices plus the cluster fee),
    ``aws`` (EKS: EC2 prices) or ``azure`` (AKS: Azure VM prices)."""
    gke_region: Optional[str] = None
    """``region``'s former name (kept as an alias)."""

    @property
    def cluster_region(self) -> Optional[str]:
        """``region``, else its alias ``gke_region``."""
        return self.region or self.gke_region
