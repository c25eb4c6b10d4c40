##@ Operator tests
MOLECULE_FAILURE := .cache/molecule-failure.txt

.PHONY: molecule-test
molecule-test: venv tools cluster-up ## Molecule (default scenario): the real ansible-operator against the local cluster.
	@rm -f $(MOLECULE_FAILURE)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" KUBECONFIG=$(KUBECONFIG) $(VENV)/bin/molecule test -s default || { \
		rc=$$?; [ ! -s $(MOLECULE_FAILURE) ] || { echo "molecule-test failed:"; cat $(MOLECULE_FAILURE); }; exit $$rc; }
