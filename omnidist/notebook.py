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
    """An HTML table with every cell escaped; long cells wrap (a long word too), so a table is no
    wider than the output area it is shown in."""
    head = "".join(f"<th style='text-align:left'>{_escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td style='{CELL}'>{_cell(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    cap = f"<caption style='text-align:left'><b>{_escape(caption)}</b></caption>" if caption else ""
    return f"<table style='max-width:100%'>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


CELL = "text-align:left;vertical-align:top;overflow-wrap:break-word"
"""A cell's style: top-aligned, a word cut only where no break opportunity fits."""

KIND_COLOURS = {
    "exact": "#1a7f37", "inferred": "#0969da", "defaulted": "#0969da", "approximated": "#9a6700",
    "changed": "#cf222e", "dropped": "#82071e", "hint": "#6e7781",
}
"""A note kind or a migration's fidelity -> its badge colour: green carried over, blue filled in,
amber the same by other means, red a change in meaning or a loss, grey advice."""


def notes(lines: Iterable[str], title: str = "notes") -> str:
    """A list of note lines (escaped) under a bold title; empty without lines."""
    items = "".join(f"<li>{_escape(line)}</li>" for line in lines)
    return f"<div><b>{_escape(title)}</b><ul style='margin-top:0'>{items}</ul></div>" if items else ""


def badge(kind: str) -> Raw:
    """``kind`` as a coloured label (white on the kind's colour: readable on light and dark themes)."""
    colour = KIND_COLOURS.get(kind, "#6e7781")
    return Raw(f"<span style='background:{colour};color:#fff;border-radius:3px;padding:0 5px;"
               f"white-space:nowrap;font-size:90%'>{_escape(kind)}</span>")


def counts(kinds: Iterable[str], order: Iterable[str]) -> str:
    """``3 exact · 1 changed`` as badges, in ``order`` (kinds not in it last)."""
    found: dict[str, int] = {}
    for kind in kinds:
        found[kind] = found.get(kind, 0) + 1
    ranked = [k for k in order if k in found] + [k for k in found if k not in order]
    return " ".join(f"{found[k]} {badge(k)}" for k in ranked)


def _cell(value: Any) -> str:
    if value is None or value == "" or value == ():
        return "<span style='color:#888'>—</span>"
    if isinstance(value, Raw):
        return str(value)
    return _breakable(_escape(str(value)))


def _breakable(text: str) -> str:
    """Escaped ``text`` that may wrap after ``.``, ``_``, ``/``, ``=`` and ``,`` (field paths,
    variable lists, URLs) before a word has to be cut; never inside a number (``14.4 GB``,
    ``2/3 replicas``), which would read as two."""
    import re

    return re.sub(r"(?<!\d)[._/=,](?=\w)|[._/=,](?=[^\W\d])", lambda m: m.group(0) + "<wbr>", text)


class Raw(str):
    """Cell content that is already HTML."""


def pre(text: str) -> str:
    """Preformatted, escaped text, scrolling inside its own box (both ways) rather than widening
    the page."""
    return f"<pre style='max-height:30em;max-width:100%;overflow:auto'>{_escape(text)}</pre>"


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


HINT_PREFIX = "OMNIDIST_"
"""omnidist's own variables (the runtime's hints) start with this."""


def without_hints(value: Any) -> tuple[Any, int]:
    """``value`` for display without omnidist's ``OMNIDIST_*`` variables (a mapping's keys, or
    ``{"name": …}`` items of a list), and how many were left out."""
    if isinstance(value, Mapping):
        shown, left = {}, 0
        for key, item in value.items():
            if isinstance(key, str) and key.startswith(HINT_PREFIX):
                left += 1
                continue
            shown[key], n = without_hints(item)
            left += n
        return shown, left
    if isinstance(value, list):
        items, left = [], 0
        for item in value:
            name = item.get("name") if isinstance(item, Mapping) else None
            if isinstance(name, str) and name.startswith(HINT_PREFIX):
                left += 1
                continue
            shown, n = without_hints(item)
            items.append(shown)
            left += n
        return items, left
    return value, 0


def compiled_html(compiled: Any) -> str:
    """The request (secrets masked, omnidist's runtime hints left out of the view: the request's
    own fields come first) and its diagnostics, each kind a coloured badge."""
    shown, left = without_hints(mask_request(compiled.request))
    text = compiled.render(request=shown)
    hidden = (f"<p style='color:#6e7781;font-size:90%'>{left} <code>OMNIDIST_*</code> runtime hint variables "
              "are left out of this view; <code>.request</code> and <code>omnidist compile</code> have them</p>"
              if left else "")
    rows = [(badge(n.kind.value), n.field, n.message) for n in compiled.diagnostics]
    notes = table(rows, ("note", "field", "message"), caption="diagnostics") if rows else "<p>no diagnostics</p>"
    return f"<p><b>{_escape(compiled.backend)}</b> request</p>{pre(text)}{hidden}{notes}"


class SideBySide:
    """Values shown in columns of equal width that together fit the output area (each request
    scrolls inside its own column): ``side_by_side(*compiled.values())`` in a notebook cell."""

    def __init__(self, *values: Any) -> None:
        self.values = values

    def _repr_html_(self) -> str:
        columns = "".join(f"<div style='flex:1 1 0;min-width:0'>{_html_of(v)}</div>" for v in self.values)
        return f"<div style='display:flex;gap:16px;align-items:flex-start;max-width:100%'>{columns}</div>"

    def __repr__(self) -> str:
        return "\n\n".join(repr(v) for v in self.values)


def side_by_side(*values: Any) -> SideBySide:
    """Show ``values`` (compiled jobs, reports, jobs…) next to each other, fitting the width of the
    notebook's output area.

    Example:
        >>> side_by_side(*(omnidist.compile(job, backend=b) for b in ("cloud_a", "cloud_b")))  # doctest: +SKIP
    """
    return SideBySide(*values)


def _html_of(value: Any) -> str:
    render = getattr(value, "_repr_html_", None)
    return render() if render is not None else pre(repr(value))


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
