"""Hostile inputs, round four: importer inputs with keys that are not strings and numbers at a
float's extremes; price catalogs with non-finite prices; the ledger on a broken file."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from omnidist.cli import main

KUBEFLOW_LIMIT = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: x}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: img
            resources:
              limits: {hugepages-2Mi: LIMIT}
"""


@pytest.mark.parametrize("backend, text, where", [
    ("azure_ml", "1: 2\n", "1: unknown key"),
    ("azure_ml", "command: x\n? [a, b]\n: c\n", "not valid YAML"),
    ("ai_platform", "trainingInput: {1: 2}\n", "trainingInput.1: unknown key"),
    ("ai_platform", "trainingInput: {null: 2, 1.5: 3}\n", "unknown key"),
    ("vertex", "jobSpec: {1: 2}\n", "1"),
    ("sagemaker", "{1: 2}\n", "not a SageMaker job"),
    ("kubernetes", KUBEFLOW_LIMIT.replace("LIMIT", "-1.0e+308"), "must not be negative"),
    ("kubernetes", KUBEFLOW_LIMIT.replace("LIMIT", "1.0e+308"), "hugepages-2Mi"),
    ("kubernetes", KUBEFLOW_LIMIT.replace("LIMIT", "-5e-324"), "must not be negative"),
])
def test_keys_that_are_not_strings_and_extreme_numbers_are_clean_errors(tmp_path, backend, text, where):
    path = tmp_path / "native.yaml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["import", str(path), "--from", backend])
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output and where in result.output, result.output


def test_a_kubeflow_resource_named_by_a_number_is_a_clean_error(tmp_path):
    """Found by the bench fuzz campaign: ``requests: {1: 2}``."""
    path = tmp_path / "native.yaml"
    path.write_text(KUBEFLOW_LIMIT.replace("limits: {hugepages-2Mi: LIMIT}", "requests: {1: 2}"))
    result = CliRunner().invoke(main, ["import", str(path), "--from", "kubernetes"])
    assert result.exit_code == 2 and "the key 1 is not a string" in result.output, result.output
