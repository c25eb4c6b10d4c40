"""lookup_plugins/llmmodel_read against the real API server, through a real ansible-runner run."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.cluster

TASKS = """\
- name: Read
  ansible.builtin.set_fact:
    named: "{{{{ query('llmmodel_read', kind='ConfigMap', namespace='{ns}', resource_name='one') }}}}"
    missing: "{{{{ query('llmmodel_read', kind='ConfigMap', namespace='{ns}', resource_name='absent') }}}}"
    selected: "{{{{ query('llmmodel_read', kind='ConfigMap', namespace='{ns}', label_selector='role=probe') | map(attribute='metadata.name') | sort }}}}"
    namespace: "{{{{ query('llmmodel_read', kind='Namespace', resource_name='{ns}') | map(attribute='metadata.name') }}}}"
- name: Show
  ansible.builtin.debug:
    msg: "{{{{ {{'named': named | map(attribute='data') | list, 'missing': missing, 'selected': selected, 'namespace': namespace}} | to_json }}}}"
"""


def shown(events):
    [message] = [e["event_data"]["res"]["msg"] for e in events
                 if e["event"] == "runner_on_ok" and e["event_data"].get("task") == "Show"]
    return json.loads(message)


def test_reads_by_name_by_label_and_cluster_scoped(run_probe_role, kubeconfig, dynamic, namespace):
    configmaps = dynamic.resources.get(api_version="v1", kind="ConfigMap")
    for name, labels in (("one", {"role": "probe"}), ("two", {"role": "probe"}), ("three", {"role": "other"})):
        configmaps.create(body={"metadata": {"name": name, "labels": labels}, "data": {"name": name}}, namespace=namespace)

    completed, events = run_probe_role(TASKS.format(ns=namespace), env={"K8S_AUTH_KUBECONFIG": kubeconfig})

    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert shown(events) == {"named": [{"name": "one"}], "missing": [], "selected": ["one", "two"], "namespace": [namespace]}


def test_an_unknown_kind_fails_with_its_name(run_probe_role, kubeconfig, namespace):
    tasks = "- ansible.builtin.set_fact:\n    x: \"{{{{ query('llmmodel_read', api_version='example.com/v1', kind='Nope', namespace='{ns}') }}}}\"\n"
    completed, events = run_probe_role(tasks.format(ns=namespace), env={"K8S_AUTH_KUBECONFIG": kubeconfig})

    assert completed.returncode == 2
    [failure] = [e["event_data"]["res"]["msg"] for e in events if e["event"] == "runner_on_failed"]
    assert "the API server does not serve kind Nope in example.com/v1" in failure
