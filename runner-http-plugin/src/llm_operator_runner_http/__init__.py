"""ansible-runner event plugin ``http``: POST runner events to ansible-operator's event receiver.

ansible-runner loads every entry point of the group ``ansible_runner.plugins`` and calls
``event_handler(runner_config, event)`` for each event and ``status_handler(runner_config, status)``
for each status change. Both must return quickly and must not raise.
"""

from .handlers import event_handler, status_handler

__all__ = ["event_handler", "status_handler"]
