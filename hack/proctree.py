"""The machine's processes as /proc shows them: parents, descendants, and ansible leftovers.

Used by the operator's supervisor (hack/operator_supervisor.py) to find every process it has to
end, by `make bench` to refuse a machine where ansible processes still run, and by the tests.
"""

from __future__ import annotations

import os

# What an ansible-operator reconcile runs: ansible-runner, which starts ansible-playbook (and its
# forked task workers, which keep the ansible-playbook command line).
ANSIBLE_PROGRAMS = ("ansible-runner", "ansible-playbook")


def stat(pid: int) -> tuple[str, list[str]] | None:
    """The command name of pid and the fields of /proc/PID/stat after it (state, ppid, ... rss), or
    None when it cannot be read (it ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode(errors="replace")
    except OSError:
        return None
    # The command name is in parentheses and may itself hold spaces or parentheses.
    close = raw.rfind(")")
    return raw[raw.find("(") + 1:close], raw[close + 2:].split()


def stats() -> dict[int, tuple[str, list[str]]]:
    """pid -> stat(pid) of every process that can be read."""
    table = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (found := stat(int(entry.name))) is not None:
            table[int(entry.name)] = found
    return table


def parents() -> dict[int, int]:
    """pid -> parent pid of every process that can be read."""
    return {pid: int(fields[1]) for pid, (_, fields) in stats().items()}


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
    found = stat(pid)
    return found is not None and found[1][0] != "Z"


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
