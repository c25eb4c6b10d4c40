##@ Real node (mk/node.mk)
#
# node-test   the real node's own tests: restarts the local cluster with REAL_NODE=1, runs tests/node
#             (a real kubelet beside the kwok nodes, a real pod, the traffic rule), stops the
#             cluster, then checks that nothing is left and the host settings are as recorded before.
#
# Image archives in LLM_NODE_IMAGES (default .cache/images, `make images`) are imported into the
# node's containerd when it starts; LLM_NODE_TEST_IMAGE names the image with /bin/sh the tests run.

NODE_HOST_RECORD ?= $(CURDIR)/.cache/node-test/host-before.json

.PHONY: node-test node-status
node-test: venv cluster-tools node-tools ## Real-node tests: cluster-up REAL_NODE=1, tests/node, cluster-down, nothing left behind.
	@$(MAKE) --no-print-directory cluster-down
	@mkdir -p $(dir $(NODE_HOST_RECORD))
	$(PYTHON) tests/node/host_state.py > $(NODE_HOST_RECORD)
	@rc=0; $(MAKE) --no-print-directory cluster-up REAL_NODE=1 && \
		$(VENV)/bin/pytest -q -m "not after_down" tests/node || rc=$$?; \
	$(MAKE) --no-print-directory cluster-down || rc=$$?; \
	LLM_NODE_HOST_RECORD=$(NODE_HOST_RECORD) $(VENV)/bin/pytest -q -m after_down tests/node || rc=$$?; \
	exit $$rc

node-status: ## Say whether the real node runs (containerd, kube-proxy, volumes, kubelet) and show it.
	@$(PYTHON) hack/node.py status

# e2e-test   the real lifecycle (tests/e2e): the project's images (`make images`, imported into the
#            node at start) and the SmolLM2 model (`make model`); the cluster restarted with the
#            real node; the operator installed from its image with the Helm chart (`helm install`,
#            charts/llm-operator); a model pulled from a local HTTP server and one from a local
#            Hub-compatible endpoint, each answering a chat completion through its Service; delete
#            keeps or purges the weights; `helm upgrade` with new values while a model answers,
#            `helm uninstall` with the model present, `make release-models`; last, an upgrade from
#            the previous release (`make images-previous`) with a model answering, and a new preset
#            image that restarts no server until asked. Stops the cluster at the end and checks, as
#            node-test does, that nothing of the node is left.
.PHONY: e2e-test
e2e-test: venv cluster-tools node-tools chart-tools images images-previous model azurite ## The e2e suite: operator image installed by its Helm chart, real pulls, SmolLM2 answering through its Service, upgrade and uninstall (real node).
	@$(MAKE) --no-print-directory cluster-down
	@mkdir -p $(dir $(NODE_HOST_RECORD))
	$(PYTHON) tests/node/host_state.py > $(NODE_HOST_RECORD)
	@rc=0; started=$$(date +%s); $(MAKE) --no-print-directory cluster-up REAL_NODE=1 && \
		IMG=$(IMG) LLMMODEL_PULLER_IMAGE=$(LLMMODEL_PULLER_IMAGE) LLM_PREVIOUS_RELEASE=$(PREVIOUS_RELEASE) $(VENV)/bin/pytest -v -s tests/e2e || rc=$$?; \
	$(MAKE) --no-print-directory cluster-down || rc=$$?; \
	LLM_NODE_HOST_RECORD=$(NODE_HOST_RECORD) $(VENV)/bin/pytest -q -m after_down tests/node || rc=$$?; \
	echo "e2e-test: finished in $$(( $$(date +%s) - started ))s with exit code $$rc"; exit $$rc
