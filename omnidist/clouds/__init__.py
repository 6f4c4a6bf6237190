"""Vendor knowledge two or more plugins share, kept once: Compute Engine's machines
(:mod:`~omnidist.clouds.compute_engine`), its TPU slices (:mod:`~omnidist.clouds.tpu`), Google
Cloud's label rules
(:mod:`~omnidist.clouds.google_labels`), credentials and Cloud Storage staging
(:mod:`~omnidist.clouds.google_cloud`), and ``gcloud`` command lines (:mod:`~omnidist.clouds.gcloud`).
Names no backend: plugins choose what applies to them."""
