"""The typed feature vocabulary, refusals in a backend's words, and structured notes
(omnidist/features.py, the Capabilities and Note of omnidist/backend.py, the error of errors.py)."""

from __future__ import annotations

import pickle

import pytest

from omnidist.backend import registry
from omnidist.backend.contract import Capabilities
from omnidist.backend.values import Note, NoteKind
from omnidist.errors import NotPortableError, Refusal, UnsupportedFeatureError
from omnidist.migration.plan import used
from omnidist.model.features import Feature, NoteCode
from omnidist.model.job import Framework, job_from_dict
from omnidist.model.roles import RoleName

BASE = {"name": "j", "framework": "pytorch", "image": "i", "command": ["python", "t.py"], "primary": {}}


@pytest.mark.parametrize("extra, features", [
    ({}, set()),
    ({"evaluators": {"replicas": 1}}, {Feature.EVALUATORS}),
    ({"evaluators": {"replicas": 0}}, set()),
    ({"reduction_servers": {"replicas": "auto"}, "primary": {"accelerator": "V100:8"}, "workers": {"replicas": 1}},
     {Feature.REDUCTION_SERVERS, Feature.ACCELERATOR}),
    ({"spot": True, "interconnect": "infiniband"}, {Feature.SPOT, Feature.INFINIBAND}),
    ({"workers": {"replicas": 1, "cpus": 4}}, {Feature.PER_ROLE_MACHINES}),
    ({"workers": {"replicas": 1, "image": "other"}}, {Feature.PER_ROLE_PROGRAMS}),
    ({"env": {"A": "1"}, "processes_per_node": 2}, {Feature.ENV, Feature.PROCESSES_PER_NODE}),
    ({"command": []}, {Feature.COMMAND}),
])
def test_what_a_job_uses(extra, features):
    assert used(job_from_dict({**BASE, **extra})) == features


def test_capabilities_declare_features_from_their_flags_and_refusals():
    plain = Capabilities(roles=frozenset({RoleName.PRIMARY, RoleName.WORKERS}))
    assert Feature.EVALUATORS not in plain.features and Feature.SPOT not in plain.features
    assert {Feature.ENV, Feature.PER_ROLE_MACHINES, Feature.TUNING, Feature.CODE} <= plain.features
    worded = Capabilities(roles=frozenset(RoleName), spot=True, reduction_server=True,
                          refusals={Feature.TUNING: Refusal(message="no studies here.")})
    assert {Feature.EVALUATORS, Feature.REDUCTION_SERVERS, Feature.SPOT} <= worded.features
    assert Feature.TUNING not in worded.features, "a feature with words of refusal is one it lacks"
    assert Feature.NATIVE not in worded.features


def test_a_role_some_frameworks_have():
    capabilities = Capabilities(roles=frozenset(RoleName),
                                role_frameworks={RoleName.PARAMETER_SERVERS: frozenset({Framework.TENSORFLOW})})
    assert capabilities.has_role(RoleName.PARAMETER_SERVERS, Framework.TENSORFLOW)
    assert not capabilities.has_role(RoleName.PARAMETER_SERVERS, Framework.PYTORCH)
    assert capabilities.has_role(RoleName.EVALUATORS, Framework.PYTORCH)


def test_a_refusal_is_filled_from_the_job():
    refusal = Refusal(subject="{role}.{field}", message="one machine; {role} set their own {field}.",
                      hint="Remove `{role}.{field}`.")
    error = refusal.error(Feature.PER_ROLE_MACHINES, "cloud", role="workers", field="cpus")
    assert (error.feature, error.subject, error.backend) == (Feature.PER_ROLE_MACHINES, "workers.cpus", "cloud")
    assert (
        str(error)
        == "cloud cannot express workers.cpus: one machine; workers set their own cpus. Remove `workers.cpus`."
    )
    assert Refusal(message="none.").error(Feature.SPOT, "cloud").subject == "spot"


@pytest.mark.parametrize("words, feature", [
    ("evaluators", Feature.EVALUATORS),
    ("interconnect: infiniband", Feature.INFINIBAND),
    ("accelerator H100", Feature.ACCELERATOR),
    ("workers.cpus", Feature.PER_ROLE_MACHINES),
    ("parameter_servers.env", Feature.PER_ROLE_PROGRAMS),
    ("tuning.parameters.lr", Feature.TUNING),
    ("CPU-only workers", Feature.OTHER),
])
def test_a_feature_named_in_words_is_read_by_its_first_word(words, feature):
    error = UnsupportedFeatureError(words, "cloud", "why.")
    assert (error.feature, error.subject) == (feature, words)
    assert str(error) == f"cloud cannot express {words}: why."


def test_the_errors_pickle_whole():
    """pytest-xdist and multiprocessing send errors between processes."""
    for error in (UnsupportedFeatureError(Feature.SPOT, "cloud", "no spot.", "Drop it.", subject="spot capacity"),
                  NotPortableError("accelerator K80", "retired.", "Pick another.")):
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and str(back) == str(error)
        assert (back.feature, back.subject, back.hint) == (error.feature, error.subject, error.hint)
    assert NotPortableError("job type pipeline", "no.").feature is Feature.NATIVE


def test_a_note_prints_its_sentence_only():
    note = Note(kind=NoteKind.DEFAULTED, field="primary.machine_type", message="n1-standard-8 fits",
                code=NoteCode.MACHINE_CHOSEN, data={"role": "primary", "machine": "n1-standard-8"})
    assert str(note) == "[defaulted] primary.machine_type: n1-standard-8 fits"
    assert note == Note(kind="defaulted", field="primary.machine_type", message="n1-standard-8 fits",
                        code="machine.chosen")
    assert {note} and note.data["machine"] == "n1-standard-8"


@pytest.mark.parametrize("name", sorted(registry.installed()))
def test_every_backend_words_only_features_it_declares_lacking(name):
    """A backend's refusals are for what it lacks, or lacks in some jobs (never its bare flags' opposite)."""
    capabilities = registry.get(name).capabilities
    for feature, refusal in capabilities.refusals.items():
        assert isinstance(feature, Feature) and isinstance(refusal, Refusal)
        assert refusal.message.endswith(".")
