"""What a job may cost (``max_cost``) and what its attempts cost so far (SPEC §15).

An estimate is the job's ``timeout`` at the hourly price of what it runs on; an attempt's cost
is its billed time (from its submit to when omnidist saw it end, or now while it runs) at the
price recorded with it. Both are list-price estimates, as ``omnidist plan`` gives.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

from omnidist.errors import ValidationError


def over_max_cost(job: Any, rate: Optional[float], spent: float = 0.0) -> Optional[str]:
    """Why ``job`` may not run (again) at ``rate`` USD per hour under its ``max_cost``; ``None`` when it may.

    Args:
        job: the job.
        rate: USD per hour of what it runs on (``None``: unknown).
        spent: USD its earlier attempts cost.
    """
    limit = job.max_cost
    if limit is None:
        return None
    if not job.timeout:
        return f"max_cost {limit:g} USD needs a timeout to bound what the job costs: add timeout (e.g. 24h)"
    if rate is None:
        return (f"max_cost {limit:g} USD cannot be checked: the price of what the job runs on is unknown "
                "(omnidist catalog refresh, another profile, or no max_cost)")
    hours = job.timeout / 3600
    estimate = rate * hours
    if spent + estimate > limit:
        before = f"{spent:.2f} USD spent and " if spent else ""
        return (f"max_cost {limit:g} USD: {before}the job's timeout ({hours:g} h) at {rate:.2f} USD/h is "
                f"{estimate:.2f} USD more; raise max_cost, shorten timeout or pick a cheaper profile")
    return None


def check(job: Any, rate: Optional[float]) -> None:
    """Refuse a job whose estimate exceeds its ``max_cost``, or cannot be made (exit 2 naming ``max_cost``)."""
    why = over_max_cost(job, rate)
    if why:
        raise ValidationError(why, source=job.source, path="max_cost")


def rate_of(driver: Any, compiled: Any, settings: Any, spot: bool) -> Optional[float]:
    """USD per hour of a compiled job from the price catalog (``None``: unknown)."""
    from omnidist.placement import prices

    try:
        footprint = driver.footprint(compiled, settings)
        priced = None if footprint is None else prices.price(footprint, prices.load())
    except Exception:  # noqa: BLE001 - an unknown price is what max_cost then says
        return None
    if priced is None:
        return None
    return priced.spot if spot else priced.on_demand


def billed_hours(submitted_at: str, ended_at: Optional[str], now: Optional[str] = None) -> float:
    """Hours from a submit to its end (or to ``now`` while it runs)."""
    from omnidist.submission.ledger import now as stamp

    end = ended_at or now or stamp()
    return max(0.0, (datetime.fromisoformat(end) - datetime.fromisoformat(submitted_at)).total_seconds() / 3600)


def attempt_cost(record: Any) -> Optional[float]:
    """An attempt's estimated spend in USD (``None``: no price recorded, or no job made)."""
    if record.price_per_hour is None or record.id is None:
        return None
    return round(billed_hours(record.submitted_at, record.ended_at) * record.price_per_hour, 4)
