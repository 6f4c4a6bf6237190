"""Test helpers: what the API server and the operators check of a training job, and a working
fake of the Kubernetes API calls the client makes, on top of :class:`omnidist.testing.FakeServer`.

- :func:`schema_problems` walks a job against a compact structural schema of the fields omnidist
  writes, transcribed from the CRDs' ``openAPIV3Schema``: kubeflow/training-operator
  ``release-1.9`` (078ec30f) ``manifests/base/crds/kubeflow.org_pytorchjobs.yaml`` and
  ``kubeflow.org_tfjobs.yaml``, and kubeflow/mpi-operator (4954c997)
  ``manifests/base/kubeflow.org_mpijobs.yaml``. Unknown fields are problems, as
  ``kubectl apply --validate=strict`` makes them.
- :func:`webhook_problems` applies the operators' admission rules (training-operator
  ``pkg/webhooks/{pytorch,tensorflow}``, mpi-operator ``pkg/apis/kubeflow/validation``).
- :func:`pod_templates` deserializes every pod template into the ``kubernetes`` client's
  ``V1PodTemplateSpec`` and serializes it back: a field the models do not know is lost there.
- :class:`FakeKubernetes` (a :class:`omnidist.testing.FakeService`) serves custom-object
  create / get / delete, pod lists and pod logs.
"""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any, Optional, cast
from urllib.parse import unquote

from omnidist.kit import parse_duration
from omnidist.testing import FakeServer, FakeService, Harness
from omnidist.testing.fakeserver import Recorded, Response
from omnidist.testing.harness import hand_written
from omnidist_kubernetes import names
from omnidist_kubernetes.tables import (
    GROUP,
    JOB_NAME_LABEL,
    KINDS,
    LAUNCHER,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
)

# --- the CRDs' structural schema, for the fields omnidist writes --------------------------------

QUANTITY = re.compile(r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?"
                      r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
"""The CRDs' pattern for a quantity string (``x-kubernetes-int-or-string``)."""

STRING, INTEGER, BOOLEAN, QUANTITY_VALUE, ANY_OBJECT = "string", "integer", "boolean", "quantity", "object"


def obj(required: tuple[str, ...] = (), **properties: Any) -> dict[str, Any]:
    """An object with these properties (and no others)."""
    return {"type": "object", "properties": properties, "required": required}


def map_of(values: Any) -> dict[str, Any]:
    """An object of any keys (``additionalProperties``)."""
    return {"type": "map", "values": values}


def array(items: Any) -> dict[str, Any]:
    """A list."""
    return {"type": "array", "items": items}


TOLERATION = obj(effect=STRING, key=STRING, operator=STRING, tolerationSeconds=INTEGER, value=STRING)
CONTAINER = obj(
    ("name",), name=STRING, image=STRING, command=array(STRING), args=array(STRING),
    env=array(obj(("name",), name=STRING, value=STRING)),
    resources=obj(limits=map_of(QUANTITY_VALUE), requests=map_of(QUANTITY_VALUE)),
    volumeMounts=array(obj(("mountPath", "name"), name=STRING, mountPath=STRING)),
)
POD = obj(
    ("containers",), containers=array(CONTAINER), nodeSelector=map_of(STRING), tolerations=array(TOLERATION),
    serviceAccountName=STRING, imagePullSecrets=array(obj(name=STRING)),
    volumes=array(obj(("name",), name=STRING, emptyDir=obj(medium=STRING, sizeLimit=QUANTITY_VALUE))),
)
REPLICA = obj(replicas=INTEGER, restartPolicy=STRING, template=obj(
    metadata=obj(annotations=map_of(STRING), labels=map_of(STRING), name=STRING, namespace=STRING), spec=POD))
RUN_POLICY = obj(activeDeadlineSeconds=INTEGER, backoffLimit=INTEGER, cleanPodPolicy=STRING, managedBy=STRING,
                 schedulingPolicy=ANY_OBJECT, suspend=BOOLEAN, ttlSecondsAfterFinished=INTEGER)
METADATA = obj(("name",), name=STRING, namespace=STRING, labels=map_of(STRING), annotations=map_of(STRING))
SPECS: dict[str, dict[str, Any]] = {
    "MPIJob": obj(("mpiReplicaSpecs",), launcherCreationPolicy=STRING,
                  mpiImplementation={"type": "enum", "values": ("Intel", "MPICH", "OpenMPI")},
                  mpiReplicaSpecs=map_of(REPLICA), runLauncherAsWorker=BOOLEAN, runPolicy=RUN_POLICY,
                  slotsPerWorker=INTEGER, sshAuthMountPath=STRING),
    "PyTorchJob": obj(("pytorchReplicaSpecs",), elasticPolicy=ANY_OBJECT, nprocPerNode=STRING,
                      pytorchReplicaSpecs=map_of(REPLICA), runPolicy=RUN_POLICY),
    "TFJob": obj(("tfReplicaSpecs",), enableDynamicWorker=BOOLEAN, runPolicy=RUN_POLICY, successPolicy=STRING,
                 tfReplicaSpecs=map_of(REPLICA)),
}
"""Kind -> the schema of its ``spec`` (the ``metadata`` of the object is :data:`METADATA`)."""


def _walk(value: Any, schema: Any, path: str, found: list[str]) -> None:
    kind = schema if isinstance(schema, str) else schema["type"]
    if value is None:
        found.append(f"{path}: null (the API server drops it)")
    elif kind == STRING and not isinstance(value, str):
        found.append(f"{path}: must be of type string, got {value!r}")
    elif kind == INTEGER and (isinstance(value, bool) or not isinstance(value, int)):
        found.append(f"{path}: must be of type integer, got {value!r}")
    elif kind == BOOLEAN and not isinstance(value, bool):
        found.append(f"{path}: must be of type boolean, got {value!r}")
    elif kind == QUANTITY_VALUE:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            found.append(f"{path}: must be of type integer,string, got {value!r}")
        elif isinstance(value, str) and not QUANTITY.match(value):
            found.append(f"{path}: {value!r} does not match the quantity pattern")
    elif kind == "enum" and value not in schema["values"]:
        found.append(f"{path}: {value!r} is not one of {', '.join(schema['values'])}")
    elif kind in ("object", "map") and not isinstance(value, Mapping):
        found.append(f"{path}: must be of type object, got {value!r}")
    elif kind == "array" and not isinstance(value, list):
        found.append(f"{path}: must be of type array, got {value!r}")
    elif kind == "map":
        for key, item in value.items():
            _walk(item, schema["values"], f"{path}.{key}", found)
    elif kind == "array":
        for i, item in enumerate(value):
            _walk(item, schema["items"], f"{path}[{i}]", found)
    elif kind == "object" and not isinstance(schema, str):
        for key in schema["required"]:
            if key not in value:
                found.append(f"{path}.{key}: required")
        for key, item in value.items():
            if key not in schema["properties"]:
                found.append(f"{path}.{key}: unknown field (pruned by the API server, refused by "
                             "kubectl apply --validate=strict)")
            else:
                _walk(item, schema["properties"][key], f"{path}.{key}", found)


def schema_problems(job: Mapping[str, Any]) -> list[str]:
    """What the CRD schema refuses or drops in ``job`` (empty when it passes)."""
    kind = KINDS.get(job.get("kind"))
    if kind is None:
        return [f"kind: {job.get('kind')!r} is not PyTorchJob, TFJob or MPIJob"]
    top = obj(("apiVersion", "kind", "metadata", "spec"), apiVersion=STRING, kind=STRING, metadata=METADATA,
              spec=SPECS[kind.kind])
    found: list[str] = []
    _walk(job, top, "", found)
    if job.get("apiVersion") != kind.api_version:
        found.append(f"apiVersion: {job.get('apiVersion')!r}, expected {kind.api_version}")
    return [p.lstrip(".") for p in found]


def webhook_problems(job: Mapping[str, Any]) -> list[str]:
    """What the operator's admission rules refuse in ``job`` (empty when it passes)."""
    kind = KINDS[job["kind"]]
    spec = job.get("spec", {})
    specs = spec.get(kind.replica_specs, {})
    name = job.get("metadata", {}).get("name", "")
    found = []
    if not names.DNS1035_LABEL.match(name) or len(name) > names.MAX_LABEL:
        found.append(f"metadata.name: {name!r} is not a DNS-1035 label")
    for rtype, body in specs.items():
        containers = body.get("template", {}).get("spec", {}).get("containers", [])
        if not containers or any(not c.get("image") for c in containers):
            found.append(f"{rtype}: every container needs an image")
        if kind.container and not any(c.get("name") == kind.container for c in containers):
            found.append(f"{rtype}: no container named {kind.container}")
        longest = f"{name}-{rtype.lower()}-{max(body.get('replicas', 1), 1) - 1}"
        if len(longest) > names.MAX_LABEL:
            found.append(f"{rtype}: pod and service name {longest!r} is longer than {names.MAX_LABEL}")
    if kind.kind == "PyTorchJob":
        found += [f"{t}: not a PyTorchJob replica type" for t in specs if t not in ("Master", "Worker")]
        if "Master" in specs and specs["Master"].get("replicas", 1) != 1:
            found.append("Master.replicas: must be 1")
    if kind.kind == "TFJob" and sum(t in ("Chief", "Master") for t in specs) > 1:
        found.append("tfReplicaSpecs: more than one Chief or Master")
    if kind.kind == "MPIJob":
        found += _mpi_problems(spec, specs)
    return found


def _mpi_problems(spec: Mapping[str, Any], specs: Mapping[str, Any]) -> list[str]:
    found = [f"{t}: mpi-operator runs only Launcher and Worker" for t in specs if t not in ("Launcher", "Worker")]
    launcher = specs.get("Launcher")
    if launcher is None:
        found.append("Launcher: required")
    elif launcher.get("replicas", 1) != 1:
        found.append("Launcher.replicas: must be 1")
    if "Worker" in specs and specs["Worker"].get("replicas", 0) < 1:
        found.append("Worker.replicas: must be >= 1")
    for rtype, body in specs.items():
        if body.get("restartPolicy", "Never") not in ("Never", "OnFailure"):
            found.append(f"{rtype}.restartPolicy: Never or OnFailure")
    if spec.get("slotsPerWorker", 1) < 0:
        found.append("slotsPerWorker: must be >= 0")
    clean = spec.get("runPolicy", {}).get("cleanPodPolicy", "None")
    if clean not in ("All", "None", "Running"):
        found.append(f"runPolicy.cleanPodPolicy: {clean!r}")
    return found


def check_manifest(job: Mapping[str, Any]) -> dict[str, Any]:
    """Assert that a job passes what a cluster checks: the CRD schema, the operator's admission
    rules, and the client's models for every pod template (:func:`pod_templates`, returned)."""
    assert schema_problems(job) == [], schema_problems(job)
    assert webhook_problems(job) == [], webhook_problems(job)
    return pod_templates(job)


def compile_job(data: Mapping[str, Any], **overrides: Any) -> Any:
    """Compile a job given as plain data for Kubernetes, its ``backends.kubernetes`` block and
    ``overrides`` honoured, without reading any profile."""
    from omnidist.kit import Target, job_from_dict, settings_for
    from omnidist_kubernetes import KubernetesBackend, KubernetesSettings

    job = job_from_dict(data)
    resolved = settings_for(KubernetesSettings, "kubernetes", Target(backend="kubernetes"), job,
                                   overrides)
    return KubernetesBackend().compile(job, resolved)


def pod_templates(job: Mapping[str, Any]) -> dict[str, Any]:
    """Replica type -> its template as the ``kubernetes`` client's ``V1PodTemplateSpec``.

    Raises:
        AssertionError: a template does not deserialize, or loses a field on the way (unknown to
            the client's models).
    """
    from kubernetes.client import ApiClient

    client = ApiClient()
    kind = KINDS[job["kind"]]
    models = {}
    for rtype, body in job["spec"][kind.replica_specs].items():
        model = client._ApiClient__deserialize(body["template"], "V1PodTemplateSpec")
        back = client.sanitize_for_serialization(model)
        assert back == body["template"], f"{rtype}: the client's models do not hold {body['template']} ({back})"
        models[rtype] = model
    return models


# --- a fake API server ---------------------------------------------------------------------------------

OBJECT = r"^/apis/kubeflow\.org/(?P<version>[^/]+)/namespaces/(?P<ns>[^/]+)/(?P<plural>[a-z]+)"
PODS = r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods"

CONDITIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "Created": (("Created", "True"),),
    "Deleted": (("Created", "True"),),
    "Deleting": (("Created", "True"), ("Running", "True")),
    "Failed": (("Created", "True"), ("Running", "False"), ("Failed", "True")),
    "Restarting": (("Created", "True"), ("Restarting", "True")),
    "Running": (("Created", "True"), ("Running", "True")),
    "Succeeded": (("Created", "True"), ("Running", "False"), ("Succeeded", "True")),
    "Suspended": (("Created", "True"), ("Suspended", "True")),
}
"""The fake's state -> the ``status.conditions`` (type, status) the operator reports in it."""


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    """A ``Status`` object, as the API server answers errors."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


class FakeKubernetes(FakeService):
    """Kubeflow job create / get / delete and pod list / log; jobs keyed by (namespace, plural, name).

    A created job is checked the way the API server with strict field validation and the
    operators' webhooks check it (422 listing the problems), and steps through :attr:`timeline`
    one state per GET, its ``status.conditions`` written as the operator writes them. When a job
    starts running, the fake makes its pods (labelled like the operators' pods), each logging
    :attr:`output`; tests may add pods of their own (:meth:`add_pod`). DELETE marks the job
    deleting (``deletionTimestamp``); the next GET finds it gone.
    """

    ROUTES = {
        "create": ("POST", OBJECT + "$"),
        "get": ("GET", OBJECT + "/(?P<name>[^/]+)$"),
        "cancel": ("DELETE", OBJECT + "/(?P<name>[^/]+)$"),
        "pods": ("GET", PODS + "$"),
        "log": ("GET", PODS + "/(?P<pod>[^/]+)/log$"),
    }
    TIMELINE = ("Created", "Running", "Succeeded")
    STATE = ("_state",)
    RUNNING, FAILED, CANCELLING, CANCELLED = "Running", "Failed", "Deleting", "Deleted"
    TERMINAL = frozenset({"Deleted", "Failed", "Succeeded"})
    FAILURE = "pytorchjob default/bert-abcde is failed because 1 Master replica(s) failed."

    def __init__(self, server: FakeServer) -> None:
        self.pods: dict[str, list[dict[str, Any]]] = {}
        self.logs: dict[str, str] = {}
        self.output = "{tag}: step {step}\n"
        """What each pod of a running job logs (``{tag}`` is ``master-0``…, ``{step}`` its line)."""
        self.pending_reason = ""
        """When set (:meth:`unschedulable`), new jobs stay created and their pods pending."""
        super().__init__(server)

    def unschedulable(self, message: str) -> None:
        """New jobs never start: their pods stay ``Pending`` with ``PodScheduled=False``, reason
        ``Unschedulable`` and ``message`` (what the scheduler says when no node can take a pod)."""
        self.pending_reason = message
        self.timeline = ["Created"]

    def add_pod(self, namespace: str, job: str, replica_type: str, index: Optional[int], log: str = "",
                container: str = "pytorch", phase: str = "Running", restarts: int = 0) -> str:
        """Add a pod of ``job`` (labelled like the operators label theirs) with ``log`` as its log."""
        pod = f"{job}-{replica_type.lower()}" + ("" if index is None else f"-{index}")
        labels = {JOB_NAME_LABEL: job, REPLICA_TYPE_LABEL: replica_type.lower()}
        if index is not None:
            labels[REPLICA_INDEX_LABEL] = str(index)
        with self.lock:
            self.pods.setdefault(namespace, []).append({
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "namespace": namespace, "labels": labels},
                "spec": {"containers": [{"name": container, "image": "img"}]},
                "status": {"phase": phase, "containerStatuses": [
                    {"name": container, "image": "img", "imageID": "", "ready": True, "restartCount": restarts}]},
            })
            self.logs[f"{namespace}/{pod}"] = log
        return pod

    def stepped(self, key: Hashable, job: dict[str, Any]) -> None:
        """A job that starts running gets its pods, each with :attr:`output` for a log (an
        unschedulable one its pending pods when it is made)."""
        namespace, plural, name = cast(tuple[str, str, str], key)  # the server keys jobs by (namespace, plural, name)
        if self.pending_reason and not any(p["metadata"]["labels"][JOB_NAME_LABEL] == name
                                           for p in self.pods.get(namespace, [])):
            self.add_pod(namespace, name, "Master", 0, phase="Pending")
            self.pods[namespace][-1]["status"]["conditions"] = [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": self.pending_reason}]
            return
        if self.state(job) != self.RUNNING or any(p["metadata"]["labels"][JOB_NAME_LABEL] == name
                                                   for p in self.pods.get(namespace, [])):
            return
        kind = next(k for k in KINDS.values() if k.plural == plural)
        for rtype, body in job["spec"][kind.replica_specs].items():
            container = body["template"]["spec"]["containers"][0]["name"]
            indexes = [None] if rtype == LAUNCHER else range(body.get("replicas", 1))
            for index in indexes:
                tag = rtype.lower() if index is None else f"{rtype.lower()}-{index}"
                log = "".join(self.output.format(tag=tag, step=step) for step in range(2))
                self.add_pod(namespace, name, rtype, index, log, container=container)

    def render(self, job: Mapping[str, Any]) -> dict[str, Any]:
        """The job as the API server answers it: its conditions from its state."""
        body = copy.deepcopy({k: v for k, v in job.items() if k != "_state"})
        state = job["_state"]
        body["status"] = {"conditions": [
            {"type": kind, "status": status, "reason": f"Job{kind}",
             "message": self.error_message if kind == "Failed" else f"job is {kind.lower()}"}
            for kind, status in CONDITIONS[state]]}
        if state in (self.CANCELLING, self.CANCELLED):
            body["metadata"]["deletionTimestamp"] = "2025-01-01T00:10:00Z"
        return body

    def on_create(self, record: Recorded, match: re.Match[str]) -> Response:
        body = record.body if isinstance(record.body, dict) else {}
        kind = KINDS.get(body.get("kind"))
        if kind is None or kind.plural != match["plural"] or kind.version != match["version"]:
            return Response(404, status_body(404, "NotFound", f"the server could not find the requested resource "
                                                              f"({match['plural']}.{GROUP}/{match['version']})"))
        problems = schema_problems(body) + webhook_problems(body)
        if problems:
            message = f"{kind.kind}.{GROUP} is invalid: " + "; ".join(problems)
            return Response(422, status_body(422, "Invalid", message))
        name = body["metadata"]["name"]
        key = (match["ns"], match["plural"], name)
        with self.lock:
            if key in self.jobs:
                return Response(409, status_body(409, "AlreadyExists",
                                                 f'{match["plural"]}.{GROUP} "{name}" already exists'))
            stored = {**body, "metadata": {**body["metadata"], "namespace": match["ns"], "uid": str(uuid.uuid4()),
                                           "resourceVersion": "1", "creationTimestamp": "2025-01-01T00:00:00Z"}}
            self.add(key, stored)
            return Response(201, self.render(stored))

    def _missing(self, match: re.Match[str]) -> Response:
        return Response(404, status_body(404, "NotFound", f'{match["plural"]}.{GROUP} "{match["name"]}" not found'))

    def on_get(self, record: Recorded, match: re.Match[str]) -> Response:
        key = (match["ns"], match["plural"], match["name"])
        with self.lock:
            job = self.jobs.get(key)
            if job is None or self.state(job) == self.CANCELLED:
                self.jobs.pop(key, None)
                return self._missing(match)
            answer = self.render(job)
            self.advance(key)
        return Response(200, answer)

    def on_cancel(self, record: Recorded, match: re.Match[str]) -> Response:
        key = (match["ns"], match["plural"], match["name"])
        with self.lock:
            if key not in self.jobs or self.state(self.jobs[key]) == self.CANCELLED:
                return self._missing(match)
            if not self.cancelled(key):  # an ended job is deleted at once
                self.jobs.pop(key)
        return Response(200, {"kind": "Status", "apiVersion": "v1", "status": "Success",
                              "details": {"name": match["name"], "kind": match["plural"]}})

    def on_pods(self, record: Recorded, match: re.Match[str]) -> Response:
        selector = unquote((record.query.get("labelSelector") or [""])[0])
        wanted = dict(part.split("=", 1) for part in selector.split(",") if "=" in part)
        with self.lock:
            found = [p for p in self.pods.get(match["ns"], [])
                     if all(p["metadata"]["labels"].get(k) == v for k, v in wanted.items())]
        return Response(200, {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": found})

    def on_log(self, record: Recorded, match: re.Match[str]) -> Response:
        with self.lock:
            text = self.logs.get(f"{match['ns']}/{match['pod']}")
        if text is None:
            return Response(404, status_body(404, "NotFound", f'pods "{match["pod"]}" not found'))
        return Response(200, text)


# --- the harness the shared suites and benchmarks drive (omnidist.testing.Harness) ---------------

def _hand_built() -> Any:
    """A job document's PyTorchJob built with the ``kubernetes`` client's own models, as a user
    without omnidist writes it (the container and pod are models; the custom resource is a dict)."""
    from kubernetes import client as k8s

    from omnidist_kubernetes.tables import GKE_ACCELERATORS

    api = k8s.ApiClient()

    def build(doc: Any) -> dict[str, Any]:
        kind, count, env = hand_written(doc)

        def replica(replicas: int) -> dict[str, Any]:
            container = k8s.V1Container(
                name="pytorch", image=doc["image"], command=doc["command"], args=doc["args"],
                env=[k8s.V1EnvVar(name=k, value=v) for k, v in env.items()],
                resources=k8s.V1ResourceRequirements(limits={"nvidia.com/gpu": str(count)}))
            pod = k8s.V1PodSpec(containers=[container],
                                node_selector={"cloud.google.com/gke-accelerator": GKE_ACCELERATORS[kind]})
            return {"replicas": replicas, "restartPolicy": "OnFailure",
                    "template": api.sanitize_for_serialization(k8s.V1PodTemplateSpec(spec=pod))}

        return {"apiVersion": f"{GROUP}/v1", "kind": "PyTorchJob",
                "metadata": {"name": doc["name"], "labels": doc["labels"]},
                "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(doc["workers"]["replicas"])},
                         "runPolicy": {"activeDeadlineSeconds": parse_duration(doc["timeout"])}}}

    return build


def _direct(service: FakeService) -> Any:
    """``CustomObjectsApi.create_namespaced_custom_object`` of the hand-built PyTorchJob."""
    from kubernetes import client as k8s

    configuration = k8s.Configuration()
    configuration.host = service.url
    objects = k8s.CustomObjectsApi(k8s.ApiClient(configuration))
    build = _hand_built()
    return lambda doc: objects.create_namespaced_custom_object(GROUP, "v1", "default", "pytorchjobs", build(doc),
                                                               _request_timeout=60)


def check_request(request: Mapping[str, Any], scratch: Path) -> None:
    """The CRD schema, the operators' admission rules and the client's pod-template models
    (:func:`check_manifest`)."""
    check_manifest(request)


HARNESS = Harness(
    check_request=check_request,
    service=FakeKubernetes, key_file_setting="kubeconfig", sdk_module="kubernetes",
    settings=lambda url: {"api_server": url},
    sample_settings={"namespace": "ml", "queue": "team-a", "shm_size": "16Gi"},
    native_builder=_hand_built,
    direct_submit=_direct)
"""Kubernetes for the reliability suite, the fuzzing and ``bench/``."""
