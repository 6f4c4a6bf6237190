"""Kubernetes' naming rules (apimachinery ``validation``): object names, label keys and values.

Each check returns what is wrong in words (empty when valid), so callers can name the field.
"""

from __future__ import annotations

import re

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
"""Namespaces (at most 63 characters)."""

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
"""Service accounts, secrets, label key prefixes (at most 253 characters)."""

DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
"""Training job names (the operators' webhooks) and the pods and services named after them."""

LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
"""A label key's name part, and a non-empty label value (at most 63 characters)."""

MAX_LABEL = 63
MAX_SUBDOMAIN = 253

LABEL_RULE = ("at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit")
KEY_RULE = f"a label key is an optional DNS subdomain prefix and '/', then a name of {LABEL_RULE}"


def dns_label(value: str) -> str:
    """Problems of a DNS-1123 label (a namespace)."""
    if len(value) > MAX_LABEL:
        return f"{value!r} has {len(value)} characters; at most {MAX_LABEL}"
    if not DNS1123_LABEL.match(value):
        return f"{value!r} is not a DNS label: lowercase letters, digits and '-', starting and ending with a " \
               "letter or digit"
    return ""


def dns_subdomain(value: str) -> str:
    """Problems of a DNS-1123 subdomain (a service account or secret name)."""
    if len(value) > MAX_SUBDOMAIN:
        return f"{value!r} has {len(value)} characters; at most {MAX_SUBDOMAIN}"
    if not DNS1123_SUBDOMAIN.match(value):
        return f"{value!r} is not a DNS subdomain: lowercase letters, digits, '-' and '.', starting and ending " \
               "with a letter or digit"
    return ""


def label_key(key: str) -> str:
    """Problems of a label (or annotation) key."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or dns_subdomain(prefix)):
        return f"the prefix {prefix!r} of {key!r} is not a DNS subdomain (lowercase letters, digits, '-', '.')"
    if len(name) > MAX_LABEL or not LABEL_NAME.match(name):
        return f"{key!r} is not a valid key: {KEY_RULE}"
    return ""


def label_value(value: str) -> str:
    """Problems of a label value (empty is valid)."""
    if value and (len(value) > MAX_LABEL or not LABEL_NAME.match(value)):
        return f"{value!r} is not a valid label value: empty, or {LABEL_RULE}"
    return ""


def job_name(name: str, longest_suffix: str) -> str:
    """Problems of a training job's name, given the longest pod name suffix it will get."""
    whole = name + longest_suffix
    if not DNS1035_LABEL.match(name):
        return f"{name!r} is not a DNS-1035 label: a lowercase letter, then lowercase letters, digits and '-', " \
               "ending with a letter or digit"
    if len(whole) > MAX_LABEL:
        return (f"its pods are named like {whole!r} ({len(whole)} characters), and pod and service names are at "
                f"most {MAX_LABEL}: keep the name to {MAX_LABEL - len(longest_suffix)} characters")
    return ""
