"""The routing table: each model the router serves, its state and its ready endpoints.

A source feeds it (`TableSource`): on the cluster a watch of LLMModels and of the EndpointSlices of
their Services; here a JSON file. The table only keeps what the source says; the balancer reads it.

Names: a request's `model` is `<namespace>/<name>`, which always names one model, or a bare `<name>`,
which names the one model of that name among those the caller may use (several: the request is
refused as ambiguous, listing the full names).
"""

import abc
import asyncio
import collections
import json
import logging
import os
import time

from .errors import RouterError, shown

LOG = logging.getLogger("llm_router.table")
SERVING = "Serving"
# Phases in which a model the router scales is held for rather than refused: at zero (the operator's
# phase for it), starting after a wake, or serving with no ready replica for a moment.
HOLD_PHASES = frozenset(("Idle", "Deploying", SERVING))


class Scaling:
    """What the operator hands the router for a model (its status.server): scale to zero after
    `idle_seconds` (None: never), a held request's wait (`startup_seconds`), and scaling on in-flight
    requests (`target` per replica, None: not), between `min_replicas` and `max_replicas`, a higher
    count taken once wanted for `up_seconds`, a lower one once wanted for `down_seconds`."""

    __slots__ = ("idle_seconds", "startup_seconds", "target", "min_replicas", "max_replicas", "up_seconds", "down_seconds")

    def __init__(
        self,
        idle_seconds: float | None,
        startup_seconds: float,
        target: int | None = None,
        min_replicas: int = 1,
        max_replicas: int = 1,
        up_seconds: float = 0.0,
        down_seconds: float = 300.0,
    ):
        self.idle_seconds = idle_seconds
        self.startup_seconds = startup_seconds
        self.target = target
        self.min_replicas = min_replicas
        self.max_replicas = max_replicas
        self.up_seconds = up_seconds
        self.down_seconds = down_seconds


class Endpoint:
    """One ready replica of a model's server, with the requests the router has in flight to it."""

    __slots__ = ("host", "port", "in_flight", "pool", "key")

    def __init__(self, host: str, port: int):
        self.host = host
        self.port = port
        self.key = (host, port)
        self.in_flight = 0
        self.pool = None  # the upstream module's idle keep-alive connections, set on first use

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


class Model:
    __slots__ = (
        "namespace",
        "name",
        "full_name",
        "phase",
        "reason",
        "endpoints",
        "created",
        "waiters",
        "_next",
        "scaling",
        "last_active",
        "renewed",
        "waking",
        "woken_at",
        "wake_sent",
        "draining",
        "wanted",
        "reported",
    )

    def __init__(self, namespace: str, name: str):
        self.namespace = namespace
        self.name = name
        self.full_name = f"{namespace}/{name}"
        self.phase = "Pending"
        self.reason = ""
        self.endpoints: list[Endpoint] = []
        self.created = 0
        self.waiters = None  # the balancer's queue of requests waiting for room
        self._next = 0  # where the next tie among equally loaded endpoints is broken
        self.scaling: Scaling | None = None  # set when the router scales this model (to zero and back)
        self.last_active = time.monotonic()  # a new (or restarted) router counts idleness from now
        self.renewed = self.last_active  # when this router last told the others it used the model (the Lease)
        self.waking = None  # the last wake's task (kept referenced while it runs)
        self.woken_at = None  # when the wake began, until a replica is ready (the cold start's duration)
        self.wake_sent = 0.0  # when the wake was last sent to the backend
        self.draining = 0.0  # since when it is being scaled to zero: new requests are held, not sent
        self.wanted = collections.deque()  # (when, replicas) the in-flight load asked for, newest last
        self.reported = (0, 0.0)  # the load this router last told the others, and when

    @property
    def serving(self) -> bool:
        return self.phase == SERVING

    @property
    def holds(self) -> bool:
        """Requests wait for a replica (and wake the model) instead of being refused."""
        return self.scaling is not None and self.scaling.idle_seconds is not None and self.phase in HOLD_PHASES

    @property
    def load(self) -> int:
        """This router's requests for the model: in flight and waiting."""
        return len(self.waiters or ()) + sum(endpoint.in_flight for endpoint in self.endpoints)


class RoutingTable:
    def __init__(self):
        self.models: dict[str, Model] = {}
        self._by_name: dict[str, list[Model]] = {}
        self.on_endpoints_added = None  # the balancer's hook: wakes requests waiting for room

    # --- what a source calls -------------------------------------------------------------------
    def set_model(
        self, namespace: str, name: str, phase: str, reason: str = "", created: int = 0, scaling: Scaling | None = None
    ) -> Model:
        full = f"{namespace}/{name}"
        model = self.models.get(full)
        if model is None:
            model = self.models[full] = Model(namespace, name)
            self._by_name.setdefault(name, []).append(model)
        model.phase, model.reason, model.created, model.scaling = phase, reason, created, scaling
        return model

    def remove_model(self, namespace: str, name: str) -> None:
        model = self.models.pop(f"{namespace}/{name}", None)
        if model is None:
            return
        same = self._by_name[name]
        same.remove(model)
        if not same:
            del self._by_name[name]
        for endpoint in model.endpoints:
            endpoint.close()
        model.endpoints = []

    def set_endpoints(self, namespace: str, name: str, addresses: list[tuple[str, int]]) -> None:
        """The model's ready endpoints now; one still listed keeps its count of requests in flight."""
        model = self.models.get(f"{namespace}/{name}")
        if model is None:
            return
        kept = {endpoint.key: endpoint for endpoint in model.endpoints}
        endpoints = [kept.pop((host, port), None) or Endpoint(host, port) for host, port in addresses]
        for gone in kept.values():
            gone.close()
        model.endpoints = endpoints
        if not endpoints:
            model.draining = 0.0  # a scale to zero is done: requests held meanwhile wake the model
        elif self.on_endpoints_added is not None:
            self.on_endpoints_added(model)

    # --- what the handlers call ---------------------------------------------------------------
    def visible(self, allowed) -> list[Model]:
        return [model for model in self.models.values() if allowed(model)]

    def resolve(self, requested, allowed) -> Model:
        """The model a request names, among those `allowed(model)` lets the caller use."""
        if not isinstance(requested, str) or not requested:
            raise RouterError(400, "model_missing", "The request must name a model in its 'model' field.")
        if "/" in requested:
            model = self.models.get(requested)
            if model is not None and allowed(model):
                return model
        else:
            found = [model for model in self._by_name.get(requested, ()) if allowed(model)]
            if len(found) == 1:
                return found[0]
            if found:
                names = ", ".join(sorted(model.full_name for model in found))
                raise RouterError(
                    400, "model_ambiguous", f"The model name '{shown(requested)}' is ambiguous: use one of {names}."
                )
        raise RouterError(
            404,
            "model_not_found",
            f"The model '{shown(requested)}' does not exist or you do not have access to it. "
            "GET /v1/models lists the models you can use.",
        )


class TableSource(abc.ABC):
    """Feeds a RoutingTable and keeps it current; `synced` is set once the first full state is in."""

    def __init__(self):
        self.synced = asyncio.Event()

    @abc.abstractmethod
    async def run(self, table: RoutingTable) -> None:
        """Runs until cancelled."""


class FileSource(TableSource):
    """A JSON file: {"models": [{"namespace", "name", "phase", "reason", "endpoints": ["host:port"],
    "scaling": {"idleSeconds", "startupSeconds", "inFlight"} (optional: the router scales the model;
    "inFlight" as status.server.inFlightScaling)}]}.

    For local runs and tests; re-read when its modification time changes (checked each `interval`).
    """

    def __init__(self, path: str, interval: float = 1.0):
        super().__init__()
        self.path = path
        self.interval = interval
        self._stamp = None

    def load(self, table: RoutingTable) -> None:
        stamp = os.stat(self.path).st_mtime_ns
        if stamp == self._stamp:
            return
        with open(self.path, encoding="utf-8") as handle:
            document = json.load(handle)
        self._stamp = stamp
        apply_document(table, document)

    async def run(self, table: RoutingTable) -> None:
        while True:
            try:
                self.load(table)
                self.synced.set()
            except (OSError, ValueError, KeyError, TypeError) as exc:
                LOG.warning("routing table file %s not loaded: %s", self.path, exc)
            await asyncio.sleep(self.interval)


def in_flight(spec: dict | None) -> tuple:
    """Scaling's in-flight arguments from status.server.inFlightScaling (or a table file's "inFlight")."""
    if not spec:
        return ()
    return (
        int(spec["targetPerReplica"]),
        int(spec["minReplicas"]),
        int(spec["maxReplicas"]),
        float(spec.get("scaleUpStabilizationSeconds", 0)),
        float(spec.get("scaleDownStabilizationSeconds", 300)),
    )


def apply_document(table: RoutingTable, document: dict) -> None:
    """Makes the table say what the document says: models gone from it are removed."""
    wanted = set()
    for entry in document.get("models", []):
        namespace, name = entry["namespace"], entry["name"]
        wanted.add(f"{namespace}/{name}")
        scaling = entry.get("scaling")
        if scaling is not None:
            scaling = Scaling(scaling.get("idleSeconds"), scaling["startupSeconds"], *in_flight(scaling.get("inFlight")))
        table.set_model(
            namespace, name, entry.get("phase", SERVING), entry.get("reason", ""), entry.get("created", 0), scaling
        )
        addresses = []
        for address in entry.get("endpoints", []):
            host, _, port = address.rpartition(":")
            addresses.append((host, int(port)))
        table.set_endpoints(namespace, name, addresses)
    for full in [full for full in table.models if full not in wanted]:
        table.remove_model(*full.split("/", 1))
