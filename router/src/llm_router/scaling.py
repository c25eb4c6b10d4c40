"""Scale to zero and back, for the models whose spec hands their replicas to the router
(`serve.autoscaling.minReplicas: 0`; docs/design.md, "Scale to zero and back: the router decides").

- A request for such a model finding no ready replica is held (the balancer's queue) and wakes the
  model: one wake per cold start whatever the number of held requests; the wake itself is a
  compare-and-set of the Deployment's scale from 0 to 1, so several routers wake it once.
- Scaling on load (status.server.inFlightScaling): `scale_on_load`.
- Every `SWEEP_SECONDS`, for each model scaled to zero: a router that used it (requests in flight or held)
  renews the model's shared activity record at most every tenth of its idle period; one that did
  not use it for the idle period asks the backend to scale it to zero, which the backend does only
  if no router renewed the record within the idle period (compare-and-set again). A model still
  loading (phase Deploying) is not idle: its idle period starts when it is done. From the decision to
  scale down until its replicas leave the EndpointSlice, new requests are held (and wake it again)
  rather than sent to a pod being stopped.

The backend (`ScaleBackend`) is the Kubernetes API (kube.py's `KubeScaler`); the tests give their
own to see what is written.
"""

import abc
import asyncio
import logging
import math
import time

from .table import Model, RoutingTable

LOG = logging.getLogger("llm_router.scaling")
SWEEP_SECONDS = 1.0
WAKE_RECHECK_SECONDS = 10.0
LOAD_SECONDS = 2.0  # how often a model's load is told, and its replicas decided
DRAIN_SECONDS = 30.0  # longest a model scaled to zero holds new requests while its replicas still show


class ScaleBackend(abc.ABC):
    @abc.abstractmethod
    async def wake(self, model: Model) -> bool:
        """Scales the model from 0 to 1 replica; False when it was not at 0 (nothing written)."""

    @abc.abstractmethod
    async def touch(self, model: Model) -> None:
        """Records, for every router, that this one uses the model now."""

    @abc.abstractmethod
    async def scale_down(self, model: Model, idle_seconds: float) -> bool:
        """Scales the model to 0 unless some router used it within `idle_seconds`; True if written."""

    @abc.abstractmethod
    async def report(self, model: Model, load: int) -> int:
        """Records this router's load on the model; returns the sum of every router's recent one."""

    @abc.abstractmethod
    async def set_replicas(self, model: Model, decide) -> tuple[int, int] | None:
        """Sets the replicas to `decide(current)` unless it says None; (before, after) when written."""


class Autoscaler:
    def __init__(self, backend: ScaleBackend, metrics, wake_timeout: float = 0.0):
        self.backend = backend
        self.metrics = metrics
        self.wake_timeout = wake_timeout

    def timeout(self, model: Model) -> float:
        """How long a request held for the model waits: the router's setting, else its startup budget."""
        return self.wake_timeout or model.scaling.startup_seconds

    def wake(self, model: Model) -> None:
        """A request is held for the model with no ready replica: wake it. One cold start (metric,
        duration) per wait; the wake is sent again at most every WAKE_RECHECK_SECONDS while requests
        are held (a compare-and-set from 0: it writes only if the count went back to 0 meanwhile)."""
        now = time.monotonic()
        if model.woken_at is None or now - model.woken_at >= self.timeout(model):
            self.metrics.cold_started(model.full_name)
            model.woken_at = now
        elif now - model.wake_sent < WAKE_RECHECK_SECONDS:
            return
        model.wake_sent = now
        model.waking = asyncio.ensure_future(self._wake(model))

    async def _wake(self, model: Model) -> None:
        try:
            if await self.backend.wake(model):
                self.metrics.scaled(model.full_name, "up")
                LOG.info("model %s woken: scaled from 0 to 1 replica", model.full_name)
        except Exception as exc:  # the held requests time out with the model's reason; the next wakes again
            LOG.warning("model %s not woken: %s", model.full_name, exc)
            model.wake_sent = 0.0

    def ready(self, model: Model) -> None:
        """A replica of the model became ready: the cold start, if any, is over."""
        if model.woken_at is not None:
            self.metrics.cold_start(model.full_name, time.monotonic() - model.woken_at)
            model.woken_at = None
            model.wake_sent = 0.0

    async def run(self, table: RoutingTable) -> None:
        while True:
            await asyncio.sleep(SWEEP_SECONDS)
            for model in [model for model in table.models.values() if model.scaling is not None]:
                try:
                    await self.sweep(model, time.monotonic())
                except Exception as exc:  # one model's API error must not stop the others' sweep
                    LOG.warning("scaling sweep of model %s: %s", model.full_name, exc)

    async def sweep(self, model: Model, now: float) -> None:
        if model.draining and now - model.draining > DRAIN_SECONDS:
            model.draining = 0.0  # its replicas never left the EndpointSlice (the scale was undone)
        if model.waiters and not model.endpoints and model.holds:
            self.wake(model)  # still held: the count may have gone back to 0 (a scale-down raced the wake)
        if model.scaling.target is not None:
            await self.scale_on_load(model, now)
        if model.scaling.idle_seconds is not None:
            await self.scale_to_zero(model, now)

    async def scale_to_zero(self, model: Model, now: float) -> None:
        idle = model.scaling.idle_seconds
        if model.load:
            model.last_active = now
        if model.last_active > model.renewed:
            if now - model.renewed >= idle / 10:
                model.renewed = now
                await self.backend.touch(model)
            return
        if model.phase == "Deploying":
            model.last_active = model.renewed = now  # loading is not idle (KServe #1247): counted once it serves
            return
        if now - model.last_active < idle or (not model.endpoints and model.phase == "Idle"):
            return
        model.last_active = model.renewed = now  # asked once per idle period, whatever the answer
        # A request arriving while the replicas go away is held, not sent to a pod being stopped.
        model.draining = now
        down = False
        try:
            down = await self.backend.scale_down(model, idle)
        finally:
            if not down:
                model.draining = 0.0
        if down:
            self.metrics.scaled(model.full_name, "down")
            LOG.info("model %s scaled to zero after %g s without a request", model.full_name, idle)
        if model.waiters:  # held meanwhile: a wake that read the count before the scale-down is sent again
            model.wake_sent = 0.0
            self.wake(model)

    async def scale_on_load(self, model: Model, now: float) -> None:
        """Every LOAD_SECONDS: tell the others this router's load, read the sum of every router's, and
        set the replicas it asks for (ceil(sum / target) within min..max), stabilised: a higher count
        once every sample of the last `up_seconds` asked for it, a lower one once none of the last
        `down_seconds` asked for more (each only when this router has samples that old: a restarted
        router changes nothing before then). A model at zero is left to a request to wake it."""
        scaling = model.scaling
        if now - model.reported[1] < LOAD_SECONDS:
            return
        load = model.load
        model.reported = (load, now)
        total = await self.backend.report(model, load)
        desired = min(max(math.ceil(total / scaling.target), scaling.min_replicas, 1), scaling.max_replicas)
        wanted = model.wanted
        wanted.append((now, desired))
        while now - wanted[0][0] > max(scaling.up_seconds, scaling.down_seconds) + LOAD_SECONDS:
            wanted.popleft()
        up = 0  # no sample as old as the window (a router just started): no scale-up yet either
        if now - wanted[0][0] >= scaling.up_seconds:
            up = min(replicas for when, replicas in wanted if now - when <= scaling.up_seconds)
        down = None
        if now - wanted[0][0] >= scaling.down_seconds:
            down = max(replicas for when, replicas in wanted if now - when <= scaling.down_seconds)
        ready = len(model.endpoints)
        if ready >= up and (down is None or ready <= down):
            return  # as many ready replicas as asked: nothing to read or write

        def decide(current: int) -> int | None:
            if current == 0:
                return None
            if current < up:
                return up
            if down is not None and current > down:
                return down
            return None

        written = await self.backend.set_replicas(model, decide)
        if written is not None:
            before, after = written
            self.metrics.scaled(model.full_name, "up" if after > before else "down")
            LOG.info("model %s scaled from %d to %d replicas: %d requests in flight", model.full_name, before, after, total)
