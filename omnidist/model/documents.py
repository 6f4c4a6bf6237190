"""Reading documents people hand omnidist (job files, native specs, configuration files) within
bounds, so that no input can make it hang, run out of memory or end in an internal error.

- :func:`read_text`: a regular file only (a FIFO or ``/dev/zero`` is refused at once, before a
  byte is read), at most :data:`~omnidist.model.limits.MAX_DOCUMENT_BYTES`, UTF-8;
- :func:`parse_yaml`: the safe loader, and before anything is built from a document its node
  graph is checked: no key twice in one mapping, at most
  :data:`~omnidist.model.limits.MAX_VALUES` values with every alias expanded (the billion laughs
  are counted, not built), nesting at most :data:`~omnidist.model.limits.MAX_DEPTH`, no integer
  longer than :data:`~omnidist.model.limits.MAX_NUMBER_DIGITS` digits;
- :func:`check_shape`: the same bounds for data that arrives already parsed (a mapping from the
  Python API).

Every refusal is a :class:`~omnidist.errors.ValidationError` naming the file, the place and the
limit.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from typing import Any, Optional

import yaml

from omnidist.errors import ValidationError
from omnidist.model.limits import MAX_DEPTH, MAX_DOCUMENT_BYTES, MAX_NUMBER_DIGITS, MAX_VALUES, clipped_repr

_Base: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built in: ~10x faster

_MERGE = "tag:yaml.org,2002:merge"
_INT = "tag:yaml.org,2002:int"


class _Refused(Exception):
    """A bound crossed while checking a node graph: the message and the mark of the node."""

    def __init__(self, message: str, mark: Any) -> None:
        super().__init__(message)
        self.mark = mark


def _size_text(count: int) -> str:
    return f"{count / (1024 * 1024):.1f} MiB" if count >= 1024 * 1024 else f"{count} bytes"


def read_text(path: str | os.PathLike[str], *, limit: int = MAX_DOCUMENT_BYTES) -> str:
    """The UTF-8 text of the regular file at ``path``.

    The file is opened without blocking and checked through the open descriptor, so a FIFO, a
    device (``/dev/zero``) or a folder is refused before anything is read, and no more than
    ``limit`` bytes are ever read.

    Raises:
        ValidationError: naming the file: missing, unreadable, not a regular file, bigger than
            ``limit``, or not UTF-8 (with the offset of the first bad byte).
    """
    source = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise ValidationError("no such file", source=source) from None
    except OSError as exc:
        raise ValidationError(f"cannot read the file ({exc.strerror or exc})", source=source) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file (a pipe, a device or a socket)"
            raise ValidationError(f"{what}: omnidist reads only regular files", source=source)
        if info.st_size > limit:
            raise ValidationError(f"{_size_text(info.st_size)} is more than the {_size_text(limit)} a document may "
                                  "hold", source=source)
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise ValidationError(f"cannot read the file ({exc.strerror or exc})", source=source) from None
    finally:
        os.close(fd)
    if total > limit:  # it grew while being read
        raise ValidationError(f"more than the {_size_text(limit)} a document may hold", source=source)
    data = b"".join(chunks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ValidationError(f"line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                              "save the file as UTF-8", source=source) from None


class _Loader(_Base):  # type: ignore[misc, valid-type]
    """The safe loader; documents are checked (:func:`_check_node`) before they are built."""


def _where(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


def _check_mapping(node: yaml.MappingNode) -> None:
    seen: dict[tuple[str, str], Any] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE:
            continue
        if (key.tag, key.value) in seen:
            found = seen[key.tag, key.value]
            first = f" (first at line {found.line + 1})" if found is not None else ""
            raise _Refused(f"key {clipped_repr(key.value)} appears twice in one mapping{first}; keep one",
                           key.start_mark)
        seen[key.tag, key.value] = key.start_mark


def _check_node(root: yaml.Node) -> None:
    """Bound a composed document before anything is built from it: duplicate keys, values with
    aliases expanded, nesting, integer digits. Iterative, and linear in the nodes (an alias is
    counted by the size of what it names, computed once)."""
    done: dict[int, tuple[int, int]] = {}  # id(node) -> (values, depth) of everything under it
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _INT and len(node.value) > MAX_NUMBER_DIGITS:
                raise _Refused(f"a number of {len(node.value)} digits; at most {MAX_NUMBER_DIGITS}", node.start_mark)
            done[key] = (1, 0)
            continue
        children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else node.value
        if finished:
            open_nodes.discard(key)
            values = 1 + sum(done[id(c)][0] for c in children)
            depth = 1 + max((done[id(c)][1] for c in children), default=0)
            if values > MAX_VALUES:
                raise _Refused(f"more than {MAX_VALUES} values once its aliases are expanded; a document may hold "
                               f"at most {MAX_VALUES}", node.start_mark)
            if depth > MAX_DEPTH:
                raise _Refused(f"lists and mappings nested more than {MAX_DEPTH} deep", node.start_mark)
            done[key] = (values, depth)
            continue
        if key in done:
            continue
        if isinstance(node, yaml.MappingNode):
            _check_mapping(node)
        open_nodes.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise _Refused("an alias inside the node it names (a recursive document)", child.start_mark)
            if id(child) not in done:
                stack.append((child, False))


def _build(loader: Any, node: yaml.Node) -> Any:
    _check_node(node)
    try:
        return loader.construct_document(node)
    except yaml.YAMLError:
        raise
    except Exception as exc:  # noqa: BLE001 - PyYAML's constructors fail on tagged values they cannot hold
        # (``!!timestamp x`` is an AttributeError, ``!!int x`` a ValueError): input, not a defect.
        raise _Refused(f"a value its tag cannot hold ({type(exc).__name__}: {clipped_repr(str(exc), 80)})",
                       getattr(node, "start_mark", None)) from None


def parse_yaml(text: str, *, source: Optional[str] = None, documents: bool = False) -> Any:
    """Parse YAML (JSON is a subset) with the safe loader, within the bounds of
    :mod:`omnidist.model.limits`; errors name the line and column.

    With ``documents``, a stream of several documents (``---`` between them, as in Kubernetes
    manifests) is read as the list of its non-empty documents; one document is read as itself.

    Raises:
        ValidationError: not valid YAML/JSON, or over a bound (naming it).
    """
    if len(text) > MAX_DOCUMENT_BYTES:
        raise ValidationError(f"{len(text)} characters is more than the {_size_text(MAX_DOCUMENT_BYTES)} a document "
                              "may hold", source=source)
    loader = _Loader(text)
    try:
        if not documents:
            node = loader.get_single_node()
            return None if node is None else _build(loader, node)
        found = []
        while loader.check_node():
            data = _build(loader, loader.get_node())
            if data is not None:
                found.append(data)
        return found[0] if len(found) == 1 else (found or None)
    except _Refused as exc:
        raise ValidationError(f"{_where(exc.mark)}{exc}", source=source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ValidationError(f"{_where(mark)}not valid YAML/JSON ({problem})", source=source) from None
    except (ValueError, RecursionError, OverflowError) as exc:  # a constructor's own limits
        raise ValidationError(f"not valid YAML/JSON ({type(exc).__name__}: {clipped_repr(str(exc))})",
                              source=source) from None
    finally:
        loader.dispose()


def check_shape(data: Any, *, source: Optional[str] = None) -> None:
    """The bounds of :func:`parse_yaml` for data already parsed (a mapping from the Python API):
    nesting and values (shared objects counted each time they appear), without recursion; and
    text that no file could hold (a lone surrogate, which no YAML or JSON writer can write back).

    Raises:
        ValidationError: over a bound, a container that holds itself, or text that is not Unicode.
    """
    done: dict[int, tuple[int, int]] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(data, False)]
    _check_text(data, source)
    while stack:
        value, finished = stack.pop()
        if not isinstance(value, (Mapping, list, tuple)):
            continue
        key = id(value)
        children = [c for pair in value.items() for c in pair] if isinstance(value, Mapping) else list(value)
        containers = [c for c in children if isinstance(c, (Mapping, list, tuple))]
        if finished:
            open_nodes.discard(key)
            values = 1 + len(children) - len(containers) + sum(done[id(c)][0] for c in containers)
            depth = 1 + max((done[id(c)][1] for c in containers), default=0)
            if values > MAX_VALUES:
                raise ValidationError(f"more than {MAX_VALUES} values; a document may hold at most {MAX_VALUES}",
                                      source=source)
            if depth > MAX_DEPTH:
                raise ValidationError(f"lists and mappings nested more than {MAX_DEPTH} deep", source=source)
            done[key] = (values, depth)
            continue
        if key in done:
            continue
        open_nodes.add(key)
        stack.append((value, True))
        for child in children:
            _check_text(child, source)
        for child in containers:
            if id(child) in open_nodes:
                raise ValidationError("a list or mapping that holds itself", source=source)
            if id(child) not in done:
                stack.append((child, False))


_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_text(value: Any, source: Optional[str]) -> None:
    if isinstance(value, str) and _SURROGATE.search(value):
        raise ValidationError(f"{clipped_repr(value)} is not Unicode text (it holds a lone surrogate)", source=source)
