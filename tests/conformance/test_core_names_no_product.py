"""The core names no cloud product or vendor, in code or in data (DESIGN "Vendors: what belongs to a
cloud lives with it"): what belongs to a cloud lives in its vendor kit (``vendors/``) or its backend
(``backends/``); what a container sees of a platform lives in ``omnidist/runtime/platforms/``. Every
file under ``omnidist/`` is read (code, data, templates), except ``runtime/platforms/`` and
``testing/`` (the fakes and harnesses that stand in for the clouds).

Three checks, strictest first:

- **data** (every file that is not Python: price rows, templates): no product name at all.
- **code** (string constants that are not docstrings, and identifiers): none, except the few
  entries of :data:`CODE_ALLOWED`, each with its reason.
- **prose** (docstrings and comments): :data:`PROSE_DEBT` holds, per file, the mentions that
  were left when the vendor kits moved out (examples that still name a product); a file may only
  go down. A file not listed may hold none.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "omnidist"
EXEMPT = ("runtime/platforms/", "testing/")
"""What a container sees of each platform, and the fakes of the clouds: both name products by design."""

PRODUCTS: dict[str, str] = {
    r"vertex": "a backend's product (Vertex AI): the backend's to name",
    r"sagemaker": "a backend's product (Amazon SageMaker)",
    r"azure": "a vendor and its backend's product (Azure, Azure ML, azureml:// URIs)",
    r"ai[ _]platform": "a backend's product (legacy AI Platform Training)",
    r"kubeflow": "the Kubernetes backend's operator (PyTorchJob, TFJob, MPIJob)",
    r"\baws\b|amazon": "a vendor (AWS): its kit's to name",
    r"google|\bgcp\b": "a vendor (Google Cloud)",
    r"\bgke\b|compute[ _]engine|gcloud": "Google Cloud's services and tool: the Google kit's",
    r"\bec2\b|cloudwatch|boto": "AWS's services and SDK: the AWS kit's",
    r"\beks\b|\baks\b": "the clouds' managed Kubernetes services",
    r"gs://|s3://|wasbs?://|abfss?://": "the vendors' object-store URI schemes",
}
"""Pattern (case-insensitive) -> why it is a product or vendor name. Left out on purpose:
``tpu`` (a portable accelerator kind of the job format, SPEC §13), ``nvidia``/``cuda`` (the
hardware and driver a container's runtime must name), ``kubernetes`` (vocabulary of the
infrastructure; the backend of that name is held by ``test_the_core_names_no_backend``)."""

PATTERN = re.compile("|".join(f"(?:{p})" for p in PRODUCTS), re.IGNORECASE)

CODE_ALLOWED: dict[str, tuple[int, str]] = {}
"""File -> (how many code mentions it may hold, why). Small on purpose: a new one needs a reason."""

PROSE_DEBT: dict[str, int] = {
}
"""File -> how many docstring and comment mentions it may still hold (may only go down)."""


def _docstring_ids(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            found.update(id(s.value) for s in body if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                         and isinstance(s.value.value, str))
    return found


def mentions(path: Path) -> tuple[list[str], list[str]]:
    """``(code, prose)``: the product names a file holds in code (or, for a data file, anywhere) and
    in its docstrings and comments."""
    text = path.read_text(errors="replace")
    if path.suffix != ".py":
        return [m.group(0) for m in PATTERN.finditer(text)], []
    tree = ast.parse(text)
    docs = _docstring_ids(tree)
    code, prose = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            (prose if id(node) in docs else code).extend(m.group(0) for m in PATTERN.finditer(node.value))
        elif isinstance(node, ast.Name | ast.Attribute | ast.alias | ast.FunctionDef | ast.ClassDef | ast.arg):
            name = getattr(node, "id", None) or getattr(node, "attr", None) or getattr(node, "name", None) \
                or getattr(node, "arg", None) or ""
            code.extend(m.group(0) for m in PATTERN.finditer(name))
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            prose.extend(m.group(0) for m in PATTERN.finditer(token.string))
    return code, prose


def core_files() -> list[Path]:
    return sorted(p for p in CORE.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and not p.relative_to(CORE).as_posix().startswith(EXEMPT))


def test_the_reader_tells_code_from_prose_and_reads_data(tmp_path):
    source = tmp_path / "m.py"
    source.write_text('"""Like Vertex."""\n# as on SageMaker\nURI = "gs://b"\ndef on_azure(): pass\n')
    code, prose = mentions(source)
    assert (sorted(code), prose) == (["azure", "gs://"], ["Vertex", "SageMaker"])
    data = tmp_path / "rows.csv"
    data.write_text("cloud,service\naws,amazon_sagemaker\n")
    assert mentions(data) == (["aws", "amazon", "sagemaker"], [])


def test_the_core_reads_its_own_files_code_and_data():
    files = {p.relative_to(CORE).as_posix() for p in core_files()}
    assert "kit.py" in files and "placement/prices.py" in files
    assert not any(f.startswith(EXEMPT) for f in files)
    assert not any(f.endswith(".csv") for f in files), "price rows are the vendor kits' (vendors/*/prices.csv)"


def test_no_data_file_of_the_core_names_a_product():
    found = {p.relative_to(CORE).as_posix(): mentions(p)[0] for p in core_files() if p.suffix != ".py"}
    assert {f: m for f, m in found.items() if m} == {}


def test_the_core_code_names_no_product_outside_its_small_allow_list():
    found = {}
    for path in core_files():
        if path.suffix != ".py":
            continue
        name = path.relative_to(CORE).as_posix()
        code, _ = mentions(path)
        allowed = CODE_ALLOWED.get(name, (0, ""))[0]
        if len(code) > allowed:
            found[name] = code
    assert found == {}, "product names in core code (move them to a vendor kit or backend): " + repr(found)


def test_the_allow_list_stays_tight():
    stale = {name: (allowed, len(mentions(CORE / name)[0])) for name, (allowed, _) in CODE_ALLOWED.items()
             if not (CORE / name).is_file() or len(mentions(CORE / name)[0]) < allowed}
    assert stale == {}, "lower these allowances to what the files hold now: " + repr(stale)
    assert all(reason.strip() for _, reason in CODE_ALLOWED.values())


def test_the_prose_debt_only_goes_down():
    grown = {}
    for path in core_files():
        if path.suffix != ".py":
            continue
        name = path.relative_to(CORE).as_posix()
        prose = mentions(path)[1]
        if len(prose) > PROSE_DEBT.get(name, 0):
            grown[name] = (PROSE_DEBT.get(name, 0), prose)
    assert grown == {}, "docstrings and comments that name products (reword as the vendor-neutral idea): " + \
        repr(grown)
