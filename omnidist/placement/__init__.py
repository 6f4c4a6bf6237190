"""Where to run (SPEC §12): prices (:mod:`~omnidist.placement.prices`, rebuilt by
:mod:`~omnidist.placement.refresh`), ``omnidist plan`` (:mod:`~omnidist.placement.plan`), and
placement with failover across profiles (:mod:`~omnidist.placement.failover`), which records every
attempt in the job ledger (:mod:`omnidist.submission.ledger`)."""
