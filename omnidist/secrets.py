"""Masking secret-looking values in every display, log line and error omnidist shows.

Masking never touches a request that is sent or printed as the request (``str(compiled)``,
``omnidist compile``): only displays (``_repr_html_``, notes, logs, reports) and what a cloud
says back. A cloud repeats what it was sent (a 400 quoting a value, a failed job's message, its
log lines), so the backends mask those with :func:`secret_values` of the request or of the job
the cloud returns, through :func:`mask_text` (:func:`mask_lines`, :func:`masking_errors`).

A leaf: it imports nothing else of omnidist, so every floor may use it.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

import attrs

from omnidist.patterns import lazy_pattern

SECRET_NAME = lazy_pattern(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|PRIVATE|SIGNATURE|COOKIE|OAUTH"
    r"|CONNECTION_?STRING|CONN_?STR|(?:^|_)(?:PASS|PWD|AUTH|DSN|SAS)(?:_|$)",
    re.IGNORECASE,
)
"""Variable names that usually hold credentials (``API_KEY``, ``DB_PASSWORD``, ``MY_PASS``,
``AUTH``, ``SENTRY_DSN``, ``STORAGE_CONNECTION_STRING``…)."""


MASK = "••••••"

_SCHEME = r"\b[A-Za-z][A-Za-z0-9+.\-]*://"
_ENV_NAME = (r"(?:[A-Z][A-Z0-9_]*)?(?:PASS|PASSWD|PASSWORD|PWD|TOKEN|SECRET|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY"
             r"|CREDENTIALS?|CONNECTION_?STRING|DSN)[A-Z0-9_]*")
SECRET_SHAPES: tuple[re.Pattern[str], ...] = (
    # credentials in a URL: scheme://user:PASSWORD@host, scheme://TOKEN@host (a Sentry-style DSN)
    lazy_pattern(rf"(?P<keep>{_SCHEME}[^\s/:@'\"<>]*:)(?P<secret>[^\s@/'\"<>]+)(?=@)"),
    lazy_pattern(rf"(?P<keep>{_SCHEME})(?P<secret>[A-Za-z0-9_\-]{{16,}})(?=@)"),
    # connection strings and query strings: AccountKey=…; Password=…; sig=…&
    lazy_pattern(r"(?P<keep>\b(?:AccountKey|SharedAccessKey|SharedAccessSignature|AccessKey|Password|Pwd|sig|"
                 r"access_token|refresh_token|id_token|api_?key|client_secret|secret|token)=)"
                 r"(?P<secret>[^;&\s'\"<>]+)", re.IGNORECASE),
    # an Authorization header's credentials
    lazy_pattern(r"(?P<keep>\b(?:Bearer|Basic|Token)\s+)(?P<secret>[A-Za-z0-9._~+/\-]{12,}=*)"),
    # tokens by their well-known form
    lazy_pattern(r"(?P<secret>\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_\-]{20,}"
                 r"|xox[abposr]-[A-Za-z0-9\-]{10,}|sk-[A-Za-z0-9_\-]{20,}|[rs]k_live_[A-Za-z0-9]{16,}"
                 r"|(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{35}|ya29\.[0-9A-Za-z_\-]{10,}|hf_[A-Za-z0-9]{30,}"
                 r"|npm_[A-Za-z0-9]{36}|pypi-[A-Za-z0-9_\-]{50,}"
                 r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})\b)"),
    # an environment variable of a secret-looking name, as a message quotes it: DB_PASS=…, "HF_TOKEN": "…",
    # {"name": "API_KEY", "value": "…"} (upper-case names only: prose saying "password: see below" is not one)
    lazy_pattern(rf"(?P<keep>\b{_ENV_NAME}(?:=|\"?\s*:\s*\")|\"name\"\s*:\s*\"{_ENV_NAME}\"\s*,\s*\"value\"\s*:\s*\")"
                 r"(?P<secret>[^\s;&'\"<>,}]{4,})"),
    # a storage account key (64 bytes, base64) and a PEM private key
    lazy_pattern(r"(?P<secret>(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{86}==)"),
    lazy_pattern(r"(?P<secret>-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$))"),
)
"""Secrets by the shape of the value, whatever the variable is called: the part named ``secret``
is masked, the part named ``keep`` (a URL's scheme and user, a connection string's key) is shown."""

SHAPE_CLUES: tuple[tuple[str, ...], ...] = (
    ("://",),
    ("://",),
    ("=",),
    ("Bearer", "Basic", "Token"),
    ("gh", "github_pat_", "glpat-", "xox", "sk-", "k_live_", "AKIA", "ASIA", "AIza", "ya29.", "hf_", "npm_", "pypi-",
     "eyJ"),
    ("PASS", "PWD", "TOKEN", "SECRET", "KEY", "CREDENTIAL", "CONNECTION", "DSN"),
    ("==",),
    ("-----BEGIN ",),
)
"""Per shape (in :data:`SECRET_SHAPES`' order), text one of which every match holds, exactly as
written (each is a literal of the pattern that no alternative of it can avoid): a text holding none
cannot match, so the pattern is neither compiled nor run for it. Most lines (a note, a state) hold
no clue of the costliest patterns, which then cost nothing at start-up."""


def _shapes_in(text: str) -> Iterator[re.Pattern[str]]:
    """The shapes whose clues ``text`` holds (the only ones that can match it)."""
    for shape, clues in zip(SECRET_SHAPES, SHAPE_CLUES, strict=True):  # a shape without clues fails loudly
        if any(clue in text for clue in clues):
            yield shape


def secret_parts(text: str) -> list[str]:
    """The secrets :data:`SECRET_SHAPES` finds in ``text`` (a password in a URL, an ``AccountKey=``,
    a token of a well-known form)."""
    return [m["secret"] for shape in _shapes_in(text) for m in shape.finditer(text)]


def mask_shapes(text: str) -> str:
    """``text`` with every secret :data:`SECRET_SHAPES` finds masked (what comes before it, a URL's
    scheme and user or a connection string's key, is kept)."""
    for shape in _shapes_in(text):
        if shape.search(text):
            text = shape.sub(lambda m: (m.groupdict().get("keep") or "") + MASK, text)
    return text


_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


def is_secret(name: str) -> bool:
    """True for variable names that usually hold credentials."""
    return bool(SECRET_NAME.search(name))


def mask_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the values of secret-looking names replaced by a mask, and the secrets other
    values hold by their shape (a password in a URL) masked in place."""
    return {k: (MASK if is_secret(k) and v else mask_shapes(v) if isinstance(v, str) else v) for k, v in env.items()}


def mask_request(value: Any) -> Any:
    """A copy of a native request with secret-looking env values masked, whatever the shape:
    ``{"name": K, "value": V}`` entries, ``{K: V}`` mappings and
    ``"K=V"`` argv items (the legacy ``env`` wrapper)."""
    if isinstance(value, Mapping):
        if set(value) >= {"name", "value"} and isinstance(value.get("name"), str) and is_secret(value["name"]):
            return {**value, "value": MASK}
        return {k: (MASK if isinstance(k, str) and is_secret(k) and isinstance(v, str) else mask_request(v))
                for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(mask_request(v) for v in value)
    if isinstance(value, list):
        return [mask_request(v) for v in value]
    if isinstance(value, str):
        match = _ASSIGNMENT.match(value)
        if match and is_secret(match[1]):
            return f"{match[1]}={MASK}"
        return mask_shapes(value)
    return value


MIN_SECRET_LENGTH = 4
"""Shorter values are not masked in free text: masking ``1`` or ``yes`` would garble every line."""


T = TypeVar("T")


def secret_values(native: Any) -> frozenset[str]:
    """The values of every secret-looking variable in a native request or job resource, in the
    shapes :func:`mask_request` knows: ``{"name": K, "value": V}`` entries (a
    container spec's ``env``), ``{K: V}`` mappings (a request's environment variables, a job's
    ``env``) and ``"K=V"`` argv items (the legacy ``env K=V cmd`` wrapper); and every secret any
    of its strings holds by its shape (:func:`secret_parts`: a password in a database URL, in an
    argument as much as in a variable)."""
    found: set[str] = set()
    _collect(native, found)
    return frozenset(v for v in found if len(v) >= MIN_SECRET_LENGTH)


def _collect(value: Any, found: set[str]) -> None:
    if isinstance(value, Mapping):
        name = value.get("name")
        if isinstance(name, str) and isinstance(value.get("value"), str) and is_secret(name):
            found.add(value["value"])
        for key, item in value.items():
            if isinstance(key, str) and isinstance(item, str) and is_secret(key):
                found.add(item)
            _collect(item, found)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect(item, found)
    elif isinstance(value, str):
        match = _ASSIGNMENT.match(value)
        if match and is_secret(match[1]):
            found.add(match[2])
        found.update(secret_parts(value))


def mask_text(line: str, secrets: Iterable[str]) -> str:
    """``line`` with every occurrence of the given secret values masked: the one masking function
    behind every log line, status message and error a cloud sends back. A value is also found
    as JSON writes it (a cloud quoting it in an escaped message); longer values go first, so a
    secret inside another is not left half shown. Secrets the line holds by their shape
    (:func:`mask_shapes`) are masked too, known or not."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret and len(secret) >= MIN_SECRET_LENGTH:
            line = line.replace(secret, MASK)
            escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
            if escaped != secret:
                line = line.replace(escaped, MASK)
    return mask_shapes(line)


def mask_lines(lines: Iterable[str], secrets: Iterable[str]) -> Iterator[str]:
    """Each line masked with :func:`mask_text`; an error raised while reading them is masked too."""
    secrets = frozenset(secrets)
    with masking_errors(secrets):
        for line in lines:
            yield mask_text(line, secrets)


def mask_status(status: T, secrets: Iterable[str]) -> T:
    """A :class:`~omnidist.backend.values.JobStatus` whose message, and its trials' messages, have
    the secret values masked (read by its attributes: this module knows no class of omnidist)."""
    secrets = frozenset(secrets)

    def masked(value: Any) -> Any:
        message = getattr(value, "message", "")
        return attrs.evolve(value, message=mask_text(message, secrets)) if message else value

    trials = getattr(status, "trials", ())
    if not trials:
        return masked(status)  # type: ignore[no-any-return]
    best = getattr(status, "best", None)
    return attrs.evolve(masked(status), trials=tuple(masked(t) for t in trials),  # type: ignore[no-any-return]
                        best=None if best is None else masked(best))


def mask_error(exc: BaseException, secrets: Iterable[str]) -> BaseException:
    """``exc`` with the secret values masked in its message (in place, so its type, attributes
    and traceback stay; the chained SDK exception, shown only with ``--debug``, is kept)."""
    secrets = frozenset(secrets)
    exc.args = tuple(mask_text(a, secrets) if isinstance(a, str) else a for a in exc.args)
    for name in ("message", "detail"):  # a backend error's detail is what a placement's refusal line shows
        if isinstance(getattr(exc, name, None), str):
            setattr(exc, name, mask_text(getattr(exc, name), secrets))
    return exc


@contextlib.contextmanager
def masking_errors(secrets: Iterable[str]) -> Iterator[None]:
    """Mask the secret values in the message of any exception raised inside the block."""
    secrets = frozenset(secrets)
    try:
        yield
    except Exception as exc:
        mask_error(exc, secrets)
        raise
