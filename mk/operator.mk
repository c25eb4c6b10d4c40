##@ Operator tests
.PHONY: molecule-test
molecule-test: venv tools cluster-up ## Molecule (default scenario): the real ansible-operator against the local cluster.
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" KUBECONFIG=$(KUBECONFIG) $(VENV)/bin/molecule test -s default
