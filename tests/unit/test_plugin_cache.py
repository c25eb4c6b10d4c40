"""playbooks/callback_plugins/llmmodel_plugin_cache.py: with it next to a playbook, the filter plugins
are loaded once per run, in ansible-playbook's own process, not again in each task's fork.

A real ansible-playbook runs a few tasks whose conditions use a filter; a filter plugin of the test's
own records the process that loads it (the role's filter files are loaded the same way, by the same
loader). The playbook finds the callback the way ansible-operator's run of playbooks/llmmodel.yml
does: in a callback_plugins/ directory beside it."""

from __future__ import annotations

import os
import re
import subprocess

from unit_helpers import REPO, VENV_BIN

CALLBACKS = REPO / "playbooks" / "callback_plugins"

PROBE = '''
import os

with open(os.environ["LLMMODEL_PROBE_LOADS"], "a", encoding="utf-8") as loads:
    loads.write(f"{os.getpid()}\\n")


class FilterModule:
    def filters(self):
        return {"llmmodel_probe": lambda value: value}
'''

# Four tasks that run and four that are skipped, each deciding by a filter, as the role's tasks do.
PLAYBOOK = '''
- name: Tasks whose conditions use filters
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    wanted: false
  tasks:
''' + "".join(f'''
    - name: Runs {i}
      ansible.builtin.set_fact:
        seen_{i}: "{{{{ wanted | llmmodel_probe | bool }}}}"
      when: not (wanted | bool)
    - name: Is skipped {i}
      ansible.builtin.debug:
        msg: never
      when: wanted | bool
''' for i in range(4))


def run_playbook(tmp_path, *, beside: bool):
    """Run the playbook, with the callback beside it or not; the pids that loaded the probe, and the
    playbook process's own pid."""
    play_dir = tmp_path / "play"
    (play_dir / "filter_plugins").mkdir(parents=True)
    (play_dir / "filter_plugins" / "llmmodel_probe.py").write_text(PROBE, encoding="utf-8")
    (play_dir / "playbook.yml").write_text(PLAYBOOK, encoding="utf-8")
    if beside:
        (play_dir / "callback_plugins").symlink_to(CALLBACKS)
    loads = tmp_path / "loads.txt"
    # As ansible-runner runs it for ansible-operator: no byte code written; the callbacks configured (the
    # runner's own, in ansible-operator) are not where this one comes from.
    env = {key: value for key, value in os.environ.items() if key != "ANSIBLE_CALLBACK_PLUGINS"}
    env.update(LLMMODEL_PROBE_LOADS=str(loads), PYTHONDONTWRITEBYTECODE="1")
    # ansible-playbook itself, not a shell around it: its pid is the controller's.
    process = subprocess.Popen([str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", str(play_dir / "playbook.yml")],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output
    assert re.search(r"localhost\s*: ok=4\s+changed=0\s+unreachable=0\s+failed=0\s+skipped=4", output), output
    return loads.read_text(encoding="utf-8").split(), str(process.pid)


def test_filters_are_loaded_once_in_the_playbook_process(tmp_path):
    pids, playbook_pid = run_playbook(tmp_path, beside=True)
    assert pids == [playbook_pid]


def test_without_it_each_task_loads_them_again(tmp_path):
    """What the callback saves: every task, skipped ones included, loads the filter files again."""
    pids, playbook_pid = run_playbook(tmp_path, beside=False)
    assert len(set(pids)) == len(pids) == 8
    assert playbook_pid not in pids
