"""Recovery (SPEC §15): how jobs end, and the watcher that restarts or moves them.

:mod:`omnidist.recovery.endings` classifies a job's ending from its portable status and each
backend's small tables of native facts; the watch loop lives beside it, and
:mod:`omnidist.recovery.checkpoints` copies the latest complete checkpoint before a move.
"""
