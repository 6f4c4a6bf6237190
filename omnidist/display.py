"""How omnidist's values look to people: short reprs, HTML tables for notebooks, and the
masking of secret-looking environment values in every display and log line.

Masking never touches a request that is sent or printed as the request (``str(compiled)``,
``omnidist compile``): only displays (``_repr_html_``, notes, logs, reports) and what a cloud
says back. A cloud repeats what it was sent (a 400 quoting a value, a failed job's message, its
log lines), so the backends mask those with :func:`secret_values` of the request or of the job
the cloud returns, through :func:`mask_text` (:func:`mask_lines`, :func:`masking_errors`).
"""

from __future__ import annotations

import contextlib
import html
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
MASK = "••••••"
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


def is_secret(name: str) -> bool:
    """True for variable names that usually hold credentials."""
    return bool(SECRET_NAME.search(name))


def mask_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with secret-looking values replaced by a mask."""
    return {k: (MASK if is_secret(k) and v else v) for k, v in env.items()}


def mask_request(value: Any) -> Any:
    """A copy of a native request with secret-looking env values masked, whatever the shape:
    ``{"name": K, "value": V}`` entries (Vertex), ``{K: V}`` mappings (Azure ML) and
    ``"K=V"`` argv items (the legacy ``env`` wrapper)."""
    if isinstance(value, Mapping):
        if set(value) >= {"name", "value"} and isinstance(value.get("name"), str) and is_secret(value["name"]):
            return {**value, "value": MASK}
        return {k: (MASK if isinstance(k, str) and is_secret(k) and isinstance(v, str) else mask_request(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [mask_request(v) for v in value]
    if isinstance(value, str):
        match = _ASSIGNMENT.match(value)
        if match and is_secret(match[1]):
            return f"{match[1]}={MASK}"
    return value


MIN_SECRET_LENGTH = 4
"""Shorter values are not masked in free text: masking ``1`` or ``yes`` would garble every line."""

T = TypeVar("T")


def secret_values(native: Any) -> frozenset[str]:
    """The values of every secret-looking variable in a native request or job resource, in the
    shapes :func:`mask_request` knows: ``{"name": K, "value": V}`` entries (Vertex
    ``containerSpec.env``), ``{K: V}`` mappings (Azure ML ``environment_variables``, a job's
    ``env``) and ``"K=V"`` argv items (the legacy ``env K=V cmd`` wrapper)."""
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
            else:
                _collect(item, found)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect(item, found)
    elif isinstance(value, str):
        match = _ASSIGNMENT.match(value)
        if match and is_secret(match[1]):
            found.add(match[2])


def mask_text(line: str, secrets: Iterable[str]) -> str:
    """``line`` with every occurrence of the given secret values masked: the one masking function
    behind every log line, status message and error a cloud sends back. A value is also found
    as JSON writes it (a cloud quoting it in an escaped message); longer values go first, so a
    secret inside another is not left half shown."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret and len(secret) >= MIN_SECRET_LENGTH:
            line = line.replace(secret, MASK)
            escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
            if escaped != secret:
                line = line.replace(escaped, MASK)
    return line


def mask_lines(lines: Iterable[str], secrets: Iterable[str]) -> Iterator[str]:
    """Each line masked with :func:`mask_text`; an error raised while reading them is masked too."""
    secrets = frozenset(secrets)
    with masking_errors(secrets):
        for line in lines:
            yield mask_text(line, secrets)


def mask_status(status: T, secrets: Iterable[str]) -> T:
    """A :class:`~omnidist.backend.JobStatus` whose message, and its trials' messages, have the
    secret values masked."""
    import attrs

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
    if isinstance(getattr(exc, "message", None), str):
        exc.message = mask_text(exc.message, secrets)  # type: ignore[attr-defined]
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


def table(rows: Iterable[Iterable[Any]], header: Iterable[str], caption: str = "") -> str:
    """An HTML table with every cell escaped."""
    head = "".join(f"<th style='text-align:left'>{html.escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td style='text-align:left'>{_cell(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    cap = f"<caption style='text-align:left'><b>{html.escape(caption)}</b></caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value: Any) -> str:
    if value is None or value == "" or value == ():
        return "<span style='color:#888'>—</span>"
    if isinstance(value, Raw):
        return str(value)
    return html.escape(str(value))


class Raw(str):
    """Cell content that is already HTML."""


def pre(text: str) -> str:
    """Preformatted, escaped text."""
    return f"<pre style='max-height:30em;overflow:auto'>{html.escape(text)}</pre>"


def link(url: str, text: str = "") -> Raw:
    """A link that opens in a new tab."""
    return Raw(f"<a href='{html.escape(url, quote=True)}' target='_blank'>{html.escape(text or url)}</a>")


# --- per-value renderers (called from the values' _repr_html_) -----------------------------------

def job_html(job: Any) -> str:
    """Roles × replicas × accelerator × machine, then the program and environment."""
    from omnidist import lowering

    rows = []
    for role in lowering.effective_roles(job):
        machines = ", ".join(
            f"{backend}: {block['machine_types'][role.name.value]}"
            for backend, block in sorted(job.backends.items())
            if isinstance(block.get("machine_types"), Mapping) and role.name.value in block["machine_types"]
        )
        rows.append((role.name.value, role.replicas, role.accelerator, role.cpus, role.memory_gb,
                     machines or "chosen per backend", role.image))
    summary = table(rows, ("role", "replicas", "accelerator", "cpus", "memory GB", "machine", "image"),
                    caption=f"{job.name} ({job.framework.value})")
    program = table(
        [("command", " ".join(job.command)), ("args", " ".join(job.args)),
         ("env", ", ".join(f"{k}={v}" for k, v in mask_env(job.env).items())),
         ("processes per node", job.processes_per_node), ("interconnect", job.interconnect.value),
         ("spot", job.spot), ("timeout (s)", job.timeout), ("labels", job.labels or None),
         ("tuning", str(job.tuning) if job.tuning is not None else None)],
        ("field", "value"),
    )
    return summary + program


def compiled_html(compiled: Any) -> str:
    """The request (secrets masked) and its diagnostics."""
    from omnidist import serde

    shown = mask_request(compiled.request)
    text = serde.dump_yaml(shown) if compiled.format == "yaml" else serde.dump_json(shown)
    notes = table([(n.kind.value, n.field, n.message) for n in compiled.diagnostics], ("note", "field", "message"),
                  caption="diagnostics") if compiled.diagnostics else "<p>no diagnostics</p>"
    return f"<p><b>{html.escape(compiled.backend)}</b> request</p>{pre(text)}{notes}"


def handle_html(handle: Any) -> str:
    """Backend, id, last known state and the console link; a tuning job's trials and best trial."""
    status = handle.last_status
    state = f"{status.state.value}" + (f" — {status.message}" if status and status.message else "") if status else "not polled yet (call .status())"
    summary = table([("backend", handle.backend), ("id", handle.id), ("state", state),
                     ("console", link(handle.url) if handle.url else None)], ("", ""))
    return summary + (trials_html(status) if status is not None else "")


def shown_value(value: Any) -> str:
    """A metric or parameter value as tables show it (floats to 6 significant digits)."""
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def trial_rows(status: Any) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """A tuning job's trials as ``(header, rows)``: trial, state, the metric, then one column per
    parameter (in the order the trials name them)."""
    names: dict[str, None] = {}
    for trial in status.trials:
        names.update(dict.fromkeys(name for name, _ in trial.parameters))
    header = ("trial", "state", status.metric or "value", *names)
    rows = []
    for trial in status.trials:
        values = dict(trial.parameters)
        rows.append((trial.id, trial.state.value, "" if trial.value is None else shown_value(trial.value),
                     *("" if n not in values else shown_value(values[n]) for n in names)))
    return header, rows


def best_line(status: Any) -> str:
    """``best: trial 3, accuracy=0.91: --lr=0.01 --layers=4`` (``""`` when no trial has a value)."""
    best = status.best
    if best is None:
        return ""
    flags = f": {best.flags}" if best.parameters else ""
    return f"best: trial {best.id}, {status.metric or 'value'}={shown_value(best.value)}{flags}"


def trials_html(status: Any) -> str:
    """A tuning job's trials table and best trial (``""`` for a plain job)."""
    if not status.trials:
        return ""
    header, rows = trial_rows(status)
    best = best_line(status)
    caption = f"trials ({len(rows)})"
    return table(rows, header, caption=caption) + (f"<p><b>{html.escape(best)}</b></p>" if best else "")


def status_html(status: Any) -> str:
    """The state and message; a tuning job's trials and best trial."""
    rows = [("state", status.state.value), ("native state", status.native_state or None),
            ("message", status.message or None)]
    return table(rows, ("", "")) + trials_html(status)


def short_job_repr(job: Any) -> str:
    """``DistributedJob('name', pytorch, primary×1 V100:8, workers×4)``"""
    from omnidist import lowering

    roles = ", ".join(
        f"{r.name.value}×{r.replicas}" + (f" {r.accelerator}" if r.accelerator else "")
        for r in lowering.effective_roles(job)
    )
    return f"DistributedJob({job.name!r}, {job.framework.value}, {roles})"
