"""Reading a native spec in any of the forms people keep one in, and telling whose it is.

A native spec arrives as a mapping, a list of ``--worker-pool-spec`` strings, a YAML/JSON file,
a file holding the command line that submitted it (:class:`~omnidist.compiler.commandline.CommandLine`,
for the programs backends declare in ``command_programs``),
or an SDK job object, which is read through the SDK's own
serialization. :func:`detect_backend` names the backend from the content, asking each installed
backend whether the spec is its own; when none says so, the error lists the formats they read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional, Union

from omnidist.compiler import code_data, delowering
from omnidist.compiler.commandline import CommandLine, find_command_line
from omnidist.errors import ValidationError
from omnidist.model import documents, serde
from omnidist.model.limits import clipped_repr

Native = Union[Mapping[str, Any], Sequence[Any], str, "os.PathLike[str]", Any]
Spec = Union[Mapping[str, Any], Sequence[Any], CommandLine]

def formats() -> str:
    """Every native form omnidist reads, one line per installed backend (its ``native_formats``)."""
    from omnidist.backend import registry
    from omnidist.backend.contract import Imports

    drivers = {name: registry.get(name) for name in registry.installed()}
    found = {name: driver.native_formats for name, driver in drivers.items() if isinstance(driver, Imports)}
    return "; ".join(f"{name}: {' | '.join(forms)}" for name, forms in found.items() if forms)


def detect_backend(native: Spec) -> str:
    """Tell which backend a native spec belongs to from its content: the one installed backend
    whose :meth:`~omnidist.backend.contract.Backend.recognizes` says it is its own.

    Raises:
        ValidationError: when no backend (or more than one) recognizes it; the message lists the
            formats omnidist reads and asks for ``--from``.
    """
    from omnidist.backend import registry
    from omnidist.backend.contract import Imports

    importers = [d for d in map(registry.get, registry.installed()) if isinstance(d, Imports)]
    claims = [driver.name for driver in importers if driver.recognizes(native)]
    if len(claims) == 1:
        return claims[0]
    choices = "|".join(driver.name for driver in importers if driver.native_formats)
    if claims:
        raise ValidationError(f"this spec reads as {' and as '.join(claims)}; pass --from {'|'.join(claims)}")
    if isinstance(native, CommandLine):
        raise ValidationError(f"`{' '.join(native.argv[:4])} …` does not create a training job; omnidist reads "
                              f"{formats()}")
    raise ValidationError(f"not a native spec omnidist can tell; it reads {formats()}. Pass --from {choices} if it "
                          "is one of these")


def read_native(native: Native) -> tuple[Spec, Optional[str]]:
    """A native spec from any form it comes in, with the name of the file it came from.

    Raises:
        ValidationError: naming the file, for one that cannot be read or holds no spec.
    """
    if callable(getattr(native, "_to_dict", None)):  # an SDK object (some are mappings too)
        return delowering.sdk_object_to_dict(native), None
    if isinstance(native, (Mapping, list, tuple)):
        documents.check_shape(native)
        return native, None
    if isinstance(native, CommandLine):
        return native, None
    if not isinstance(native, (str, os.PathLike)):
        raise ValidationError(f"a native spec is a mapping, a file or an SDK job object, got {type(native).__name__}")
    source = str(native)
    text = documents.read_text(native)
    try:
        argv = find_command_line(text, _programs())
    except ValidationError as exc:
        raise exc.with_source(source) from None
    if argv is not None:
        return CommandLine(argv=argv, config=_config_of(argv, source), source=source), source
    data = serde.parse_yaml(text, source=source, documents=True)  # manifests may hold several
    if not isinstance(data, (Mapping, list)):
        raise ValidationError(f"holds no job spec (a mapping of keys, or a command line); omnidist reads "
                              f"{formats()}", source=source)
    return data, source


def _programs() -> set[str]:
    """The programs whose pasted command lines the installed backends read."""
    from omnidist.backend import registry

    return {program for name in registry.installed() for program in registry.get(name).command_programs}


def _config_of(argv: Sequence[str], source: str) -> Any:
    """The content of the file a command line's ``--config`` names, found next to ``source``."""
    config = None
    for i, word in enumerate(argv):
        if word.startswith("--config="):
            config = word.split("=", 1)[1]
        elif word == "--config" and i + 1 < len(argv):
            config = argv[i + 1]
    if config is None:
        return None
    path = Path(config) if Path(config).is_absolute() else Path(source).parent / config
    if code_data.path_kind(path) != code_data.FILE:
        raise ValidationError(f"the command's --config file {clipped_repr(config)[1:-1]} is not at "
                              f"{clipped_repr(str(path))[1:-1]}; put it there (or paste its content in place of "
                              "the command)", source=source, path="--config")
    return serde.read_document(path)



def native_parts(native: Native, source: Any) -> list[Any]:
    """The native request of each training job ``native`` holds, as ``source``'s importer reads
    each (what its ``world`` derives a World from); ``[None]`` when it cannot be read again."""
    from omnidist.backend import registry

    try:
        data, _ = read_native(native)
        return list(registry.importer(source).split_jobs(data))
    except ValidationError:
        return [None]
