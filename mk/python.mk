##@ Python parts (mk/python.mk)
#
# unit-test           the role's modules (tests/unit) and the ansible-runner event plugin
#                     (runner-http-plugin/tests); real ansible-runner runs, no cluster
# unit-cluster-test   llmmodel_status against the API server in $(KUBECONFIG), and the real operator
#                     SIGKILLed mid-reconcile (tests/process); fails, never skips,
#                     when it is not reachable

VENV ?= .venv
PYTEST_FLAGS ?= -q

# The venv of a component that ships in an image of its own (puller/, router/): exactly the image's
# lock, the component itself (editable) and pytest. $(call component_venv,VENV_DIR,COMPONENT_DIR)
define component_venv
@rm -rf $(1)
$(PYTHON) -m venv $(1)
$(1)/bin/pip install --quiet --disable-pip-version-check -r $(2)/requirements.lock pytest==9.2.0
$(1)/bin/pip install --quiet --disable-pip-version-check --no-deps -e ./$(2)
$(1)/bin/pip check
@touch $(1)/.installed
endef

.PHONY: unit-test unit-cluster-test
unit-test: venv ## pytest of the role's modules and the runner event plugin (no cluster needed).
	$(VENV)/bin/pytest $(PYTEST_FLAGS) -m "not cluster" tests/unit tests/process runner-http-plugin/tests

unit-cluster-test: venv ## pytest of llmmodel_status against the cluster in KUBECONFIG.
	$(VENV)/bin/pytest $(PYTEST_FLAGS) -m cluster tests/unit tests/process

##@ Generated specs (mk/python.mk)
# property-test   hypothesis-generated LLMModels (tests/properties): admission names the field of a rejected
#                 spec; an accepted one is reconciled by the real operator (started here, watching only the
#                 test's namespace) without a task failure and without evaluating its strings. Seeded and
#                 bounded; PROPERTY_ADMISSION_EXAMPLES / PROPERTY_RECONCILE_EXAMPLES size it.
.PHONY: property-test
property-test: venv tools cluster-up ## Generated LLMModel specs against admission and the real operator (hypothesis, seeded).
	$(VENV)/bin/pytest $(PYTEST_FLAGS) tests/properties
