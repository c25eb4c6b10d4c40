"""callback_plugins/llmmodel_preload: the task workers ansible-playbook forks find the Kubernetes
client already imported (a real ansible-runner run, as ansible-operator starts it)."""

from __future__ import annotations

from unit_helpers import task_results

# A test-only action plugin: what the worker that runs the task has loaded when the task starts.
PROBE = '''
import gc
import sys

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        result.update(loaded=sorted(m for m in ("kubernetes.client", "kubernetes.dynamic") if m in sys.modules),
                      frozen=gc.get_freeze_count())
        return result
'''


def test_workers_inherit_the_kubernetes_client_from_ansible_playbook(run_probe_role, tmp_path):
    plugins = tmp_path / "roles" / "probe" / "action_plugins"
    plugins.mkdir(parents=True)
    (plugins / "what_is_loaded.py").write_text(PROBE)
    tasks = "- name: First task\n  what_is_loaded:\n- name: Second task\n  what_is_loaded:\n"

    done, events = run_probe_role(tasks)

    assert done.returncode == 0, done.stdout
    results = [res for _, res in task_results(events, "what_is_loaded")]
    assert len(results) == 2
    for result in results:
        assert result["loaded"] == ["kubernetes.client", "kubernetes.dynamic"]
        assert result["frozen"] > 0
