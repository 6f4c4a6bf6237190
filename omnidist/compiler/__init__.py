"""The shared translation toolkit, both directions: lowering (:mod:`~omnidist.compiler.lowering`)
and its inverse for importers (:mod:`~omnidist.compiler.delowering`), code and data rules
(:mod:`~omnidist.compiler.code_data`), the machine catalog logic (:mod:`~omnidist.compiler.catalog`)
and command lines (:mod:`~omnidist.compiler.commandline`). Pure: no SDK, no network."""
