"""Scale to zero and back: requests for a model at zero are held, wake it once, and are all answered;
a full queue is 429, a wake that takes too long 503 with the model's reason; a model nobody uses is
scaled to zero after its idle period, never while a request runs, never by a router just restarted.

The scale backend here plays the Kubernetes API (the Deployment's replica count and the activity
record): it counts what the router writes, and a wake makes the fake replicas ready after `start`
seconds as the EndpointSlice watch would. The real API is tests_cluster/test_kube_scaler.py's.
"""

import asyncio
import concurrent.futures
import time

from conftest import post
from llm_router import scaling as scaling_module
from llm_router.scaling import ScaleBackend
from test_errors import assert_openai_error, wait_for

CHAT = "/v1/chat/completions"


class ClusterScale(ScaleBackend):
    def __init__(self, replicas: int, start: float | None = 0.5):
        self.replicas = replicas
        self.start = start  # seconds from the wake until the replicas are ready; None: never
        self.stack = None
        self.wake_calls = 0
        self.ups = 0
        self.downs = 0
        self.touches = 0
        self.others = 0
        self.loads = []
        self.writes = []  # replica counts written on load

    async def wake(self, model) -> bool:
        self.wake_calls += 1
        if self.replicas:
            return False
        self.replicas = 1
        self.ups += 1
        if self.start is not None:
            asyncio.get_running_loop().call_later(self.start, self._ready, model)
        return True

    def _ready(self, model) -> None:
        table = self.stack.router.table
        table.set_model(model.namespace, model.name, "Serving", "Available", 0, model.scaling)
        table.set_endpoints(model.namespace, model.name, [("127.0.0.1", port) for _, port, _ in self.stack.fakes])

    async def touch(self, model) -> None:
        self.touches += 1

    async def report(self, model, load: int) -> int:
        self.loads.append(load)
        return load + self.others  # the other routers' load, as the Lease says it

    async def set_replicas(self, model, decide):
        wanted = decide(self.replicas)
        if wanted is None:
            return None
        before, self.replicas = self.replicas, wanted
        self.writes.append(wanted)
        count = min(wanted, len(self.stack.fakes))  # the fakes play the ready ones
        self.stack.router.table.set_endpoints(model.namespace, model.name, [
            ("127.0.0.1", port) for _, port, _ in self.stack.fakes[:count]])  # fmt: skip
        return before, wanted

    async def scale_down(self, model, idle_seconds: float) -> bool:
        if not self.replicas:
            return False
        self.replicas = 0
        self.downs += 1
        table = self.stack.router.table
        table.set_endpoints(model.namespace, model.name, [])
        table.set_model(model.namespace, model.name, "Idle", "ScaledToZero", 0, model.scaling)
        return True


def at_zero(stack, idle=60.0, startup=10.0):
    return [stack.model(phase="Idle", reason="ScaledToZero", replicas=0, scaling=scaling(idle, startup))]


def serving(stack, idle=60.0, startup=10.0):
    return [stack.model(scaling=scaling(idle, startup))]


def scaling(idle, startup):
    return {"idleSeconds": idle, "startupSeconds": startup}


def make(stack_factory, backend, models, **settings):
    stack = stack_factory(models=models, scale_backend=backend, **settings)
    backend.stack = stack
    return stack


def burst(stack, count, document):
    with concurrent.futures.ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda _: post(stack.port, CHAT, document, timeout=30), range(count)))


def test_a_burst_of_50_at_zero_is_all_answered_after_one_scale_up(stack_factory):
    backend = ClusterScale(replicas=0)
    stack = make(stack_factory, backend, at_zero)
    results = burst(stack, 50, {"model": "qwen"})
    assert [status for status, _, _ in results] == [200] * 50
    assert backend.ups == 1 and backend.wake_calls == 1  # one wake, one write, whatever the burst
    assert len(stack.stats(0).requests) + len(stack.stats(1).requests) == 50  # none lost, none twice
    text = stack.metrics()
    assert 'llm_router_cold_starts_total{model="team-a/qwen"} 1' in text
    assert 'llm_router_cold_start_seconds_count{model="team-a/qwen"} 1' in text
    assert 'llm_router_scale_events_total{model="team-a/qwen",direction="up"} 1' in text
    assert 'llm_router_queue_wait_seconds_count{model="team-a/qwen"} 50' in text
    assert 'llm_router_requests_total{model="team-a/qwen",code="200"} 50' in text


def test_a_model_at_zero_is_listed_with_its_phase(stack_factory):
    stack = make(stack_factory, ClusterScale(replicas=0), at_zero)
    from conftest import get

    status, _, body = get(stack.port, "/v1/models")
    assert status == 200
    assert body["data"][0]["status"] == {"phase": "Idle", "reason": "ScaledToZero"}


def test_a_full_wake_queue_is_429_and_a_wake_too_long_503_with_the_models_reason(stack_factory):
    backend = ClusterScale(replicas=0, start=None)  # the model never becomes ready
    stack = make(stack_factory, backend, at_zero, queue_length=3, wake_timeout=1.5, retry_after=7)
    results = burst(stack, 5, {"model": "qwen"})
    statuses = sorted(status for status, _, _ in results)
    assert statuses == [429, 429, 503, 503, 503]
    for status, headers, body in results:
        if status == 429:
            assert_openai_error(status, body, 429, "queue_full", stack)
        else:
            assert_openai_error(status, body, 503, "model_not_ready", stack)
            assert headers["retry-after"] == "7"
            assert "phase Idle, reason ScaledToZero" in body["error"]["message"]
    assert backend.ups == 1
    assert 'llm_router_queue_rejected_total{model="team-a/qwen"} 2' in stack.metrics()


def test_the_wait_defaults_to_the_models_startup_budget(stack_factory):
    backend = ClusterScale(replicas=0, start=None)
    stack = make(stack_factory, backend, lambda s: at_zero(s, startup=1.0))
    started = time.monotonic()
    status, _, body = post(stack.port, CHAT, {"model": "qwen"})
    waited = time.monotonic() - started
    assert_openai_error(status, body, 503, "model_not_ready", stack)
    assert "within 1 s" in body["error"]["message"]
    assert 0.9 < waited < 3.0


def test_a_model_unused_for_its_idle_period_goes_to_zero_and_comes_back(stack_factory):
    backend = ClusterScale(replicas=1)
    stack = make(stack_factory, backend, lambda s: serving(s, idle=1.0))
    assert post(stack.port, CHAT, {"model": "qwen"})[0] == 200
    wait_for(lambda: backend.downs == 1, timeout=6)
    assert backend.touches >= 1  # the request was told to the other routers
    status, _, _ = post(stack.port, CHAT, {"model": "qwen"})
    assert status == 200 and backend.ups == 1


def test_never_scaled_down_while_a_request_runs(stack_factory):
    backend = ClusterScale(replicas=1)
    stack = make(stack_factory, backend, lambda s: serving(s, idle=1.0))
    status, _, _ = post(stack.port, CHAT, {"model": "qwen", "fake": {"delay": 3.0}})
    assert status == 200 and backend.downs == 0
    wait_for(lambda: backend.downs == 1, timeout=6)


def test_a_restarted_router_neither_wakes_nor_scales_down_before_its_idle_period(stack_factory):
    """A router starting (or restarting) counts idleness from its start: no write until then."""
    backend = ClusterScale(replicas=1)
    make(stack_factory, backend, lambda s: serving(s, idle=3.0))
    time.sleep(2.0)
    assert (backend.ups, backend.downs, backend.touches, backend.wake_calls) == (0, 0, 0, 0)
    wait_for(lambda: backend.downs == 1, timeout=5)
    assert backend.ups == 0


def test_a_wake_undone_while_requests_are_held_is_sent_again(stack_factory, monkeypatch):
    """A write racing the wake put the count back to 0: the held requests are not left to time out."""
    monkeypatch.setattr(scaling_module, "WAKE_RECHECK_SECONDS", 0.5)
    backend = ClusterScale(replicas=0, start=None)
    stack = make(stack_factory, backend, at_zero, wake_timeout=8.0)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        held = pool.submit(post, stack.port, CHAT, {"model": "qwen"}, None, 15)
        wait_for(lambda: backend.ups == 1)
        backend.replicas, backend.start = 0, 0.1  # undone, and the next wake's replica starts
        wait_for(lambda: backend.ups == 2, timeout=4)
        assert held.result()[0] == 200
    assert 'llm_router_cold_starts_total{model="team-a/qwen"} 1' in stack.metrics()


def test_a_model_still_loading_is_not_scaled_away(stack_factory):
    """Woken, its replica loading for longer than the idle period: not idle until it serves."""
    backend = ClusterScale(replicas=1)
    stack = make(stack_factory, backend, lambda s: [s.model(phase="Deploying", replicas=0, scaling=scaling(1.0, 60))])
    time.sleep(2.5)
    assert backend.downs == 0
    stack.serve(serving(stack, idle=1.0))
    wait_for(lambda: backend.downs == 1, timeout=4)


def test_each_cold_start_is_counted_once_with_its_duration(stack_factory):
    backend = ClusterScale(replicas=0, start=0.3)
    stack = make(stack_factory, backend, lambda s: at_zero(s, idle=1.0))
    assert post(stack.port, CHAT, {"model": "qwen"})[0] == 200
    stack.run(backend._ready, stack.router.table.models["team-a/qwen"])  # the watch says the same again
    text = stack.metrics()
    assert 'llm_router_cold_starts_total{model="team-a/qwen"} 1' in text
    assert 'llm_router_cold_start_seconds_count{model="team-a/qwen"} 1' in text
    wait_for(lambda: backend.downs == 1, timeout=6)
    assert post(stack.port, CHAT, {"model": "qwen"})[0] == 200
    text = stack.metrics()
    assert 'llm_router_cold_starts_total{model="team-a/qwen"} 2' in text
    assert 'llm_router_cold_start_seconds_count{model="team-a/qwen"} 2' in text
    assert (backend.ups, backend.downs) == (2, 1)


def test_a_request_arriving_during_the_scale_down_is_held_and_wakes_the_model(stack_factory):
    """Not sent to a replica being stopped: held, and answered by the replica the wake brings."""

    class SlowDown(ClusterScale):
        scaling_down = False

        async def scale_down(self, model, idle_seconds):
            self.scaling_down = True
            await asyncio.sleep(0.6)  # the API's round trips
            return await super().scale_down(model, idle_seconds)

    backend = SlowDown(replicas=1, start=0.3)
    stack = make(stack_factory, backend, lambda s: serving(s, idle=1.0))
    wait_for(lambda: backend.scaling_down, timeout=5)
    status, _, _ = post(stack.port, CHAT, {"model": "qwen"})
    assert status == 200
    assert (backend.downs, backend.ups) == (1, 1)  # answered after the wake, not by the replica going away
    assert len(stack.stats(0).requests) + len(stack.stats(1).requests) == 1
