##@ Gateway API (mk/gateway.mk)
#
# gateway-cluster-test      on the cluster in $(KUBECONFIG) (make cluster-up): the real operator without,
#                           then with the Gateway API Inference Extension's InferencePool CRD (from its
#                           Go module, hack/inference_extension_crds.py): a pool per serving model
# inference-extension-crds  that CRD into .cache/

VENV ?= .venv
PYTHON ?= python3

.PHONY: gateway-cluster-test inference-extension-crds
inference-extension-crds: ## Copy the Gateway API Inference Extension's InferencePool CRD from its Go module into .cache/.
	@$(PYTHON) hack/inference_extension_crds.py

gateway-cluster-test: venv tools inference-extension-crds ## The operator without and with the InferencePool CRD, on the cluster in KUBECONFIG.
	KUBECONFIG=$(KUBECONFIG) $(VENV)/bin/pytest $(PYTEST_FLAGS) -m cluster tests/gateway
