"""The balancer: least requests in flight among a model's ready replicas, and a bounded wait for room.

A replica has room while it has fewer than `max_in_flight` of the router's requests (0: always).
When none has, a request waits in its model's queue: at most `queue_length` wait (one more: 429), each
at most `queue_timeout` seconds (then 504). A replica that frees up or appears wakes the oldest.

A model the router scales to zero (scaling.py) that has no ready replica holds its requests in the
same queue (at most `queue_length`, 429 beyond) for at most its wake timeout (the model's startup
budget unless `--wake-timeout` is set; then 503 with the model's phase and reason) and is woken.
"""

import asyncio
import collections
import time

from .errors import RouterError
from .table import Endpoint, Model, RoutingTable


class Balancer:
    def __init__(self, table: RoutingTable, settings, metrics, autoscaler=None):
        self.max_in_flight = settings.max_in_flight_per_replica
        self.queue_length = settings.queue_length
        self.queue_timeout = settings.queue_timeout
        self.retry_after = settings.retry_after
        self.metrics = metrics
        self.autoscaler = autoscaler
        table.on_endpoints_added = self._wake_all

    def pick(self, model: Model, exclude: Endpoint | None = None) -> Endpoint | None:
        """The replica with the fewest requests in flight (ties taken in turn), or None if none has room."""
        endpoints = model.endpoints
        count = len(endpoints)
        best = None
        start = model._next
        for offset in range(count):
            endpoint = endpoints[(start + offset) % count]
            if endpoint is exclude:
                continue
            if best is None or endpoint.in_flight < best.in_flight:
                best = endpoint
        if best is None or (self.max_in_flight and best.in_flight >= self.max_in_flight):
            return None
        model._next = start + 1 if start + 1 < count else 0
        return best

    async def acquire(self, model: Model, exclude: Endpoint | None = None) -> Endpoint:
        endpoint = None if model.draining else self.pick(model, exclude)
        if endpoint is None:
            endpoint = await self._wait(model, exclude)
        endpoint.in_flight += 1
        if model.scaling is not None:
            model.last_active = time.monotonic()
        return endpoint

    def release(self, model: Model, endpoint: Endpoint) -> None:
        endpoint.in_flight -= 1
        if model.scaling is not None:
            model.last_active = time.monotonic()
        if model.waiters:
            self._wake(model)

    async def _wait(self, model: Model, exclude: Endpoint | None) -> Endpoint:
        cold = self.autoscaler is not None and model.holds and (not model.endpoints or bool(model.draining))
        if not cold and not [endpoint for endpoint in model.endpoints if endpoint is not exclude]:
            raise RouterError(
                503,
                "model_not_ready",
                f"Model {model.full_name} has no ready replica just now (phase {model.phase}).",
                retry_after=1,
            )
        if model.waiters is None:
            model.waiters = collections.deque()
        if len(model.waiters) >= self.queue_length:
            self.metrics.queue_rejected(model.full_name)
            raise RouterError(
                429,
                "queue_full",
                f"Model {model.full_name} has {self.queue_length} requests waiting already; retry later.",
                retry_after=1,
            )
        waiter = asyncio.get_running_loop().create_future()
        model.waiters.append(waiter)
        started = time.monotonic()
        self.metrics.queued(model.full_name, 1)
        timeout = self.queue_timeout
        if cold:
            model.last_active = started
            timeout = self.autoscaler.timeout(model)
            self.autoscaler.wake(model)
        try:
            while True:
                remaining = timeout - (time.monotonic() - started)
                if remaining <= 0:
                    raise TimeoutError
                await asyncio.wait_for(waiter, remaining)
                endpoint = None if model.draining else self.pick(model, exclude)
                if endpoint is not None:
                    return endpoint
                waiter = asyncio.get_running_loop().create_future()
                model.waiters.appendleft(waiter)  # woken but beaten to the room: keep its place
        except TimeoutError:
            if cold:
                reason = f", reason {model.reason}" if model.reason else ""
                raise RouterError(
                    503,
                    "model_not_ready",
                    f"Model {model.full_name} was woken but had no ready replica within {timeout:g} s "
                    f"(phase {model.phase}{reason}); retry in {self.retry_after} s.",
                    retry_after=self.retry_after,
                ) from None
            raise RouterError(
                504,
                "queue_timeout",
                f"No replica of model {model.full_name} had room within {self.queue_timeout:g} s.",
            ) from None
        finally:
            if waiter in model.waiters:
                model.waiters.remove(waiter)
            self.metrics.queued(model.full_name, -1)
            self.metrics.queue_wait(model.full_name, time.monotonic() - started)

    def _wake(self, model: Model, everyone: bool = False) -> None:
        """Wakes the oldest waiter (a replica freed room) or all of them (replicas appeared)."""
        waiters = model.waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                if not everyone:
                    return

    def _wake_all(self, model: Model) -> None:
        if self.autoscaler is not None:
            self.autoscaler.ready(model)
        self._wake(model, everyone=True)
