##@ Reliability (mk/reliability.mk)
#
# reliability-test   tests/reliability: the real ansible-operator on the local cluster under faults,
#                    one file per scenario (operator SIGKILLed at random moments, control plane
#                    restarted, namespace deleted with models, uninstall without an operator, a pod
#                    stuck on a lost node) and ansible-runner's artifact rotation. Prints the
#                    figures each scenario measured (README, "Guarantees under faults").
#
# Knobs:   RELIABILITY_SCALE=1   models and kills per scenario (1: the CI size, a few minutes; 4: a
#                                longer run with four times as many)
#          RELIABILITY_SEED=13   seed of the random kill moments
#          RELIABILITY_ARGS=...  extra pytest options, e.g. -k chaos

VENV ?= .venv
RELIABILITY_SCALE ?= 1
RELIABILITY_SEED ?= 13
RELIABILITY_ARGS ?=

.PHONY: reliability-test
reliability-test: venv tools cluster-up ## Faults on the local cluster with the real operator (RELIABILITY_SCALE, RELIABILITY_SEED).
	RELIABILITY_SCALE=$(RELIABILITY_SCALE) RELIABILITY_SEED=$(RELIABILITY_SEED) KUBECONFIG=$(KUBECONFIG) \
		$(VENV)/bin/pytest -v -p no:cacheprovider tests/reliability $(RELIABILITY_ARGS)
