"""The client loads only the job service of ``google.cloud.aiplatform_v1`` (omnidist_vertex/sdk.py);
the rest of the package loads when something asks for it. Each check runs in a fresh process,
since the test process has the whole package loaded already."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
from omnidist_vertex import VertexBackend, VertexSettings

settings = VertexSettings(project="p", region="us-central1", api_endpoint=sys.argv[1], credentials="anonymous")
driver = VertexBackend()
state = driver.status(sys.argv[2], settings).state.value
light = sorted(m for m in sys.modules if m.startswith("google.cloud.aiplatform_v1.services.")
               and m.count(".") == 4)
from google.cloud import aiplatform_v1  # elsewhere in the process: the whole package, one package
whole = aiplatform_v1.DatasetServiceClient.__name__
print(json.dumps({"state": state, "services": light, "whole": whole,
                  "same": aiplatform_v1.JobServiceClient is aiplatform_v1.services.job_service.JobServiceClient
                  and aiplatform_v1.CustomJob is aiplatform_v1.types.custom_job.CustomJob
                  and aiplatform_v1.types.CustomJob is aiplatform_v1.CustomJob}))
"""


def _probe(*args: str) -> dict:
    ran = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def test_status_loads_the_job_service_alone_and_the_package_stays_whole(vertex):
    from omnidist.kit import job_from_dict
    from omnidist_vertex import VertexBackend, VertexSettings

    settings = VertexSettings(project="p", region="us-central1", api_endpoint=vertex.url, credentials="anonymous")
    driver = VertexBackend()
    job = job_from_dict({"name": "light", "framework": "custom", "image": "gcr.io/p/t:1", "primary": {}})
    handle = driver.submit(driver.compile(job, settings), settings)
    seen = _probe(vertex.url, handle.id)
    assert seen["state"] == "queued"
    assert seen["services"] == ["google.cloud.aiplatform_v1.services.job_service"]
    assert seen["whole"] == "DatasetServiceClient" and seen["same"] is True
