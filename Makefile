# llm-operator — the two commands that matter: `make demo` and `make test`. `make help` lists the rest.

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= .venv
BIN := $(CURDIR)/bin
PYTHON ?= python3
KUBECTL ?= $(BIN)/kubectl
KUSTOMIZE ?= $(BIN)/kustomize
OPERATOR_SDK ?= $(BIN)/operator-sdk
KUBECONFIG ?= $(CURDIR)/.cluster/kubeconfig
export KUBECONFIG

# How the operator runs locally: the same watches.yaml and roles/ the image ships, the venv's
# ansible-runner on PATH, and the settings of config/manager/manager.yaml: no fact gathering, only
# the ini inventory plugin (ansible-operator writes an ini inventory), Ansible verbosity 0.
OPERATOR_ANSIBLE_VERBOSITY ?= 0
OPERATOR_LOG ?= $(CURDIR)/.cluster/operator.log
OPERATOR_PIDFILE ?= $(CURDIR)/.cluster/operator.pid
OPERATOR_ENV = PATH="$(CURDIR)/$(VENV)/bin:$$PATH" ANSIBLE_GATHERING=explicit ANSIBLE_INVENTORY_ENABLED=ini \
	ANSIBLE_VERBOSITY_LLMMODEL_INFERENCE_AI_EXAMPLE_COM=$(OPERATOR_ANSIBLE_VERBOSITY) \
	ANSIBLE_COLLECTIONS_PATH="$(CURDIR)/$(VENV)/lib/python3.11/site-packages" \
	ANSIBLE_PYTHON_INTERPRETER="$(CURDIR)/$(VENV)/bin/python"
OPERATOR_ARGS ?= --watches-file watches.yaml --health-probe-bind-address 127.0.0.1:6789 \
	--metrics-bind-address 127.0.0.1:8686 --metrics-secure=false --max-concurrent-reconciles 2 \
	--zap-log-level info

-include mk/*.mk

##@ General
.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Set-up
.PHONY: tools
tools: ## Build the pinned Go tools into bin/ (only what is missing).
	@$(PYTHON) hack/build_tools.py

.PHONY: cluster-tools
cluster-tools:
	@$(PYTHON) hack/build_tools.py cluster

VENV_STAMP := $(VENV)/.installed
$(VENV_STAMP): requirements.txt $(wildcard puller/pyproject.toml runner-http-plugin/pyproject.toml)
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
	@if [ -f puller/pyproject.toml ]; then $(VENV)/bin/pip install --quiet --disable-pip-version-check -e ./puller; fi
	@if [ -f runner-http-plugin/pyproject.toml ]; then $(VENV)/bin/pip install --quiet --disable-pip-version-check -e ./runner-http-plugin; fi
	@touch $@

.PHONY: venv
venv: $(VENV_STAMP) ## Create .venv from the pinned requirements (no Galaxy: collections come from the ansible bundle).

##@ Local cluster
.PHONY: cluster-up cluster-down cluster-status
cluster-up: cluster-tools ## Start the local cluster (real control plane, kwok nodes); kubeconfig in .cluster/kubeconfig.
	@$(PYTHON) hack/cluster.py up

cluster-down: operator-stop ## Stop the local cluster; leaves no process or port behind.
	@$(PYTHON) hack/cluster.py down

cluster-status: ## Say whether the local cluster is up and list its nodes.
	@$(PYTHON) hack/cluster.py status

##@ Operator
.PHONY: install-crd run operator-start operator-stop
install-crd: cluster-tools ## Apply the CRD to the current cluster.
	$(KUBECTL) apply --server-side -f config/crd/bases/
	$(KUBECTL) wait --for=condition=Established crd/llmmodels.inference.ai.example.com --timeout=60s

run: venv tools install-crd ## Run the operator in the foreground against the current cluster (the real ansible-operator).
	$(OPERATOR_ENV) $(BIN)/ansible-operator run $(OPERATOR_ARGS)

operator-start: venv tools install-crd ## Start the operator in the background (log: .cluster/operator.log).
	@$(PYTHON) hack/run_operator.py start --log $(OPERATOR_LOG) --pidfile $(OPERATOR_PIDFILE) -- \
		env $(OPERATOR_ENV) $(BIN)/ansible-operator run $(OPERATOR_ARGS)

operator-stop: ## Stop the background operator.
	@$(PYTHON) hack/run_operator.py stop --pidfile $(OPERATOR_PIDFILE)

##@ Main job
.PHONY: demo
demo: venv tools cluster-up operator-start ## Local cluster + operator + the sample models, until they are Serving.
	@$(PYTHON) hack/demo.py

##@ Tests
.PHONY: test test-all lint testbed-test
test: ## Everything CI runs: tools, venv, lints, unit, puller and image tests, cluster, test-bed, admission, install and molecule tests.
	@started=$$(date +%s); rc=0; $(MAKE) --no-print-directory test-all || rc=$$?; \
	$(MAKE) --no-print-directory cluster-down || true; \
	echo "make test: finished in $$(( $$(date +%s) - started ))s with exit code $$rc"; exit $$rc

test-all: tools venv lint manifests-check unit-test puller-test images-test cluster-up testbed-test unit-cluster-test admission-test install-test molecule-test

lint: venv ## ansible-lint (production profile) and yamllint.
	$(VENV)/bin/yamllint -s .
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/ansible-lint --profile production

testbed-test: venv cluster-up ## Tests of the local cluster itself.
	$(VENV)/bin/pytest -q tests/testbed
