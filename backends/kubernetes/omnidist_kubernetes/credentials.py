"""Where the Kubernetes client finds a cluster's credentials, looked up without the network
(``plan``, placement), and whether the cluster accepts them (``omnidist check``: its version is
read, nothing is created)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Optional

from omnidist.kit import Credentials
from omnidist_kubernetes.settings import KubernetesSettings

FIX = ("point KUBECONFIG (or the profile's kubeconfig) at the cluster's kubeconfig, e.g. `gcloud container "
       "clusters get-credentials CLUSTER`, `aws eks update-kubeconfig --name CLUSTER`, `az aks get-credentials`")
"""How to give the kubernetes backend credentials."""


def find(settings: KubernetesSettings, environ: Optional[Mapping[str, str]] = None) -> Credentials:
    """``api_server`` (no credentials), the ``kubeconfig`` setting, ``$KUBECONFIG``'s files,
    ``~/.kube/config``, or a pod's service account."""
    environ = os.environ if environ is None else environ
    if settings.api_server:
        return Credentials(found=True, where=f"api_server {settings.api_server}: none needed", fix=FIX)
    if settings.kubeconfig:
        return Credentials(found=os.path.isfile(settings.kubeconfig), where=settings.kubeconfig, fix=FIX)
    named = [p for p in (environ.get("KUBECONFIG") or "").split(os.pathsep) if p]
    for path in named or [os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".kube", "config")]:
        if os.path.isfile(path):
            return Credentials(found=True, where=path, fix=FIX)
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return Credentials(found=True, where="the pod's service account", fix=FIX)
    return Credentials(found=False, fix=FIX)


def check(settings: KubernetesSettings) -> Credentials:
    """:func:`find`, then the API server's version read with them."""
    def probe() -> object:  # the client's many errors all mean "not accepted" here
        from kubernetes import client as k8s

        from omnidist_k8s import api
        from omnidist_kubernetes.tables import NAME

        connection = api.api_client(api_server=settings.api_server, kubeconfig=settings.kubeconfig,
                                    context=settings.context, settings=f"backends.{NAME}", backend=NAME)
        return k8s.VersionApi(connection).get_code()

    return find(settings).checked(probe)
