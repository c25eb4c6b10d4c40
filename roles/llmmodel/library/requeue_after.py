#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ask ansible-operator to end this reconcile and run the next one after a period."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: requeue_after
short_description: End the reconcile and have ansible-operator requeue the object after a period
description:
  - Returns O(time) as RV(period) and changes nothing. The module does nothing by itself; the
    effect comes from how C(ansible-operator) (operator-framework/ansible-operator-plugins,
    C(internal/ansible/controller/reconcile.go)) reads the events of the run.
  - >-
    The contract: for every event whose C(event_data.task_action) is exactly C(requeue_after)
    (and the event is not C(runner_on_failed)) or C(operator_sdk.util.requeue_after), and whose
    C(event_data.res) is a map, ansible-operator parses C(res.period) with Go's
    C(time.ParseDuration), sets the reconcile result's C(RequeueAfter) to it and returns at once.
    It does not wait for the rest of the run and skips its final status update (the C(Successful)
    condition), so make this the last task of the run.
  - C(task_action) is the action name as written in the task, so the task must say
    C(requeue_after:), not C(ansible.legacy.requeue_after:) or any other spelling.
  - A drop-in for C(operator_sdk.util.requeue_after), which is only on Ansible Galaxy.
  - The role runs it through its action plugin of the same name, inside the C(ansible-playbook)
    process (no module process); run as a plain module it returns the same result.
version_added: "0.1.0"
author:
  - llm-operator maintainers
options:
  time:
    description:
      - How long to wait before the next reconcile, as a Go duration string
        (C(time.ParseDuration)) such as C(10s), C(1m30s), C(1.5h) or C(500ms).
      - Units are C(ns), C(us), C(ms), C(s), C(m), C(h); there is no day unit. Must be greater
        than zero (a zero C(RequeueAfter) would mean "do not requeue").
    type: str
    required: true
    aliases: [period]
attributes:
  check_mode:
    support: full
    description: The module never changes anything; it returns the same result in check mode.
  diff_mode:
    support: none
    description: There is nothing to diff.
notes:
  - Do not use C(no_log) on this task. Ansible would replace the result with C(censored) and
    ansible-operator would find no C(period).
  - Do not loop over this task. Item results carry the action name too, and a skipped item's
    result has no C(period), which breaks ansible-operator's reconcile.
  - A task skipped by C(when) produces no result and does not requeue.
"""

EXAMPLES = r"""
- name: Requeue in 10 seconds while the pull Job runs
  requeue_after:
    time: 10s
  when: __llmmodel_pull_job_active | bool

- name: Requeue in one and a half minutes
  requeue_after:
    period: 1m30s
"""

RETURN = r"""
period:
  description:
    - The requeue period as given in O(time), without surrounding spaces. ansible-operator reads
      this key.
  returned: success
  type: str
  sample: 10s
seconds:
  description: The period in seconds, for display and for tests.
  returned: success
  type: float
  sample: 10.0
"""

from ansible.module_utils.llmmodel_duration import parse_go_duration
from ansible.module_utils.llmmodel_module import ModuleFailure, module_main

ARGUMENT_SPEC = {"time": {"type": "str", "required": True, "aliases": ["period"]}}


def run(params, check_mode=False, diff=False):
    """Validate the period and return it; change nothing. Raises ModuleFailure for a bad period."""
    period = params["time"].strip()
    try:
        nanoseconds = parse_go_duration(period)
    except ValueError as exc:
        raise ModuleFailure(str(exc))
    return {"changed": False, "period": period, "seconds": nanoseconds / 1e9}


def main():
    module_main(ARGUMENT_SPEC, run)


if __name__ == "__main__":
    main()
