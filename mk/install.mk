##@ Install and deploy (mk/install.mk)
#
# install/uninstall      the CRD only (for `make run` against a cluster)
# deploy/undeploy        the whole operator from config/default, manager image $(IMG); undeploy
#                        stops with guidance when the models are not finalized in UNDEPLOY_TIMEOUT
# release-models         without an operator: what the finalizer would do, for every LLMModel
# build-installer        the same as one manifest, dist/install.yaml
# bundle                 the OLM bundle in bundle/ (committed; reproducible)
# manifests-check        static checks of config/ (no cluster needed)
# admission-test         CRD admission rules against the cluster in $(KUBECONFIG)
# install-test           deploy/undeploy, RBAC, installer, bundle and Helm chart checks against that cluster
#
# The image is set in a throw-away kustomize overlay, so none of these targets edits config/.
#
# MONITORING   whether config/prometheus goes in (the manager's ServiceMonitor and the alerts, a
#              PrometheusRule: docs/monitoring.md); they need the Prometheus Operator's CRDs.
#              auto (default): deploy and undeploy include them where the cluster serves
#              monitoring.coreos.com/v1, build-installer always; true; false.
# ROUTER       true (default): deploy and build-installer include the router (config/router, Service
#              llm-operator-router port 8000); false leaves it out. undeploy removes it either way.

KUBECTL ?= bin/kubectl
KUSTOMIZE ?= bin/kustomize
OPERATOR_SDK ?= bin/operator-sdk
KUBECONFIG ?= $(CURDIR)/.cluster/kubeconfig
VENV ?= .venv

VERSION ?= 0.1.0
IMAGE_TAG_BASE ?= ghcr.io/llm-operator/llm-operator
IMG ?= $(IMAGE_TAG_BASE):$(VERSION)
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
BUNDLE_CHANNELS ?= --channels=alpha
BUNDLE_DEFAULT_CHANNEL ?= --default-channel=alpha
BUNDLE_METADATA_OPTS ?= $(BUNDLE_CHANNELS) $(BUNDLE_DEFAULT_CHANNEL)
# true: `make undeploy` leaves the CRD (and so every LLMModel) in place.
KEEP_CRDS ?= false
MONITORING ?= auto
ROUTER ?= true
# How long `make undeploy` waits for the operator to finalize the LLMModels before it goes.
UNDEPLOY_TIMEOUT ?= 5m

INSTALL_KUBECTL = KUBECONFIG=$(KUBECONFIG) $(KUBECTL)
LLMMODEL_CRD = llmmodels.inference.ai.example.com

# $(call kustomize-overlay,<config dir>,<extra patches, as items of its patches list>): print the build of
# config/<config dir> with the manager image set to $(IMG) and the router's to $(LLM_ROUTER_IMAGE),
# through a temporary overlay.
define kustomize-overlay
overlay=$$(mktemp -d) && trap 'rm -rf "$$overlay"' EXIT && \
	printf 'resources:\n  - %s\npatches:\n%s' "$$(realpath --relative-to="$$overlay" "$(CURDIR)/config/$(1)")" "$(2)" \
		> "$$overlay/kustomization.yaml" && \
	(cd "$$overlay" && "$(abspath $(KUSTOMIZE))" edit set image controller=$(IMG) \
		ghcr.io/llm-operator/llm-router=$(LLM_ROUTER_IMAGE)) && \
	$(KUSTOMIZE) build "$$overlay"
endef

# Kustomization lines that drop the CRD from a build (KEEP_CRDS=true).
define KEEP_CRD_PATCH
  - patch: |-
      $$patch: delete
      apiVersion: apiextensions.k8s.io/v1
      kind: CustomResourceDefinition
      metadata:
        name: $(LLMMODEL_CRD)

endef
export KEEP_CRD_PATCH

# Kustomization lines that drop the monitoring objects (config/prometheus) from a build.
define DROP_MONITORING_PATCH
  - target: {group: monitoring.coreos.com}
    patch: |-
      $$patch: delete
      apiVersion: monitoring.coreos.com/v1
      kind: Any
      metadata:
        name: any

endef
export DROP_MONITORING_PATCH

# Kustomization lines that drop the router (config/router: every object labelled its component).
define DROP_ROUTER_PATCH
  - target: {labelSelector: app.kubernetes.io/component=router}
    patch: |-
      $$patch: delete
      apiVersion: v1
      kind: Any
      metadata:
        name: any

endef
export DROP_ROUTER_PATCH
ROUTER_PATCH = $(if $(filter false,$(ROUTER)),$$DROP_ROUTER_PATCH,)

# $(call monitoring-patch,<auto means>): a shell expression printing DROP_MONITORING_PATCH unless the
# monitoring objects go in (MONITORING=true; auto: `cluster` asks the cluster, `true` includes them).
define monitoring-patch
$$(case "$(MONITORING):$(1)" in true:*|auto:true) ;; false:*) printf '%s' "$$DROP_MONITORING_PATCH" ;; *) $(INSTALL_KUBECTL) get --raw /apis/monitoring.coreos.com/v1 > /dev/null 2>&1 || { printf '%s' "$$DROP_MONITORING_PATCH"; echo "the cluster does not serve monitoring.coreos.com/v1 (no Prometheus Operator): the ServiceMonitor and the alerts are left out" >&2; } ;; esac)
endef

.PHONY: manifests-check
manifests-check: ## Check config/: the CRD parses and documents every field, every kustomization builds.
	$(VENV)/bin/python hack/check_crd.py
	@set -e; for dir in crd rbac manager router default prometheus samples scorecard manifests; do \
		$(KUSTOMIZE) build config/$$dir > /dev/null; echo "config/$$dir: builds"; done

.PHONY: install
install: ## Install the CRD into the cluster in $(KUBECONFIG).
	$(KUSTOMIZE) build config/crd | $(INSTALL_KUBECTL) apply --server-side -f -
	$(INSTALL_KUBECTL) wait --for=condition=Established --timeout=60s crd/$(LLMMODEL_CRD)

.PHONY: uninstall
uninstall: ## Remove the CRD and with it every LLMModel (stop `make run` only after they are gone).
	$(KUSTOMIZE) build config/crd | $(INSTALL_KUBECTL) delete --ignore-not-found -f -

.PHONY: deploy
deploy: ## Deploy the operator (image IMG=...) into llm-operator-system.
	@test -n "$(IMG)" || { echo "IMG is empty: make deploy IMG=<registry>/<image>:<tag>" >&2; exit 1; }
	$(call kustomize-overlay,default,$(ROUTER_PATCH)$(call monitoring-patch,cluster)) | $(INSTALL_KUBECTL) apply --server-side -f -
	$(INSTALL_KUBECTL) wait --for=condition=Established --timeout=60s crd/$(LLMMODEL_CRD)

.PHONY: undeploy
undeploy: ## Remove the operator. First deletes every LLMModel so the running operator finalizes them; KEEP_CRDS=true keeps the CRD and the models.
	@if [ "$(KEEP_CRDS)" != true ] && $(INSTALL_KUBECTL) get crd $(LLMMODEL_CRD) > /dev/null 2>&1; then \
		echo "Deleting every LLMModel while the operator still runs (timeout $(UNDEPLOY_TIMEOUT))"; \
		$(INSTALL_KUBECTL) delete llmmodels.inference.ai.example.com --all --all-namespaces \
			--ignore-not-found --timeout=$(UNDEPLOY_TIMEOUT) || { \
			$(INSTALL_KUBECTL) get llmmodels.inference.ai.example.com --all-namespaces >&2; \
			echo "undeploy: stopped; the operator and the CRD stay. These LLMModels were not finalized within" \
				"$(UNDEPLOY_TIMEOUT): is the operator running? Start it again and rerun, or, without an operator," \
				"'make release-models' (keeps or deletes each weights volume as purgeWeightsOnDelete says)" \
				"and rerun. docs/install.md, Uninstall." >&2; exit 1; }; \
	fi
	$(call kustomize-overlay,default,$(if $(filter true,$(KEEP_CRDS)),$$KEEP_CRD_PATCH,)$(call monitoring-patch,cluster)) \
		| $(INSTALL_KUBECTL) delete --ignore-not-found --wait=true -f -

.PHONY: release-models
release-models: ## Without a running operator: remove every LLMModel, keeping or deleting its weights volume as purgeWeightsOnDelete says.
	KUBECTL=$(KUBECTL) KUBECONFIG=$(KUBECONFIG) $(PYTHON) hack/release_models.py

.PHONY: build-installer
build-installer: ## Write dist/install.yaml: CRD, RBAC and manager (image IMG=...) in one manifest.
	@mkdir -p dist
	$(call kustomize-overlay,default,$(ROUTER_PATCH)$(call monitoring-patch,true)) > dist/install.yaml
	@echo "dist/install.yaml: manager image $(IMG)$(if $(filter false,$(MONITORING)),, with the ServiceMonitor and the alerts (they need the Prometheus Operator's CRDs; MONITORING=false leaves them out))"

.PHONY: bundle
bundle: manifests-check ## Generate and validate the OLM bundle (VERSION, IMG, BUNDLE_METADATA_OPTS).
	$(OPERATOR_SDK) generate kustomize manifests -q --interactive=false
	$(call kustomize-overlay,manifests,) \
		| $(OPERATOR_SDK) generate bundle -q --overwrite --version $(VERSION) $(BUNDLE_METADATA_OPTS)
	@# generate bundle stamps the CSV with the current time; drop it so the output is reproducible.
	sed -i '/^    createdAt: /d' bundle/manifests/llm-operator.clusterserviceversion.yaml
	$(OPERATOR_SDK) bundle validate ./bundle

.PHONY: admission-test
admission-test: ## Run tests/admission against the cluster in $(KUBECONFIG) (make cluster-up first).
	KUBECONFIG=$(KUBECONFIG) $(VENV)/bin/pytest -v tests/admission

.PHONY: install-test
install-test: chart-tools ## Run tests/install against the cluster in $(KUBECONFIG): deploy/undeploy, installer, bundle, the Helm chart.
	KUBECONFIG=$(KUBECONFIG) $(VENV)/bin/pytest -v tests/install
