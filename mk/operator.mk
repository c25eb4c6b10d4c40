##@ Operator tests
MOLECULE_FAILURE := .cache/molecule-failure.txt

# The lifecycles of a pull, a re-pull, a change and a deletion, again on the test bed's
# WaitForFirstConsumer class node-local (volumes on their first pod's node, docs/local-cluster.md).
TOPOLOGY_LIFECYCLES ?= source_change,serve_change,job_ttl,pull_failure,finalize_retain,finalize_purge,deletion_policies

.PHONY: molecule-test molecule-topology-test
molecule-test: venv tools cluster-up ## Molecule (default scenario): the real ansible-operator against the local cluster.
	@rm -f $(MOLECULE_FAILURE)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" KUBECONFIG=$(KUBECONFIG) $(VENV)/bin/molecule test -s default || { \
		rc=$$?; [ ! -s $(MOLECULE_FAILURE) ] || { echo "molecule-test failed:"; cat $(MOLECULE_FAILURE); }; exit $$rc; }

molecule-topology-test: venv tools cluster-up ## Molecule's pull, re-pull and deletion lifecycles on WaitForFirstConsumer storage (node-local).
	@rm -f $(MOLECULE_FAILURE)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" KUBECONFIG=$(KUBECONFIG) MOLECULE_STORAGE_CLASS=node-local \
		MOLECULE_LIFECYCLES=$(TOPOLOGY_LIFECYCLES) $(VENV)/bin/molecule test -s default || { \
		rc=$$?; [ ! -s $(MOLECULE_FAILURE) ] || { echo "molecule-topology-test failed:"; cat $(MOLECULE_FAILURE); }; exit $$rc; }
