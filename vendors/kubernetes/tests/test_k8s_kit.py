"""The Kubernetes kit on its own: the client set-up, the API server's messages, template readers."""

from __future__ import annotations

import pytest

from omnidist.kit import AuthenticationError, ConfigError, ValidationError
from omnidist_k8s import api, templates


def test_an_api_server_is_used_as_given_without_retries():
    client = api.api_client(api_server="http://127.0.0.1:8001/", kubeconfig=None, context=None, settings="s",
                            backend="b")
    assert client.configuration.host == "http://127.0.0.1:8001" and client.configuration.retries is False


def test_no_kubeconfig_anywhere_is_an_authentication_error(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(AuthenticationError, match="no kubeconfig and not inside a cluster.*set s.api_server"):
        api.api_client(api_server=None, kubeconfig=None, context=None, settings="s", backend="b")


def test_a_named_kubeconfig_that_cannot_be_used_is_a_config_error(tmp_path):
    broken = tmp_path / "config"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n")
    with pytest.raises(ConfigError, match="check s.kubeconfig and context"):
        api.api_client(api_server=None, kubeconfig=str(broken), context="nope", settings="s", backend="b")


def test_the_servers_message_is_read_from_its_status():
    class Exc:
        body = '{"kind": "Status", "message": "pytorchjobs \\"x\\" already exists"}'
        reason = "Conflict"

    assert api.status_message(Exc()) == 'pytorchjobs "x" already exists'
    Exc.body = "not json"
    assert api.status_message(Exc()) == "Conflict"


def test_template_readers_name_the_path():
    assert templates.mapping(None, "spec") == {} and templates.items(None, "x") == ()
    with pytest.raises(ValidationError) as caught:
        templates.string_map({"a": 1}, "spec.nodeSelector")
    assert caught.value.problems[0].path == "spec.nodeSelector.a"
