"""The tables: sorted and documented, the instance types botocore's model allows, the catalog's
machines among them."""

from __future__ import annotations

from omnidist.testing.tables import table_problems
from omnidist_sagemaker import catalog, tables
from omnidist_sagemaker.testing import service_model


def test_every_table_is_sorted_and_documented():
    assert table_problems(tables) == []


def test_the_instance_types_are_botocores():
    assert set(catalog.INSTANCE_TYPES) <= set(service_model().shape_for("TrainingInstanceType").enum)
    assert list(catalog.INSTANCE_TYPES) == sorted(catalog.INSTANCE_TYPES)


def test_the_catalog_names_only_types_sagemaker_trains_on():
    known = set(catalog.INSTANCE_TYPES)
    assert {m.name for m in (*catalog.MACHINES.machines, *catalog.MACHINES.named_only)} <= known
    assert catalog.EFA <= known


def test_efa_with_rdma_is_on_the_big_gpu_types():
    rdma = {m.name for m in catalog.MACHINES.machines if m.rdma}
    assert {"ml.p4d.24xlarge", "ml.p5.48xlarge", "ml.p5e.48xlarge"} <= rdma
    assert "ml.p3.16xlarge" not in rdma and "ml.g5.48xlarge" not in rdma


def test_states_and_modes_are_the_models():
    model = service_model()
    assert set(tables.JOB_STATES) >= set(model.shape_for("TrainingJobStatus").enum)
    assert set(tables.SECONDARY_STATES) | {"Completed", "Failed", "MaxRuntimeExceeded", "MaxWaitTimeExceeded",
                                           "Stopped", "Stopping"} >= set(model.shape_for("SecondaryStatus").enum)
    assert set(tables.INPUT_MODES.values()) <= set(model.shape_for("TrainingInputMode").enum)
    assert set(tables.STRATEGIES.values()) <= set(model.shape_for("HyperParameterTuningJobStrategyType").enum)
