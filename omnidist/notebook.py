"""How omnidist's values look to people: short reprs and HTML tables for notebooks.

The values call these from their ``_repr_html_`` (and ``DistributedJob`` from its ``__repr__``),
passing what they know; this module reads them by their attributes and imports nothing of
omnidist but :mod:`omnidist.secrets`, so every floor may use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from omnidist.secrets import mask_env, mask_request, mask_shapes


def _escape(text: str, quote: bool = True) -> str:
    """``html.escape`` of the text with the secrets it holds by their shape masked (a password in
    a URL, a token): every cell, caption, link and block a display shows goes through here.
    :mod:`html` is imported on first use: the values import this module to render themselves, and a
    command that never renders one (most) should not pay for its entity tables."""
    import html

    return html.escape(mask_shapes(text), quote=quote)

def table(rows: Iterable[Iterable[Any]], header: Iterable[str], caption: str = "") -> str:
    """An HTML table with every cell escaped."""
    head = "".join(f"<th style='text-align:left'>{_escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td style='text-align:left'>{_cell(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    cap = f"<caption style='text-align:left'><b>{_escape(caption)}</b></caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value: Any) -> str:
    if value is None or value == "" or value == ():
        return "<span style='color:#888'>—</span>"
    if isinstance(value, Raw):
        return str(value)
    return _escape(str(value))


class Raw(str):
    """Cell content that is already HTML."""


def pre(text: str) -> str:
    """Preformatted, escaped text."""
    return f"<pre style='max-height:30em;overflow:auto'>{_escape(text)}</pre>"


def link(url: str, text: str = "") -> Raw:
    """A link that opens in a new tab."""
    return Raw(f"<a href='{_escape(url, quote=True)}' target='_blank'>{_escape(text or url)}</a>")


# --- per-value renderers (called from the values' _repr_html_) -----------------------------------

def job_html(job: Any, roles: Iterable[Any]) -> str:
    """Roles × replicas × accelerator × machine, then the program and environment.

    Args:
        job: the job.
        roles: its effective roles (:func:`omnidist.model.roles.effective_roles`).
    """
    rows = []
    for role in roles:
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
    text = compiled.render(request=mask_request(compiled.request))
    notes = table([(n.kind.value, n.field, n.message) for n in compiled.diagnostics], ("note", "field", "message"),
                  caption="diagnostics") if compiled.diagnostics else "<p>no diagnostics</p>"
    return f"<p><b>{_escape(compiled.backend)}</b> request</p>{pre(text)}{notes}"


def handle_html(handle: Any) -> str:
    """Backend, id, last known state and the console link; a tuning job's trials and best trial."""
    status = handle.last_status
    state = (
        f"{status.state.value}" + (f" — {status.message}" if status and status.message else "")
        if status
        else "not polled yet (call .status())"
    )
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
    return table(rows, header, caption=caption) + (f"<p><b>{_escape(best)}</b></p>" if best else "")


def status_html(status: Any) -> str:
    """The state and message; a tuning job's trials and best trial."""
    rows = [("state", status.state.value), ("native state", status.native_state or None),
            ("message", status.message or None)]
    return table(rows, ("", "")) + trials_html(status)


def short_job_repr(job: Any, roles: Iterable[Any]) -> str:
    """``DistributedJob('name', pytorch, primary×1 V100:8, workers×4)`` from the job and its
    effective roles."""
    roles = ", ".join(
        f"{r.name.value}×{r.replicas}" + (f" {r.accelerator}" if r.accelerator else "")
        for r in roles
    )
    return f"DistributedJob({job.name!r}, {job.framework.value}, {roles})"
