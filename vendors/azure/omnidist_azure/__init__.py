"""Azure, once for every backend that runs on it: credentials and the Resource Manager endpoints
(:mod:`~omnidist_azure.credentials`), azure-core's errors as omnidist's, blob storage reads and
its URLs (:mod:`~omnidist_azure.storage`), and where Azure's prices come from
(:mod:`~omnidist_azure.prices`).

What it declares to the core (entry point ``omnidist.vendors``) is in :mod:`~omnidist_azure.vendor`:
its price rows and lists, its image registries' hosts, its object stores' URI schemes and its
tools' credential files.

A vendor kit: it imports the core only through :mod:`omnidist.kit` and names no backend; the
backends that run on Azure depend on it and import from it directly.
"""
