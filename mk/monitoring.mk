##@ Monitoring (mk/monitoring.mk)
#
# monitoring-test           no cluster: the PrometheusRule of config/prometheus/ as a rule file
#                           (hack/monitoring_rules.py), `promtool check rules` and `promtool test rules`
#                           (tests/monitoring/alerts.test.yaml: every alert fires and stays silent on
#                           synthetic series), every query of the Grafana dashboard parsed by promtool,
#                           and the checks of tests/monitoring (alerts, runbooks, metrics, docs agree)
# monitoring-cluster-test   on the cluster in $(KUBECONFIG) (make cluster-up): the real operator
#                           without and then with the Prometheus Operator's CRDs (PodMonitors made,
#                           removed, never failing), the shipped monitoring objects validated by the API
#                           server, kube-state-metrics serving the model metrics of real LLMModels
# prometheus-operator-crds  the Prometheus Operator's CRDs from its Go module into .cache/ (the tests
#                           install them; hack/prometheus_operator_crds.py)
#
# The e2e suite (make e2e-test) runs Prometheus and kube-state-metrics against the real node:
# tests/e2e/test_e2e_monitoring.py.

VENV ?= .venv
PYTHON ?= python3
PROMTOOL ?= $(CURDIR)/bin/promtool
MONITORING_CACHE := $(CURDIR)/.cache/monitoring

.PHONY: monitoring-test monitoring-cluster-test monitoring-tools prometheus-operator-crds
monitoring-tools:
	@$(PYTHON) hack/build_tools.py promtool prometheus kube-state-metrics

prometheus-operator-crds: ## Copy the Prometheus Operator's CRDs (PodMonitor, ServiceMonitor, PrometheusRule) from its Go module into .cache/.
	@$(PYTHON) hack/prometheus_operator_crds.py

monitoring-test: venv monitoring-tools ## promtool check/test of the alerts (every alert firing and silent), the dashboard's queries, the monitoring docs (no cluster).
	$(VENV)/bin/python hack/monitoring_rules.py alerts $(MONITORING_CACHE)/llm-operator.rules.yaml
	$(PROMTOOL) check rules $(MONITORING_CACHE)/llm-operator.rules.yaml
	$(PROMTOOL) test rules tests/monitoring/alerts.test.yaml
	$(VENV)/bin/python hack/monitoring_rules.py dashboard $(MONITORING_CACHE)/dashboard.rules.yaml
	$(PROMTOOL) check rules $(MONITORING_CACHE)/dashboard.rules.yaml
	$(VENV)/bin/pytest $(PYTEST_FLAGS) -m "not cluster" tests/monitoring

monitoring-cluster-test: venv tools monitoring-tools prometheus-operator-crds ## The operator with and without the Prometheus Operator's CRDs, and kube-state-metrics' model metrics, on the cluster in KUBECONFIG.
	KUBECONFIG=$(KUBECONFIG) $(VENV)/bin/pytest $(PYTEST_FLAGS) -m cluster tests/monitoring
