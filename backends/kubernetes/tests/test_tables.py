"""The tables and the small rules: quantities, names, ``$(VAR)`` escaping, GPU labels."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omnidist.kit import ACCELERATORS_BY_NAME, GPUS_BY_NAME, ValidationError
from omnidist_google.tpu import TPU_HOSTS
from omnidist_k8s import quantities
from omnidist_kubernetes import expansion, names, tables
from omnidist_kubernetes.testing import QUANTITY


@pytest.mark.parametrize(("text", "value"), [
    ("4", Decimal(4)), (4, Decimal(4)), ("500m", Decimal("0.5")), ("64Gi", Decimal(64 * 2**30)),
    ("200Mi", Decimal(200 * 2**20)), ("1G", Decimal(10**9)), ("1e3", Decimal(1000)), ("1E3", Decimal(1000)),
    ("1E", Decimal(10**18)), ("0.5", Decimal("0.5")), (".5", Decimal("0.5")), ("12k", Decimal(12000)),
])
def test_quantities_read_as_the_api_server_reads_them(text, value):
    assert quantities.parse(text, "q") == value


@pytest.mark.parametrize("text", [0.5, "lots", "1K", "5 Gi", "", True, None, [1], "-1"])
def test_what_is_no_quantity_is_refused_with_its_path(text):
    with pytest.raises(ValidationError) as caught:
        quantities.parse(text, "spec.x")
    assert caught.value.problems[0].path == "spec.x"


def test_a_fraction_says_how_to_write_it():
    with pytest.raises(ValidationError, match='write "500m"'):
        quantities.parse(0.5, "cpu")


@given(cpus=st.floats(min_value=0.001, max_value=512), memory=st.floats(min_value=0.001, max_value=4096))
def test_written_quantities_match_the_crd_pattern_and_read_back(cpus, memory):
    cpu, mem = quantities.cpu(cpus), quantities.memory(memory)
    assert QUANTITY.match(cpu) and QUANTITY.match(mem)
    assert quantities.to_cpus(quantities.parse(cpu, "c")) >= round(cpus, 3) - 1e-9
    back = quantities.to_gigabytes(quantities.parse(mem, "m"))
    assert quantities.memory(back) == mem  # whole MiB survive the round trip


@pytest.mark.parametrize(("key", "ok"), [
    ("team", True), ("app.kubernetes.io/name", True), ("a_b.c-d", True), ("Team", True), ("-team", False),
    ("team-", False), ("has space", False), ("x" * 64, False), ("Bad_Prefix/team", False), ("/team", False),
])
def test_label_keys(key, ok):
    assert (names.label_key(key) == "") is ok


@pytest.mark.parametrize(("value", "ok"), [("", True), ("v1.2_rc-3", True), ("x" * 63, True), ("x" * 64, False),
                                           ("a b", False), ("-a", False)])
def test_label_values(value, ok):
    assert (names.label_value(value) == "") is ok


def test_job_names_leave_room_for_pod_names():
    assert names.job_name("bert", "-worker-9") == ""
    assert "DNS-1035" in names.job_name("1bert", "-master-0")
    assert "keep the name to 54 characters" in names.job_name("b" * 60, "-master-0")


@given(text=st.text(alphabet="$()ab ", max_size=20))
def test_escaped_text_reaches_the_container_as_written(text):
    assert expansion.unescape(expansion.escape(text)) == (text, ())


def test_unescape_reports_references():
    assert expansion.unescape("$(MASTER_ADDR):$(MASTER_PORT) $$(x) $(not a var)") == (
        "$(MASTER_ADDR):$(MASTER_PORT) $(x) $(not a var)", ("MASTER_ADDR", "MASTER_PORT"))


NOT_ON_GKE = {"A10", "A10G", "L40S"}
"""Portable GPUs GKE's node pools offer no label for (Azure's A10, AWS's A10G and L40S instances)."""


def test_every_portable_accelerator_gke_offers_has_a_gke_label_and_back():
    assert set(tables.GKE_ACCELERATORS) == set(GPUS_BY_NAME) - NOT_ON_GKE
    assert {tables.GKE_PORTABLE[v] for v in tables.GKE_ACCELERATORS.values()} == set(GPUS_BY_NAME) - NOT_ON_GKE
    # TPUs: GKE runs the TPU VMs (v5e, v6e); v2 and v3 only ever ran as TPU Nodes
    assert set(tables.GKE_TPU_ACCELERATORS) == {h.accelerator for h in TPU_HOSTS}
    assert {tables.GKE_TPU_PORTABLE[v] for v in tables.GKE_TPU_ACCELERATORS.values()} == set(tables.GKE_TPU_ACCELERATORS)


def test_instance_types_name_portable_gpus():
    assert all(model in ACCELERATORS_BY_NAME and count >= 1 for model, count in tables.instance_gpus().values())
    assert tables.instance_gpus()["a3-megagpu-8g"] == ("H100-MEGA", 8) and tables.instance_gpus()["p5.48xlarge"] == (
        "H100", 8)


def test_kinds_and_replica_types():
    assert {k: v.api_version for k, v in tables.KINDS.items()} == {
        "MPIJob": "kubeflow.org/v2beta1", "PyTorchJob": "kubeflow.org/v1", "TFJob": "kubeflow.org/v1"}
    assert tables.KIND_FRAMEWORKS == {"MPIJob": "horovod", "PyTorchJob": "pytorch", "TFJob": "tensorflow"}
    assert tables.REPLICA_ROLES["TFJob"] == {"Chief": "primary", "Worker": "workers", "PS": "parameter_servers",
                                             "Evaluator": "evaluators"}
