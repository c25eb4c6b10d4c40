# The model puller (puller/): its venv, its tests and its benchmark. Included by the main Makefile.
#
# The puller ships in its own image (puller/Dockerfile: python:3.11-slim + puller/requirements.lock), so
# its tests run in a venv of exactly that lock, .venv-puller, not in the operator's .venv (which holds
# the operator image's older requests and PyYAML).

PULLER_VENV ?= .venv-puller
PYTHON ?= python3

PULLER_VENV_STAMP := $(PULLER_VENV)/.installed
$(PULLER_VENV_STAMP): puller/requirements.lock puller/pyproject.toml
	@rm -rf $(PULLER_VENV)
	$(PYTHON) -m venv $(PULLER_VENV)
	$(PULLER_VENV)/bin/pip install --quiet --disable-pip-version-check -r puller/requirements.lock pytest==9.2.0
	$(PULLER_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -e ./puller
	$(PULLER_VENV)/bin/pip check
	@touch $@

##@ Model puller
.PHONY: puller-venv puller-test bench-puller
puller-venv: $(PULLER_VENV_STAMP) ## Create .venv-puller: the puller image's lock, the puller, pytest.

puller-test: puller-venv ## pytest of the model puller (real HTTP servers on 127.0.0.1, no internet).
	$(PULLER_VENV)/bin/python -m pytest -q puller/tests

bench-puller: puller-venv ## Peak RSS and throughput of the puller on a 200 MiB file from a local server.
	$(PULLER_VENV)/bin/python bench/puller_rss.py --json bench/out/puller_rss.json
