##@ Helm chart (mk/chart.mk)
#
# chart        regenerate charts/llm-operator's parts that come from config/ (hack/chart.py): the CRD,
#              every object of config/default and config/prometheus as a template, the manager's
#              default values. Run it after changing config/ or the role's runtime presets;
#              tests/install/test_chart_static.py fails until the committed chart is regenerated.
# chart-lint   helm lint --strict, with the default values and with each charts/llm-operator/ci/ file
#
# The chart's tests run in `make install-test` (the local cluster) and, installed from its chart on
# the real node, in `make e2e-test`.

VENV ?= .venv
HELM ?= bin/helm
CHART ?= charts/llm-operator

.PHONY: chart chart-lint chart-tools
# What the chart's generation and tests run: helm (4), helm3 (the compatibility tests) and kustomize (bin/,
# only when missing).
chart-tools:
	@$(PYTHON) hack/build_tools.py helm helm3 kustomize

chart: chart-tools ## Regenerate charts/llm-operator from config/ (CRD, RBAC, manager, monitoring, default values).
	$(VENV)/bin/python hack/chart.py --chart $(CHART) --kustomize bin/kustomize

chart-lint: chart-tools ## helm lint --strict of the chart, with its default values and each ci/ values file.
	$(HELM) lint --strict $(CHART)
	@set -e; for values in $(CHART)/ci/*-values.yaml; do $(HELM) lint --strict --quiet -f $$values $(CHART); done
