"""The machine's processes as /proc shows them: parents, descendants, and ansible leftovers.

Used by the operator's supervisor (hack/operator_supervisor.py) to find every process it has to
end, by `make bench` to refuse a machine where ansible processes still run, and by the tests.
"""

from __future__ import annotations

import os

# What an ansible-operator reconcile runs: ansible-runner, which starts ansible-playbook (and its
# forked task workers, which keep the ansible-playbook command line).
ANSIBLE_PROGRAMS = ("ansible-runner", "ansible-playbook")


def parents() -> dict[int, int]:
    """pid -> parent pid of every process that can be read."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                raw = handle.read().decode(errors="replace")
        except OSError:
            continue
        # The command name is in parentheses and may itself hold spaces or parentheses.
        fields = raw[raw.rfind(")") + 2:].split()
        table[int(entry.name)] = int(fields[1])
    return table


def descendants(root: int, table: dict[int, int] | None = None) -> list[int]:
    """Every process below root (children first found, grandchildren after), not root itself."""
    table = parents() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, ppid in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop(0)
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def alive(pid: int) -> bool:
    """Whether pid runs (a zombie, ended but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode(errors="replace")
    except OSError:
        return False
    return raw[raw.rfind(")") + 2:].split()[0] != "Z"


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def ansible_processes(exclude: set[int] | None = None) -> dict[int, str]:
    """pid -> command line of every ansible-runner or ansible-playbook process on the machine.

    A Python program shows its script as the second word of its command line, so the first two
    words are checked, not the whole line (a `grep ansible-playbook` would find itself).
    """
    found = {}
    for pid in parents():
        if exclude and pid in exclude:
            continue
        line = command_line(pid)
        words = [os.path.basename(word) for word in line.split()[:2]]
        if any(word in ANSIBLE_PROGRAMS for word in words):
            found[pid] = line
    return found
