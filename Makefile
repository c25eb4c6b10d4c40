# llm-operator — the two commands that matter: `make demo` and `make test`. `make help` lists the rest.

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= .venv
LINT_VENV ?= .venv-lint
BIN := $(CURDIR)/bin
PYTHON ?= python3
KUBECTL ?= $(BIN)/kubectl
KUSTOMIZE ?= $(BIN)/kustomize
OPERATOR_SDK ?= $(BIN)/operator-sdk
KUBECONFIG ?= $(CURDIR)/.cluster/kubeconfig
export KUBECONFIG
# The collections of requirements.yml, installed by `make collections` as the image installs them.
# Exported, so every run of the role (operator, Molecule, pytest, bench, ansible-lint) finds them here.
COLLECTIONS_DIR := $(CURDIR)/.cache/collections
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS_DIR)

# How the operator runs locally: the same watches.yaml and roles/ the image ships, the venv's
# ansible-runner on PATH, and the settings of config/manager/manager.yaml: no fact gathering, only
# the ini inventory plugin (ansible-operator writes an ini inventory), Ansible verbosity 0. No
# ansible.cfg, as in the image: a caller's ANSIBLE_CONFIG (Molecule exports its own) is dropped.
OPERATOR_ANSIBLE_VERBOSITY ?= 0
OPERATOR_LOG ?= $(CURDIR)/.cluster/operator.log
OPERATOR_PIDFILE ?= $(CURDIR)/.cluster/operator.pid
OPERATOR_ENV = -u ANSIBLE_CONFIG PATH="$(CURDIR)/$(VENV)/bin:$$PATH" ANSIBLE_GATHERING=explicit ANSIBLE_INVENTORY_ENABLED=ini \
	ANSIBLE_VERBOSITY_LLMMODEL_INFERENCE_AI_EXAMPLE_COM=$(OPERATOR_ANSIBLE_VERBOSITY) \
	ANSIBLE_COLLECTIONS_PATH="$(COLLECTIONS_DIR)" \
	ANSIBLE_PYTHON_INTERPRETER="$(CURDIR)/$(VENV)/bin/python"
# WATCHES: another watches file, e.g. one that sets role variables (tests/reliability does).
WATCHES ?= watches.yaml
OPERATOR_ARGS ?= --watches-file $(WATCHES) --health-probe-bind-address 127.0.0.1:6789 \
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

.PHONY: cluster-tools operator-tools
cluster-tools:
	@$(PYTHON) hack/build_tools.py cluster

# Only what running the operator locally needs (a cold `make demo` builds no Helm, operator-sdk or
# Prometheus).
operator-tools:
	@$(PYTHON) hack/build_tools.py operator

.PHONY: node-tools
node-tools: ## Build the real node's parts into bin/ (kubelet, kube-proxy, containerd, runc, CNI plugins, crictl; only what is missing).
	@$(PYTHON) hack/apt_install.py node-build node
	@$(PYTHON) hack/build_tools.py node

# The venv holds exactly the requirements: when they change it is made anew, so no package of an
# older pin (say the ansible 12 bundle) lingers and shadows what the image has.
VENV_STAMP := $(VENV)/.installed
$(VENV_STAMP): requirements.txt images/operator-base/requirements.txt runner-http-plugin/pyproject.toml
	@rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt -e ./runner-http-plugin
	$(VENV)/bin/pip check
	@touch $@

COLLECTIONS_STAMP := $(COLLECTIONS_DIR)/.installed
$(COLLECTIONS_STAMP): requirements.yml requirements-collections.txt hack/install_collections.py $(VENV_STAMP)
	$(VENV)/bin/python hack/install_collections.py --dest $(COLLECTIONS_DIR)
	@touch $@

LINT_VENV_STAMP := $(LINT_VENV)/.installed
$(LINT_VENV_STAMP): requirements-lint.txt
	@rm -rf $(LINT_VENV)
	$(PYTHON) -m venv $(LINT_VENV)
	$(LINT_VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-lint.txt
	@touch $@

.PHONY: venv collections lint-venv
venv: $(VENV_STAMP) $(COLLECTIONS_STAMP) puller-venv router-venv ## Create .venv (the image's packages + test tools), the collections, .venv-puller, .venv-router.

collections: $(COLLECTIONS_STAMP) ## Install the collections of requirements.yml into .cache/collections (from PyPI's ansible bundle; no Galaxy).

lint-venv: $(LINT_VENV_STAMP) ## Create .venv-lint (ansible-lint, yamllint) from requirements-lint.txt.

##@ Local cluster
# REAL_NODE=1: also a real node (containerd, kube-proxy, kubelet; hack/node.py) beside the kwok nodes.
REAL_NODE ?= 0
.PHONY: cluster-up cluster-down cluster-status
cluster-up: cluster-tools $(if $(filter 1,$(REAL_NODE)),node-tools) ## Start the local cluster (real control plane, kwok nodes; REAL_NODE=1 adds a real node); kubeconfig in .cluster/kubeconfig.
	@LLM_REAL_NODE=$(REAL_NODE) $(PYTHON) hack/cluster.py up

cluster-down: operator-stop ## Stop the local cluster; leaves no process or port behind.
	@$(PYTHON) hack/cluster.py down

cluster-status: ## Say whether the local cluster is up and list its nodes.
	@$(PYTHON) hack/cluster.py status

##@ Operator
.PHONY: install-crd run operator-start operator-stop
install-crd: cluster-tools ## Apply the CRD to the current cluster.
	$(KUBECTL) apply --server-side -f config/crd/bases/
	$(KUBECTL) wait --for=condition=Established crd/llmmodels.inference.ai.example.com --timeout=60s

run: $(VENV_STAMP) $(COLLECTIONS_STAMP) operator-tools install-crd ## Run the operator in the foreground against the current cluster (the real ansible-operator).
	$(PYTHON) hack/operator_supervisor.py -- env $(OPERATOR_ENV) $(BIN)/ansible-operator run $(OPERATOR_ARGS)

# Both run the operator under hack/operator_supervisor.py: stopped, crashed or SIGKILLed, it leaves
# no ansible-runner or ansible-playbook behind.
operator-start: $(VENV_STAMP) $(COLLECTIONS_STAMP) operator-tools install-crd ## Start the operator in the background (log: .cluster/operator.log).
	@$(PYTHON) hack/run_operator.py start --log $(OPERATOR_LOG) --pidfile $(OPERATOR_PIDFILE) -- \
		env $(OPERATOR_ENV) $(BIN)/ansible-operator run $(OPERATOR_ARGS)

operator-stop: ## Stop the background operator and every process it started.
	@$(PYTHON) hack/run_operator.py stop --pidfile $(OPERATOR_PIDFILE)

##@ Main job
# The demo adds the real node where this machine can run one (root): SmolLM2 then answers for real.
# DEMO_REAL_NODE=0 leaves it out (kwok nodes only).
DEMO_REAL_NODE ?= $(shell [ "$$(id -u)" = 0 ] && echo 1 || echo 0)
.PHONY: demo
demo: REAL_NODE = $(DEMO_REAL_NODE)
# The images the demo's pods run (the operator runs on this machine, not from its image).
demo: IMAGES_KEYS = puller router llama-server pause
demo: $(VENV_STAMP) $(COLLECTIONS_STAMP) operator-tools $(if $(filter 1,$(DEMO_REAL_NODE)),node-tools images model) cluster-up operator-start ## Local cluster + operator + the sample models until Serving; with the real node, two SmolLM2 models answer through the router.
	@$(PYTHON) hack/demo.py

##@ Tests
.PHONY: test test-all lint testbed-test
test: ## Everything CI runs: tools, venv, lints, unit, puller and image tests, cluster, test-bed, admission, generated-spec (property), install, reliability (faults) and molecule tests, then the real node and the e2e suite.
	@started=$$(date +%s); rc=0; $(MAKE) --no-print-directory test-all || rc=$$?; \
	$(MAKE) --no-print-directory cluster-down || true; \
	echo "make test: finished in $$(( $$(date +%s) - started ))s with exit code $$rc"; exit $$rc

# monitoring-test and monitoring-cluster-test: mk/monitoring.mk (issue 20).
test-all: tools venv lint manifests-check unit-test monitoring-test puller-test router-test images-test cluster-up testbed-test unit-cluster-test router-cluster-test admission-test property-test monitoring-cluster-test gateway-cluster-test install-test reliability-test molecule-test molecule-topology-test node-test e2e-test

lint: lint-venv collections ## ansible-lint (production profile) and yamllint.
	$(LINT_VENV)/bin/yamllint -s .
	PATH="$(CURDIR)/$(LINT_VENV)/bin:$$PATH" $(LINT_VENV)/bin/ansible-lint --profile production

testbed-test: venv cluster-up ## Tests of the local cluster itself.
	$(VENV)/bin/pytest -q tests/testbed
