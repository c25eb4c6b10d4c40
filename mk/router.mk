# The router (router/): its venv, its tests and its benchmark. Included by the main Makefile.
#
# The router ships in its own image (router/requirements.lock on python:3.11-slim), so its tests run
# in a venv of exactly that lock, .venv-router, not in the operator's .venv.

ROUTER_VENV ?= .venv-router
PYTHON ?= python3

ROUTER_VENV_STAMP := $(ROUTER_VENV)/.installed
$(ROUTER_VENV_STAMP): router/requirements.lock router/pyproject.toml
	$(call component_venv,$(ROUTER_VENV),router)

##@ Router
.PHONY: router-venv router-test router-cluster-test bench-router
router-venv: $(ROUTER_VENV_STAMP) ## Create .venv-router: the router image's lock, the router, pytest.

router-test: router-venv ## pytest of the router (a fake OpenAI server and real sockets on 127.0.0.1 only).
	$(ROUTER_VENV)/bin/python -m pytest -q router/tests

router-cluster-test: router-venv ## The router's watch of LLMModels and EndpointSlices against the local cluster (needs cluster-up).
	$(ROUTER_VENV)/bin/python -m pytest -q router/tests_cluster

bench-router: router-venv ## The router against direct and nginx on loopback: added latency, requests and chunks per CPU-second; two replicas against one.
	@$(PYTHON) hack/apt_install.py bench-router
	$(ROUTER_VENV)/bin/python bench/router_bench.py --json bench/out/router.json $(BENCH_ROUTER_ARGS)
