"""The failure path (roles/llmmodel/tasks/failure.yml) against the real API server: the conditions it
stamps carry the generation the failed run reconciled, not the one the API server holds by then.

The role's own task file, included from a rescue as tasks/main.yml includes it, run by a real
ansible-runner with the real llmmodel_status; the LLMModel's spec changes while the run is under way
(the object the run was given stays at the generation before).
"""

from __future__ import annotations

import pytest
from unit_helpers import ROLE, task_results

pytestmark = pytest.mark.cluster

API = "inference.ai.example.com/v1alpha1"
MERGE_PATCH = "application/merge-patch+json"
FAILING_RUN = f"""
- name: Reconcile the LLMModel
  block:
    - name: Apply the server
      ansible.builtin.fail:
        msg: the API server refused the Deployment
  rescue:
    - name: Report the failed reconcile
      ansible.builtin.include_tasks: {ROLE / "tasks" / "failure.yml"}
"""


def test_conditions_of_a_failed_run_carry_the_generation_it_reconciled(dynamic, llmmodel_crd, namespace, run_probe_role, kubeconfig):
    models = dynamic.resources.get(api_version=API, kind="LLMModel")
    spec = {"source": {"url": "https://models.example.com/m.gguf"}, "serve": {"image": "registry.invalid/s:1"}}
    reconciled = models.create(namespace=namespace, body={"apiVersion": API, "kind": "LLMModel", "metadata": {"name": "m"},
                                                          "spec": spec}).to_dict()
    # The user changes the spec while the run of generation 1 is under way.
    models.patch(name="m", namespace=namespace, body={"spec": {"storageSize": "60Gi"}}, content_type=MERGE_PATCH)

    completed, events = run_probe_role(
        FAILING_RUN,
        extravars={"ansible_operator_meta": {"name": "m", "namespace": namespace}, "_inference_ai_example_com_llmmodel": reconciled},
        env={"K8S_AUTH_KUBECONFIG": kubeconfig},
    )

    assert completed.returncode != 0, "the failed run must fail, so that ansible-operator retries it"
    [(event, written)] = task_results(events, "llmmodel_status")
    assert event == "runner_on_ok" and written["changed"], written
    stored = models.get(name="m", namespace=namespace).to_dict()
    assert (reconciled["metadata"]["generation"], stored["metadata"]["generation"]) == (1, 2)
    conditions = {c["type"]: c for c in stored["status"]["conditions"]}
    for ctype, status in (("Successful", "False"), ("Failure", "True")):
        condition = conditions[ctype]
        assert (condition["status"], condition["reason"]) == (status, "ReconcileFailed"), condition
        assert condition["message"] == "task 'Apply the server' failed: the API server refused the Deployment"
        assert condition["observedGeneration"] == 1, "generation 2 was never reconciled"
