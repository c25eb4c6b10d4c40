"""Scaling on requests in flight: ceil(load / target) replicas within min..max, the load summed over
every router (the backend plays the Lease: `others` is what the other routers told), a higher count
once it was asked for for the scale-up window, a lower one once nothing asked for more for the
scale-down window, and no scale-down by a router that has not watched a whole window (a restart).
"""

import concurrent.futures
import time

from conftest import post
from test_errors import wait_for
from test_scale_to_zero import ClusterScale, make

CHAT = "/v1/chat/completions"


def on_load(target=2, up=0.0, down=3.0, most=2):
    def models(stack):
        scaling = {
            "startupSeconds": 10,
            "inFlight": {
                "targetPerReplica": target,
                "minReplicas": 1,
                "maxReplicas": most,
                "scaleUpStabilizationSeconds": up,
                "scaleDownStabilizationSeconds": down,
            },
        }
        return [stack.model(replicas=1, scaling=scaling)]

    return models


def load(stack, count, seconds):
    pool = concurrent.futures.ThreadPoolExecutor(count)
    futures = [pool.submit(post, stack.port, CHAT, {"model": "qwen", "fake": {"delay": seconds}}) for _ in range(count)]
    pool.shutdown(wait=False)
    return futures


def test_load_scales_up_then_back_down_once_each(stack_factory):
    backend = ClusterScale(replicas=1)
    stack = make(stack_factory, backend, on_load())
    requests = load(stack, 4, 3.0)  # 4 in flight, 2 per replica: 2 replicas
    wait_for(lambda: backend.writes == [2], timeout=4)
    assert [future.result()[0] for future in requests] == [200] * 4
    wait_for(lambda: backend.writes == [2, 1], timeout=8)  # 3 s after the load ended
    time.sleep(2.5)
    assert backend.writes == [2, 1]  # and no flapping afterwards


def test_the_load_of_every_router_counts(stack_factory):
    backend = ClusterScale(replicas=1)
    backend.others = 3  # another router has 3 in flight; this one none
    make(stack_factory, backend, on_load(down=60))
    wait_for(lambda: backend.writes == [2], timeout=4)
    assert set(backend.loads) == {0}


def test_a_short_burst_does_not_scale_up_within_the_stabilisation_window(stack_factory):
    backend = ClusterScale(replicas=1)
    stack = make(stack_factory, backend, on_load(up=4.0))
    assert all(future.result()[0] == 200 for future in load(stack, 4, 2.0))
    time.sleep(2.5)
    assert backend.writes == []


def test_a_restarted_router_does_not_scale_down_before_a_whole_window(stack_factory):
    backend = ClusterScale(replicas=2)
    stack = make(stack_factory, backend, on_load(down=4.0))
    stack.run(stack.router.table.set_endpoints, "team-a", "qwen", [("127.0.0.1", p) for _, p, _ in stack.fakes])
    time.sleep(3.0)
    assert backend.writes == []
    wait_for(lambda: backend.writes == [1], timeout=5)
