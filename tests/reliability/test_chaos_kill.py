"""The operator's whole process group SIGKILLed at random moments, again and again, while models are
created, while a pull fails and is fixed, and while models are deleted with and without
purgeWeightsOnDelete. Afterwards every model converges (Serving, or gone), nothing is duplicated, no
pull ran twice for one source, the kept volumes are there and the purged ones gone.

The kill moments are drawn from RELIABILITY_SEED: the operator's uptime before each kill is uniform
in KILL_AFTER seconds (a reconcile takes one to a few seconds here, so kills land mid-run).
"""

from __future__ import annotations

import random
import threading
import time

import pytest

from reliability_checks import assert_no_artifact_rotation_failure, assert_world, log_offset
from reliability_models import FAILING_REPO, GOOD_REPO, converged, create_models, failed, serving
from reliability_paths import SCALE, SEED
from testbed_helpers import wait_until

pytestmark = pytest.mark.cluster

KILL_AFTER = (1.5, 8.0)
KILLS_PER_STAGE = 2 * SCALE


class Chaos(threading.Thread):
    """Kills and restarts the operator until stopped; remembers when it last came back."""

    def __init__(self, operator, rng: random.Random):
        super().__init__(daemon=True)
        self.operator, self.rng = operator, rng
        self.kills = 0
        self.last_start = time.monotonic()
        self.error: BaseException | None = None
        self._halt = threading.Event()

    def run(self):
        try:
            while True:
                uptime = self.rng.uniform(*KILL_AFTER)
                if self._halt.wait(uptime):
                    return
                self.operator.kill()
                self.kills += 1
                self.operator.start()
                self.last_start = time.monotonic()
        except BaseException as error:  # reported by stop()
            self.error = error

    def wait_kills(self, count: int, timeout: float) -> None:
        wait_until(f"{count} kills of the operator", lambda: self.kills >= count or self.error, timeout)

    def stop(self) -> float:
        """Stop killing; returns when the operator last started."""
        self._halt.set()
        self.join(timeout=120)
        if self.error:
            raise self.error
        return self.last_start


def test_operator_killed_at_random_moments(kube, operator, namespace, figures):
    since = log_offset()
    created = [f"create-{i}" for i in range(2 * SCALE)]
    fixed = [f"fix-{i}" for i in range(SCALE)]
    kept = [f"keep-{i}" for i in range(SCALE)]
    purged = [f"purge-{i}" for i in range(SCALE)]
    operator.start()
    chaos = Chaos(operator, random.Random(SEED))
    describe = lambda: f"{chaos.kills} kills so far\n{kube.describe(namespace)}"  # noqa: E731

    # Stage 1, under kills: models are created; one pull fails.
    create_models(kube, namespace, created + kept, purged)
    create_models(kube, namespace, fixed, [], repo=FAILING_REPO)
    chaos.start()
    ready_to_go_on = lambda: (  # noqa: E731
        all(failed(kube.model(namespace, n)) for n in fixed)
        and all(serving(kube.model(namespace, n)) for n in kept + purged)
    )
    wait_until("the failed pulls and the models to delete later to settle, under kills", ready_to_go_on, 240 * SCALE, describe)
    chaos.wait_kills(KILLS_PER_STAGE, 120)
    volumes = {n: kube.pvc(namespace, n)["metadata"]["uid"] for n in kept}

    # Stage 2, under kills: the failed pulls are fixed, models are deleted, with and without purge.
    stage_two = chaos.kills
    for name in fixed:
        kube.set_source(namespace, name, GOOD_REPO)
    for name in kept + purged:
        kube.delete_model(namespace, name)
    chaos.wait_kills(stage_two + KILLS_PER_STAGE, 120)
    last_start = chaos.stop()

    serve, gone = set(created + fixed), set(kept + purged)
    wait_until("every model to converge after the last kill", lambda: converged(kube, namespace, serve, gone), 180 * SCALE, describe)
    settled = time.monotonic() - last_start
    # The garbage collector removes the deleted models' children within a second or two.
    wait_until("the children of deleted models to go", lambda: not set(kube.names(kube.apps.list_namespaced_deployment, namespace)) & gone, 30)

    sources = {name: 1 for name in created + kept + purged} | {name: 2 for name in fixed}
    assert_world(kube, namespace, serve, gone, sources, volumes, set(purged))
    assert_no_artifact_rotation_failure(since)
    figures.record("operator SIGKILL", f"models Serving or gone after the last of {chaos.kills} kills", settled)
