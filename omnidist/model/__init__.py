"""The IR: the portable job as frozen values (:mod:`~omnidist.model.job`, its roles, data and
tuning), the vocabulary of features and accelerators, and the one converter that reads and writes
job files (:mod:`~omnidist.model.serde`). The floor above the runtime and the errors: it imports
nothing else of omnidist."""
