"""The IR: the portable job as frozen values (:mod:`~omnidist.model.job`, its roles, data and
tuning), the vocabulary of features and accelerators, and the one converter that reads and writes
job files (:mod:`~omnidist.model.serde`). The floor above the runtime and the errors: it imports
nothing else of omnidist but :mod:`omnidist.codecache`, installed before the first class is built."""

from omnidist import codecache

codecache.install()  # before the first attrs class of the model is built (omnidist.codecache says why)
