"""The routing table as a source feeds it: a JSON file source, readiness, models and replicas coming
and going while requests are in flight."""

import json
import time

from conftest import Stack, get, post
from test_errors import wait_for

CHAT = "/v1/chat/completions"


def test_a_file_source_feeds_the_table_and_readiness(tmp_path):
    table = tmp_path / "table.json"
    stack = Stack(1, table_file=str(table), reload_interval=0.1)
    try:
        assert get(stack.router.admin_port, "/readyz")[0] == 503  # nothing read yet
        table.write_text(json.dumps({"models": [stack.model()]}))
        wait_for(lambda: get(stack.router.admin_port, "/readyz")[0] == 200)
        assert post(stack.port, CHAT, {"model": "qwen"})[0] == 200
        table.write_text(json.dumps({"models": []}))
        stamp = time.time() + 5
        import os

        os.utime(table, (stamp, stamp))
        wait_for(lambda: post(stack.port, CHAT, {"model": "qwen"})[0] == 404)
    finally:
        stack.close()


def test_endpoints_replaced_under_requests_in_flight(stack):
    """A replica dropped from the table while it answers: its request completes, the counts stay
    right, new requests go to the replicas listed now."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        slow = pool.submit(post, stack.port, CHAT, {"model": "qwen", "fake": {"delay": 0.5}})
        wait_for(lambda: stack.stats(0).active + stack.stats(1).active == 1)
        busy = 0 if stack.stats(0).active else 1
        stack.serve([stack.model(endpoints=[stack.address(1 - busy)])])
        assert all(post(stack.port, CHAT, {"model": "qwen"})[1]["x-replica"] == f"r{1 - busy}" for _ in range(3))
        assert slow.result()[0] == 200
    in_flight = stack.run(lambda: [e.in_flight for e in stack.router.table.models["team-a/qwen"].endpoints])
    assert in_flight == [0]
