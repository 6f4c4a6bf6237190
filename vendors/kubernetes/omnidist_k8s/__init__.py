"""Kubernetes, once for every backend that runs on a cluster: the client set-up
(:mod:`~omnidist_k8s.api`), resource quantities (:mod:`~omnidist_k8s.quantities`), pod template
reading (:mod:`~omnidist_k8s.templates`), and what nodes say about their GPUs and spot capacity
(:mod:`~omnidist_k8s.nodes`).

A vendor kit: it imports the core only through :mod:`omnidist.kit` and names no backend; the
backends that run on Kubernetes depend on it and import from it directly.
"""
