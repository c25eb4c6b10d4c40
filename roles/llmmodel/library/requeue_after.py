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

import re

from ansible.module_utils.basic import AnsibleModule

_UNIT_NANOSECONDS = {
    "ns": 1,
    "us": 10**3,
    "\u00b5s": 10**3,  # micro sign, accepted by Go
    "\u03bcs": 10**3,  # Greek small letter mu, accepted by Go
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
_ELEMENT = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_MAX_NANOSECONDS = 2**63 - 1  # Go's time.Duration is an int64 of nanoseconds


def parse_go_duration(text):
    """Return the number of nanoseconds in a positive Go duration string, or raise ValueError.

    Accepts what Go's time.ParseDuration accepts except signs and the bare "0", which cannot be a
    meaningful requeue period.
    """
    if not isinstance(text, str) or not text:
        raise ValueError("the period is empty")
    position = 0
    total = 0
    while position < len(text):
        match = _ELEMENT.match(text, position)
        if match is None:
            raise ValueError(
                "%r is not a Go duration: use numbers with units ns, us, ms, s, m or h, such as 10s or 1m30s" % text
            )
        number, unit = match.groups()
        total += int(round(float(number) * _UNIT_NANOSECONDS[unit]))
        position = match.end()
    if total <= 0:
        raise ValueError("the period %r must be greater than zero" % text)
    if total > _MAX_NANOSECONDS:
        raise ValueError("the period %r is longer than a Go duration can be" % text)
    return total


def main():
    module = AnsibleModule(
        argument_spec={"time": {"type": "str", "required": True, "aliases": ["period"]}},
        supports_check_mode=True,
    )
    period = module.params["time"].strip()
    try:
        nanoseconds = parse_go_duration(period)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, period=period, seconds=nanoseconds / 1e9)


if __name__ == "__main__":
    main()
