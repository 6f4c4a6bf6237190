"""Price data nobody should trust: a catalog with prices that are not finite, an ``OMNIDIST_PRICES``
file that is not UTF-8, not a file or far too long, and price lists that send hostile bodies
(endless, one byte at a time, not UTF-8, counts and prices that are no numbers, rows cut short).
Each is refused naming the file and line, or bounded, and never becomes a row."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from omnidist.cli import main
from omnidist.errors import ConfigError
from omnidist.placement import fetching, prices, refresh, vendors

HEADER = ",".join(prices.COLUMNS)


@pytest.mark.parametrize("cell", ["nan", "NaN", "inf", "-inf", "Infinity", "1e999"])
@pytest.mark.parametrize("column", ["on_demand", "spot"])
def test_a_price_that_is_not_finite_is_refused_naming_the_line(tmp_path, cell, column):
    path = tmp_path / "prices.csv"
    row = "gcp,vertex_ai,*,machine,n1-standard-4,CELL,,s,\n" if column == "on_demand" else \
        "gcp,vertex_ai,*,machine,n1-standard-4,1.0,CELL,s,\n"
    path.write_text(f"{HEADER}\ngcp,vertex_ai,*,machine,x,1,,s,\n{row.replace('CELL', cell)}")
    with pytest.raises(ConfigError, match=f"{path}: line 3: {column}: '{cell}' is not a price"):
        prices.read_rows(path)


def test_a_short_row_or_one_with_cells_to_spare_is_refused_naming_the_line(tmp_path):
    path = tmp_path / "prices.csv"
    for body in ("gcp,vertex_ai,*,machine\n", "gcp,vertex_ai,*,machine,x,1,,s,,extra\n"):
        path.write_text(f"{HEADER}\n{body}")
        with pytest.raises(ConfigError, match=f"{path}: line 2: expected 9 cells"):
            prices.read_rows(path)


def test_rows_that_are_not_finite_are_never_written(tmp_path):
    path = tmp_path / "prices.csv"
    good = prices.Row(cloud="gcp", service="vertex_ai", region="*", kind="machine", name="a", on_demand=1.0)
    prices.write_rows(path, [good, prices.Row(cloud="gcp", service="vertex_ai", region="*", kind="machine",
                                              name="b", on_demand=float("nan")),
                             prices.Row(cloud="gcp", service="vertex_ai", region="*", kind="machine", name="c",
                                        on_demand=1.0, spot=float("inf"))])
    assert prices.read_rows(path) == [good]


# --- OMNIDIST_PRICES ------------------------------------------------------------------------------

PROJECT = """[profiles.gcp]
backend = "vertex"
project = "p"
region = "us-central1"
[profiles.azure]
backend = "azure_ml"
subscription_id = "s"
resource_group = "r"
workspace = "w"
region = "eastus"
"""

JOB = "name: t4\nframework: pytorch\nimage: img:1\ncommand: [python, t.py]\nprimary: {accelerator: T4:1}\n"


@pytest.fixture
def project(isolated):
    (isolated / "omnidist.toml").write_text(PROJECT)
    (isolated / "job.yaml").write_text(JOB)
    return isolated


def plan(catalog: str, *args: str):
    return CliRunner().invoke(main, ["plan", "job.yaml", "-p", "gcp,azure", *args], env={"OMNIDIST_PRICES": catalog})


def test_plan_json_stays_json_when_prices_sum_past_a_float(project):
    """Finite prices whose sum overflows: the figure is unknown (null), never bare Infinity."""
    catalog = project / "prices.csv"
    catalog.write_text(f"{HEADER}\ngcp,vertex_ai,us-central1,accelerator,T4,1e308,1e308,s,\n"
                       "gcp,vertex_ai,us-central1,machine,n1-standard-4,1e308,1e308,s,\n")
    done = plan(str(catalog), "-o", "json")
    assert done.exit_code == 0, done.output
    rows = json.loads(done.stdout, parse_constant=lambda word: pytest.fail(f"{word} is not JSON"))
    vertex = next(row for row in rows if row["backend"] == "vertex")
    assert vertex["estimated_cost"] is None and vertex["price_per_hour"] is None


def test_plan_refuses_a_catalog_with_nan_naming_the_line(project):
    catalog = project / "prices.csv"
    catalog.write_text(f"{HEADER}\ngcp,vertex_ai,us-central1,accelerator,T4,nan,,s,\n")
    done = plan(str(catalog), "-o", "json")
    assert done.exit_code == 2 and f"{catalog}: line 2: on_demand: 'nan' is not a price" in done.output


def test_a_catalog_that_is_not_utf8_is_refused(project):
    catalog = project / "prices.csv"
    catalog.write_bytes(f"{HEADER}\ngcp,vertex_ai,*,machine,x\xff,1,,s,\n".encode("latin-1"))
    done = plan(str(catalog))
    assert done.exit_code == 2 and "not UTF-8" in done.output and str(catalog) in done.output, done.output


def test_a_fifo_is_refused_without_waiting_for_a_writer(project):
    fifo = project / "prices.fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    done = plan(str(fifo))
    assert done.exit_code == 2 and "not a regular file" in done.output, done.output
    assert time.monotonic() - started < 30


def test_a_million_row_catalog_is_refused_at_its_bound(tmp_path):
    path = tmp_path / "prices.csv"
    with open(path, "w") as handle:
        handle.write(HEADER + "\n")
        handle.writelines(f"gcp,vertex_ai,*,machine,m{n},1,,s,\n" for n in range(1_000_000))
    started = time.monotonic()
    with pytest.raises(ConfigError, match=f"more than {prices.MAX_CATALOG_ROWS:,} rows"):
        prices.read_rows(path)
    assert time.monotonic() - started < 30


def test_a_catalog_larger_than_the_bound_is_refused_before_reading(tmp_path, monkeypatch):
    monkeypatch.setattr(prices, "MAX_CATALOG_BYTES", 1000)
    path = tmp_path / "prices.csv"
    path.write_text(HEADER + "\n" + "gcp,vertex_ai,*,machine,x,1,,s,\n" * 100)
    with pytest.raises(ConfigError, match="bytes, more than the 1,000 read"):
        prices.read_rows(path)


# --- catalog refresh on hostile lists -------------------------------------------------------------

SKYPILOT = "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice\n"
AZURE = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,Generation\n"


class Hostile:
    """A price-list server whose answers tests set: a body, or a function that writes one."""

    def __init__(self) -> None:
        self.bodies: dict[str, bytes | Callable[[BaseHTTPRequestHandler], None]] = {}
        hostile = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                body = hostile.bodies.get(self.path.split("?")[0], b"")
                if callable(body):
                    try:
                        body(self)
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def hostile(monkeypatch) -> Iterator[Hostile]:
    found = Hostile()
    for _, source in vendors.sources():
        monkeypatch.setenv(source.env, found.url)
    found.bodies["/catalogs/v7/azure/vms.csv"] = (AZURE + "Standard_D2_v3,,,2,8,,0.096,0.0192,eastus,V1\n").encode()
    yield found
    found.server.shutdown()


def endless(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.end_headers()
    row = b",,,A100,1,A100,us-central1,us-central1-a,2.9,1.1\n" * 1000
    handler.wfile.write(SKYPILOT.encode())
    while True:
        handler.wfile.write(row)


def dripping(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.end_headers()
    for byte in (SKYPILOT * 100).encode():
        handler.wfile.write(bytes([byte]))
        handler.wfile.flush()
        time.sleep(0.05)


def old_rows(path) -> prices.Row:
    row = prices.Row(cloud="gcp", service="compute_engine", region="us-central1", kind="machine",
                     name="n1-standard-8", on_demand=0.1, source="earlier", date="2026-01-01")
    prices.write_rows(path, [row])
    return row


@pytest.mark.parametrize("body, words", [
    (endless, "larger than the 1,048,576 bytes read"),
    (dripping, "still reading after 1 s"),
    ((SKYPILOT + ",,,A100,1,A100,us-central1,a,2.9\xff,1.1\n").encode("latin-1"), "not UTF-8 text (byte"),
])
def test_a_list_that_cannot_be_read_keeps_its_earlier_rows_and_says_why(hostile, tmp_path, body, words):
    hostile.bodies["/catalogs/v7/gcp/vms.csv"] = body
    path = tmp_path / "prices.csv"
    old = old_rows(path)
    fetch = refresh.Fetcher()
    fetch.limit, fetch.deadline_s = 2**20, 1.0
    lines: list[str] = []
    started = time.monotonic()
    done = refresh.refresh(["skypilot"], output=path, say=lines.append, fetch=fetch)
    assert time.monotonic() - started < 20
    (failed,) = [line for line in lines if line.startswith("failed skypilot")]
    assert done.failed and words in failed, lines
    assert "its rows are left as they were" in failed
    assert {r.key: r for r in prices.read_rows(path)}[old.key] == old


def test_bad_counts_bad_prices_and_short_rows_are_skipped(hostile, tmp_path):
    hostile.bodies["/catalogs/v7/gcp/vms.csv"] = (
        SKYPILOT
        + ",,,A100,abc,A100,us-central1,us-central1-a,2.9,1.1\n"
        + ",,,A100,1e999,A100,us-central1,us-central1-a,2.9,1.1\n"
        + ",,,V100,0,V100,us-central1,us-central1-a,2.9,1.1\n"
        + "n1-standard-8,8,30,,,,us-central1,us-central1-a,nan,inf\n"
        + "n1-standard-4,4,15,,,,us-central1\n"
        + ",,,T4,1,T4,us-central1,us-central1-a,0.35,0.14\n").encode()
    path = tmp_path / "prices.csv"
    done = refresh.refresh(["skypilot"], output=path)
    assert not done.failed
    found = {r.key: r for r in prices.read_rows(path)}
    assert found["compute_engine", "us-central1", "accelerator", "T4"].on_demand == 0.35
    assert ("compute_engine", "us-central1", "accelerator", "A100") not in found
    assert ("compute_engine", "us-central1", "accelerator", "V100") not in found
    assert ("compute_engine", "us-central1", "machine", "n1-standard-4") not in found
    n1 = found["compute_engine", "us-central1", "machine", "n1-standard-8"]
    assert (n1.on_demand, n1.spot) == (None, None), "nan and inf are no prices"


def test_a_list_in_a_shape_it_does_not_document_keeps_its_earlier_rows(hostile, tmp_path):
    hostile.bodies["/offers/v1.0/aws/AmazonSageMaker/current/index.json"] = b'{"products": {"SKU1": {"attributes": 7}}, "terms": 7}'
    path = tmp_path / "prices.csv"
    old = old_rows(path)
    lines: list[str] = []
    done = refresh.refresh(["aws"], output=path, say=lines.append)
    assert done.failed and "failed aws" in lines[0] and "not in the documented shape" in lines[0], lines
    assert [r.key for r in prices.read_rows(path)] == [old.key]


@pytest.mark.parametrize("value, expected", [("2", 2), ("2.0", 2), ("", 1), (None, 1), ("abc", None), ("1e999", None),
                                             ("0", None), ("-1", None), ("1.5", None), ("nan", None), ("5000", None)])
def test_a_count_is_a_whole_number_in_range_or_none(value, expected):
    assert fetching.count(value) == expected
