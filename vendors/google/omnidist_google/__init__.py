"""Google Cloud, once for every backend that runs on it: Compute Engine's machines
(:mod:`~omnidist_google.compute_engine`), its TPU slices (:mod:`~omnidist_google.tpu`), Google
Cloud's label rules (:mod:`~omnidist_google.google_labels`), credentials and Cloud Storage
staging (:mod:`~omnidist_google.google_cloud`), ``gcloud`` command lines
(:mod:`~omnidist_google.gcloud`), and where Google's prices come from
(:mod:`~omnidist_google.prices`: the shipped rows and the ``catalog refresh`` sources).

What it declares to the core (entry point ``omnidist.vendors``) is in :mod:`~omnidist_google.vendor`:
its price rows and lists, its image registries' hosts, its object stores' URI schemes and its
tools' credential files.

A vendor kit: it imports the core only through :mod:`omnidist.kit` and names no backend; the
backends that run on Google Cloud depend on it and import from it directly.
"""

GCLOUD = "gcloud"
"""The program whose command lines the Google backends read (their ``command_programs``); here, not
in :mod:`~omnidist_google.gcloud`, so a backend class names it without loading the command-line reader."""
