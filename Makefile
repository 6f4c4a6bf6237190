# `make run` and `make test` work on a fresh clone: both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
VENDORS := $(patsubst %/pyproject.toml,%,$(sort $(wildcard vendors/*/pyproject.toml)))  # every vendor kit folder
BACKENDS := $(patsubst %/pyproject.toml,%,$(sort $(wildcard backends/*/pyproject.toml)))  # every plugin folder
# Two set-ups: `make run` installs only what the example needs (the core, whose local backend runs
# it, and torch, pinned once in requirements-dev.txt); `make setup` (and `make test`) everything:
# the core, every backend (editable) and the dev tools.
STAMP := $(VENV)/.omnidist-installed
RUN_STAMP := $(VENV)/.omnidist-run
TORCH := $(shell grep -E '^torch[=<>~ ]' requirements-dev.txt)

.PHONY: setup run gpu-check test bench clean

setup: $(STAMP)

# setuptools says "Editable installation." once per editable package (advice about folders named
# like the package, not a problem); it is the only build message left, so it is filtered by its text.
# Each step says what it installs first; pip's own lines are kept quiet (-q) but for torch, the one
# large download, whose lines and progress bar show that a first run is moving.
$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(RUN_STAMP): export PYTHONWARNINGS = ignore:Editable installation
$(RUN_STAMP): pyproject.toml requirements-dev.txt | $(VENV)/bin/python
	@echo "setup (for make run): omnidist and $(TORCH) into $(VENV), first time only"
	$(PY) -m pip install --quiet -e .
	$(PY) -m pip install --progress-bar on '$(TORCH)'
	touch $(RUN_STAMP)

$(STAMP): export PYTHONWARNINGS = ignore:Editable installation
$(STAMP): $(RUN_STAMP) pyproject.toml requirements-dev.txt $(addsuffix /pyproject.toml,$(VENDORS) $(BACKENDS))
	@echo "setup: every vendor kit and backend (editable) with its cloud SDK, and the dev tools, into $(VENV), first time only"
	$(PY) -m pip install --quiet -e '.[tuning]' $(addprefix -e ,$(VENDORS) $(BACKENDS)) -r requirements-dev.txt
	touch $(STAMP)

run: $(RUN_STAMP)
	$(VENV)/bin/omnidist run examples/ddp/job.yaml

# On a machine with NVIDIA GPUs whose Python already has a CUDA build of torch, offline: that Python
# (GPU_PYTHON=..., else the first of python3, python and .venv's whose torch sees a GPU) gets a venv
# of its own that sees its packages (--system-site-packages: its torch, not a CPU wheel), omnidist
# installed there editable without fetching anything (WHEELS=DIR: a folder of wheels for what that
# Python lacks, e.g. `pip download -d DIR 'setuptools>=77' cattrs tenacity tqdm pathspec` on a
# connected machine; bench/gpu_env.py says what is missing). Then the GPU tests (they skip
# elsewhere), the example (one GPU per replica with nccl, or the GPUs shared with gloo), and the
# GPU-sharing benchmark (bench/gpu_share.py).
GPU_VENV := .venv-gpu
GPU_PY := $(GPU_VENV)/bin/python
gpu-check:
	@found="$(GPU_PYTHON)"; test -n "$$found" || found=$$($(PYTHON) bench/gpu_env.py find python3 python $(PY)) || exit 1; \
	echo "gpu-check: $$found"; test -x $(GPU_PY) || $$found -m venv --system-site-packages $(GPU_VENV)
	@missing=$$($(GPU_PY) bench/gpu_env.py missing); \
	if [ -n "$$missing" ] && [ -z "$(WHEELS)" ]; then echo "gpu-check: $(GPU_PY) lacks $$missing; give WHEELS=DIR, a folder of their wheels"; exit 1; fi; \
	if [ -n "$$missing" ]; then $(GPU_PY) -m pip install --quiet --no-index --find-links $(WHEELS) $$missing; fi
	PYTHONWARNINGS="ignore:Editable installation" $(GPU_PY) -m pip install --quiet --no-index --no-deps --no-build-isolation \
		-e . $(addprefix -e ,$(VENDORS) $(BACKENDS))
	nvidia-smi -L
	$(GPU_PY) -c "import torch; print('torch', torch.__version__, 'CUDA devices:', torch.cuda.device_count())"
	$(GPU_PY) -m pytest -q -p no:xdist -rs tests/runtime/test_init_torch.py tests/runtime/test_devices.py tests/local/test_gpus.py
	$(GPU_PY) -m omnidist.cli run examples/ddp/job.yaml
	$(GPU_PY) bench/gpu_share.py

# The packages the type checker reads (configured in pyproject.toml's [tool.mypy]): the kit and the plugin side.
MYPY_FILES := omnidist/kit.py $(filter-out %.egg-info,$(wildcard backends/*/omnidist_* vendors/*/omnidist_* \
	templates/backend/omnidist_*))

# Lint first (ruff, configured in pyproject.toml; zero findings), then types (mypy; zero findings), then the
# suite. pytest exits 5 when it collects no test; that is reported, not hidden as success or failure.
test: setup
	$(VENV)/bin/ruff check .
	$(PY) -m mypy $(MYPY_FILES)
	$(PY) -m pytest -q -n auto; rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 1; fi; exit $$rc

bench: setup
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) $(GPU_VENV) build *.egg-info
