"""The backend contract (:mod:`~omnidist.backend.contract`), the values that cross it
(:mod:`~omnidist.backend.values`), the settings every cloud backend shares
(:mod:`~omnidist.backend.settings`) and the discovery of installed backends
(:mod:`~omnidist.backend.registry`)."""
