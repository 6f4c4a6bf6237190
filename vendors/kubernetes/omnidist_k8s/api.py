"""The Kubernetes client set-up: an ``ApiClient`` from an API server URL, a kubeconfig (and its
context) or the pod's service account, with the client's own retries off; and the API server's
message out of an ``ApiException``. The ``kubernetes`` package is imported when called."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Optional

from omnidist.kit import AuthenticationError, ConfigError

NO_KUBECONFIG = ("no kubeconfig and not inside a cluster: get one with your cluster's tool (`gcloud container "
                 "clusters get-credentials`, `az aks get-credentials`, `aws eks update-kubeconfig`) or point "
                 "KUBECONFIG at one; or set {settings}.api_server to a `kubectl proxy`")
"""The error for a machine with no cluster credentials at all (``{settings}``: where the backend's
settings live)."""


def kubeconfig_paths() -> list[str]:
    """Where the client looks for a kubeconfig: the files ``KUBECONFIG`` lists, else ``~/.kube/config``."""
    listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return [os.path.expanduser(p) for p in listed] or [os.path.expanduser("~/.kube/config")]


def api_client(*, api_server: Optional[str], kubeconfig: Optional[str], context: Optional[str], settings: str,
               backend: str) -> Any:
    """A ``kubernetes.client.ApiClient``: for ``api_server`` (no credentials), else from the
    kubeconfig (its ``context``), else, inside a pod, from the pod's service account.

    Args:
        api_server: an API server URL (a ``kubectl proxy``), used without credentials.
        kubeconfig: the kubeconfig file (``None``: ``KUBECONFIG``, else ``~/.kube/config``).
        context: the kubeconfig's context (``None``: its current one).
        settings: where these settings live, for messages (``backends.NAME``).
        backend: the backend the errors are reported for.

    Raises:
        AuthenticationError: no kubeconfig anywhere and not inside a cluster (exit 1, like a cloud
            without credentials: the fix is to log in, not to edit the job).
        ConfigError: a kubeconfig or context that is named or present but cannot be used (exit 2).
    """
    from kubernetes import client, config

    configuration = client.Configuration()
    if api_server:
        configuration.host = api_server.rstrip("/")
    else:
        try:
            config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
        except (config.ConfigException, OSError) as exc:
            if kubeconfig or context:
                raise ConfigError(f"{backend}: cannot use the kubeconfig ({exc}); check {settings}.kubeconfig "
                                  "and context") from exc
            found = [path for path in kubeconfig_paths() if os.path.exists(path)]
            if found:
                raise ConfigError(f"{backend}: cannot use the kubeconfig {', '.join(found)} ({exc})") from exc
            try:
                config.load_incluster_config(client_configuration=configuration)
            except config.ConfigException:
                raise AuthenticationError(NO_KUBECONFIG.format(settings=settings), backend=backend) from exc
    configuration.retries = False  # the caller's retry policy is the only one
    return client.ApiClient(configuration)


def status_message(exc: Any) -> str:
    """The API server's message (a ``Status`` object's ``message``), else the HTTP reason."""
    try:
        body = json.loads(exc.body) if exc.body else {}
    except (TypeError, ValueError):
        body = {}
    if isinstance(body, Mapping):
        nested = body.get("error")
        text = body.get("message") or (nested.get("message") if isinstance(nested, Mapping) else None)
        if text:
            return str(text)
    return str(exc.reason or exc)
