# `make run` and `make test` work on a fresh clone: both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BACKENDS := $(patsubst %/pyproject.toml,%,$(sort $(wildcard backends/*/pyproject.toml)))  # every plugin folder
STAMP := $(VENV)/.omnidist-installed

.PHONY: setup run gpu-check test bench clean

setup: $(STAMP)

# setuptools says "Editable installation." once per editable package (advice about folders named
# like the package, not a problem); it is the only build message left, so it is filtered by its text.
$(STAMP): export PYTHONWARNINGS = ignore:Editable installation
$(STAMP): pyproject.toml requirements-dev.txt $(addsuffix /pyproject.toml,$(BACKENDS))
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[tuning]' $(addprefix -e ,$(BACKENDS)) -r requirements-dev.txt
	touch $(STAMP)

run: setup
	$(VENV)/bin/omnidist run examples/ddp/job.yaml

# On a machine with NVIDIA GPUs and a CUDA build of torch: the GPU-only tests (they skip elsewhere),
# then the example (one GPU per replica with nccl, or every replica on the CPU with a note).
gpu-check: setup
	nvidia-smi -L
	$(PY) -c "import torch; print('torch', torch.__version__, 'CUDA devices:', torch.cuda.device_count())"
	$(PY) -m pytest -q -p no:xdist -rs tests/runtime/test_init_torch.py tests/local/test_gpus.py
	$(VENV)/bin/omnidist run examples/ddp/job.yaml

# Lint first (ruff, configured in pyproject.toml; zero findings), then the suite. pytest exits 5
# when it collects no test; that is reported, not hidden as success or failure.
test: setup
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q -n auto; rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 1; fi; exit $$rc

bench: setup
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
