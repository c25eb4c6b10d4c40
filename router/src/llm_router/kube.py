"""The cluster's TableSource: a watch of LLMModels and of their servers' EndpointSlices.

State is rebuilt from the API server on start and after any broken watch (list, then watch from the
list's resourceVersion), so a restarted router routes as the one before it did. A model's ready
endpoints are the ready addresses (port `http`) of the EndpointSlices that carry its Service's labels
(the EndpointSlice controller copies a Service's labels to its slices): `app.kubernetes.io/managed-by=
llm-operator`, `app.kubernetes.io/component=server` and `inference.ai.example.com/model=<name>`.
A model's phase and its `Ready` condition's reason come from its status.

`KubeScaler` is scaling.py's backend on the same API: the scale subresource of a model's server
Deployment and the models' activity Leases.

The API is read with a small HTTP/1.0 client (the watch's body then ends with the connection, no
chunk framing to parse); every connection and read is bounded, a watch by `timeoutSeconds`.
"""

import asyncio
import base64
import datetime
import hashlib
import json
import logging
import os
import socket
import ssl
import tempfile
import time
import urllib.parse

from .scaling import ScaleBackend
from .table import RoutingTable, Scaling, TableSource, in_flight

LOG = logging.getLogger("llm_router.kube")
MODELS = "/apis/inference.ai.example.com/v1alpha1/llmmodels"
OPT_OUT_ANNOTATION = "inference.ai.example.com/router"
SLICES = "/apis/discovery.k8s.io/v1/endpointslices"
SLICE_SELECTOR = "app.kubernetes.io/managed-by=llm-operator,app.kubernetes.io/component=server"
MODEL_LABEL = "inference.ai.example.com/model"
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
WATCH_SECONDS = 290
READ_TIMEOUT = 30.0  # a list, or a watch's silence (bookmarks come about once a minute)
LINE_LIMIT = 16 * 1024 * 1024
LOAD_ANNOTATION = "inference.ai.example.com/load."  # + a router's identity, hashed: "<load> <unix time>"
LOAD_FRESH_SECONDS = 10.0  # a router's load older than this counts as none (it stopped telling)
LOAD_REFRESH_SECONDS = 5.0  # an unchanged load is told again this often, to stay fresh
LOAD_FORGET_SECONDS = 300.0  # and removed from the Lease this long after its router's last word
DEFAULT_WAKE_SECONDS = 600.0  # a held request's wait when the model's startup budget is not in its status


class KubeError(Exception):
    pass


class KubeApi:
    """GET and watch with the pod's ServiceAccount, or a kubeconfig's client certificate (tests)."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext, token: str | None = None):
        self.host = host
        self.port = port
        self.context = context
        self.token = token

    @classmethod
    def in_cluster(cls) -> "KubeApi":
        context = ssl.create_default_context(cafile=f"{SERVICE_ACCOUNT}/ca.crt")
        with open(f"{SERVICE_ACCOUNT}/token", encoding="utf-8") as handle:
            token = handle.read().strip()
        return cls(os.environ["KUBERNETES_SERVICE_HOST"], int(os.environ["KUBERNETES_SERVICE_PORT"]), context, token)

    @classmethod
    def from_kubeconfig(cls, config: dict) -> "KubeApi":
        """From `kubectl config view --raw -o json`: the current context's cluster and user."""
        context_entry = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context_entry["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == context_entry["user"])
        url = urllib.parse.urlsplit(cluster["server"])
        context = ssl.create_default_context(cafile=_file(cluster, "certificate-authority"))
        if user.get("client-certificate") or user.get("client-certificate-data"):
            context.load_cert_chain(_file(user, "client-certificate"), _file(user, "client-key"))
        return cls(url.hostname, url.port or 443, context, user.get("token"))

    async def _send(self, method: str, path: str, body: dict | None = None):
        """The connection, once the response head is in, and the response's status."""
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, ssl=self.context, limit=LINE_LIMIT), READ_TIMEOUT
        )
        auth = f"Authorization: Bearer {self.token}\r\n" if self.token else ""
        payload = json.dumps(body).encode() if body is not None else b""
        content = f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n" if body is not None else ""
        writer.write(
            f"{method} {path} HTTP/1.0\r\nHost: {self.host}\r\nAccept: application/json\r\n{auth}{content}\r\n".encode()
            + payload
        )
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT)
        return reader, writer, int(head.split(b" ", 2)[1])

    async def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        """One request's status and JSON answer (any status: the caller decides)."""
        reader, writer, status = await self._send(method, path, body)
        try:
            answer = await asyncio.wait_for(reader.read(), READ_TIMEOUT)
        finally:
            writer.close()
        try:
            return status, json.loads(answer)
        except ValueError:
            return status, {}

    async def _open(self, path: str):
        reader, writer, status = await self._send("GET", path)
        if status != 200:
            body = await asyncio.wait_for(reader.read(4096), READ_TIMEOUT)
            writer.close()
            raise KubeError(f"GET {path.split('?')[0]}: HTTP {status}: {body[:300]!r}")
        return reader, writer

    async def list(self, path: str) -> dict:
        reader, writer = await self._open(path)
        try:
            return json.loads(await asyncio.wait_for(reader.read(), READ_TIMEOUT))
        finally:
            writer.close()

    async def watch(self, path: str):
        """Each event of one watch, until the server ends it."""
        reader, writer = await self._open(path)
        try:
            while True:
                line = await asyncio.wait_for(reader.readline(), READ_TIMEOUT + WATCH_SECONDS)
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        finally:
            writer.close()


def _file(section: dict, key: str) -> str | None:
    if section.get(key):
        return section[key]
    if not section.get(key + "-data"):
        return None
    handle, path = tempfile.mkstemp(prefix="llm-router-")
    with os.fdopen(handle, "wb") as out:
        out.write(base64.b64decode(section[key + "-data"]))
    return path


def model_state(obj: dict) -> tuple[str, str]:
    status = obj.get("status") or {}
    reason = next((c.get("reason", "") for c in status.get("conditions") or [] if c.get("type") == "Ready"), "")
    return status.get("phase") or "Pending", reason


def model_scaling(obj: dict) -> Scaling | None:
    """The router scales the model when the operator says so in its status.server: idleSeconds (scale to
    zero, `serve.autoscaling.minReplicas: 0`, the default applied) and inFlightScaling (a target of
    requests in flight per replica); a held request waits for as long as the model's startup budget."""
    server = (obj.get("status") or {}).get("server") or {}
    idle, scaling = server.get("idleSeconds"), server.get("inFlightScaling")
    if not idle and not scaling:
        return None
    startup = float(server.get("startupBudgetSeconds") or DEFAULT_WAKE_SECONDS)
    return Scaling(float(idle) if idle else None, startup, *in_flight(scaling))


def pod_namespace() -> str:
    with open(f"{SERVICE_ACCOUNT}/namespace", encoding="utf-8") as handle:
        return handle.read().strip()


def lease_name(model) -> str:
    """The model's activity Lease: a DNS subdomain naming it, hashed when too long for one."""
    name = f"llm-router.{model.namespace}.{model.name}"
    if len(name) > 253:
        name = "llm-router." + hashlib.sha256(model.full_name.encode()).hexdigest()[:32]
    return name


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class KubeScaler(ScaleBackend):
    """Writes the scale subresource of a model's server Deployment (named as the model), compare-and-set
    on its resourceVersion, and the models' activity Leases in `lease_namespace`."""

    def __init__(self, api: KubeApi, lease_namespace: str, identity: str | None = None):
        self.api = api
        self.lease_namespace = lease_namespace
        self.identity = identity or f"{socket.gethostname()}-{os.getpid()}"

    async def wake(self, model) -> bool:
        return await self.set_replicas(model, lambda replicas: 1 if replicas == 0 else None) is not None

    async def scale_down(self, model, idle_seconds: float) -> bool:
        status, lease = await self.api.request("GET", self._lease_path(model))
        if status == 200:
            renewed = (lease.get("spec") or {}).get("renewTime")
            if renewed and _age(renewed) < idle_seconds:
                return False  # another router used the model within the idle period
        elif status != 404:
            raise KubeError(f"GET lease {lease_name(model)}: HTTP {status}")
        return await self.set_replicas(model, lambda replicas: 0 if replicas > 0 else None) is not None

    async def touch(self, model) -> None:
        path = self._lease_path(model)
        spec = {"holderIdentity": self.identity, "renewTime": _now()}
        status, lease = await self.api.request("GET", path)
        if status == 404:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": lease_name(model)}}
            status, _ = await self.api.request("POST", path.rsplit("/", 1)[0], {**body, "spec": spec})
        elif status == 200:
            lease["spec"] = {**(lease.get("spec") or {}), **spec}
            status, _ = await self.api.request("PUT", path, lease)
        if status not in (200, 201, 409):  # 409: another router renewed it at the same moment: as good
            raise KubeError(f"activity lease {lease_name(model)}: HTTP {status}")

    def _lease_path(self, model) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.lease_namespace}/leases/{lease_name(model)}"

    async def report(self, model, load: int) -> int:
        """This router's load in the model's Lease (an annotation per router, `<load> <unix time>`,
        rewritten when it changed or is LOAD_REFRESH_SECONDS old), and the sum of the fresh ones."""
        path = self._lease_path(model)
        status, lease = await self.api.request("GET", path)
        if status not in (200, 404):
            raise KubeError(f"GET lease {lease_name(model)}: HTTP {status}")
        now = time.time()
        mine = LOAD_ANNOTATION + hashlib.sha256(self.identity.encode()).hexdigest()[:16]
        annotations = ((lease.get("metadata") or {}).get("annotations") or {}) if status == 200 else {}
        total, kept = load, {}
        for key, value in annotations.items():
            if not key.startswith(LOAD_ANNOTATION) or key == mine:
                kept[key] = value
                continue
            count, _, stamp = value.partition(" ")
            age = now - float(stamp or 0)
            if age <= LOAD_FRESH_SECONDS:
                total += int(count)
            if age <= LOAD_FORGET_SECONDS:  # a router gone for good: its entry is dropped
                kept[key] = value
        count, _, stamp = annotations.get(mine, "").partition(" ")
        if count != str(load) or now - float(stamp or 0) >= LOAD_REFRESH_SECONDS or len(kept) < len(annotations):
            kept[mine] = f"{load} {now:.0f}"
            if status == 404:
                body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                        "metadata": {"name": lease_name(model), "annotations": kept}, "spec": {}}  # fmt: skip
                status, _ = await self.api.request("POST", path.rsplit("/", 1)[0], body)
            else:
                lease["metadata"]["annotations"] = kept
                status, _ = await self.api.request("PUT", path, lease)
            if status not in (200, 201, 409):  # 409: another router wrote it meanwhile; told next time
                raise KubeError(f"activity lease {lease_name(model)}: HTTP {status}")
        return total

    async def set_replicas(self, model, decide) -> tuple[int, int] | None:
        """Sets the replicas to `decide(current)` unless it says None; a conflict reads them again."""
        path = f"/apis/apps/v1/namespaces/{model.namespace}/deployments/{model.name}/scale"
        for _ in range(5):
            status, scale = await self.api.request("GET", path)
            if status != 200:
                raise KubeError(f"GET scale of {model.full_name}: HTTP {status}")
            current = int((scale.get("spec") or {}).get("replicas") or 0)
            wanted = decide(current)
            if wanted is None:
                return None
            scale["spec"] = {"replicas": wanted}
            status, _ = await self.api.request("PUT", path, scale)
            if status == 200:
                return current, wanted
            if status != 409:
                raise KubeError(f"PUT scale of {model.full_name}: HTTP {status}")
        return None


def _age(stamp: str) -> float:
    then = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return (datetime.datetime.now(datetime.UTC) - then).total_seconds()


def ready_addresses(obj: dict) -> list[tuple[str, int]]:
    ports = obj.get("ports") or []
    port = next((p.get("port") for p in ports if p.get("name") == "http"), ports[0].get("port") if ports else None)
    if port is None:
        return []
    found = []
    for endpoint in obj.get("endpoints") or []:
        conditions = endpoint.get("conditions") or {}
        # an unknown `ready` is ready (the API's own rule); a terminating endpoint takes no new request
        if conditions.get("ready") is False or conditions.get("terminating") is True:
            continue
        found.extend((address, port) for address in (endpoint.get("addresses") or [])[:1])
    return found


class KubeSource(TableSource):
    def __init__(self, api: KubeApi, namespaces: frozenset[str] | None = None):
        super().__init__()
        self.api = api
        self.namespaces = namespaces
        self.models: dict[tuple[str, str], dict] = {}
        self.slices: dict[tuple[str, str], dict] = {}

    def _wanted(self, obj: dict) -> bool:
        return self.namespaces is None or obj["metadata"]["namespace"] in self.namespaces

    async def run(self, table: RoutingTable) -> None:
        delay = 1.0
        while True:
            try:
                await self._list_and_watch(table)
                delay = 1.0
            except (OSError, ValueError, KeyError, KubeError, TimeoutError, asyncio.IncompleteReadError) as exc:
                LOG.warning("routing table watch broken, listing again in %.0f s: %s", delay, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)

    async def _list_and_watch(self, table: RoutingTable) -> None:
        models = await self.api.list(MODELS)
        slices = await self.api.list(f"{SLICES}?labelSelector={urllib.parse.quote(SLICE_SELECTOR)}")
        self.models = {_key(obj): obj for obj in models["items"] if self._wanted(obj)}
        self.slices = {_key(obj): obj for obj in slices["items"] if self._wanted(obj)}
        self.apply(table)
        self.synced.set()
        watches = [
            asyncio.ensure_future(self._watch(table, MODELS, "", models["metadata"]["resourceVersion"], self.models)),
            asyncio.ensure_future(
                self._watch(table, SLICES, SLICE_SELECTOR, slices["metadata"]["resourceVersion"], self.slices)
            ),
        ]
        try:
            done, _ = await asyncio.wait(watches, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()
        finally:
            for task in watches:
                task.cancel()
            await asyncio.gather(*watches, return_exceptions=True)

    async def _watch(self, table, path, selector, version, store) -> None:
        """Watches from `version` on, again after each timeout; raises to relist when the version is gone."""
        while True:
            query = f"watch=1&allowWatchBookmarks=true&timeoutSeconds={WATCH_SECONDS}&resourceVersion={version}"
            if selector:
                query += "&labelSelector=" + urllib.parse.quote(selector)
            async for event in self.api.watch(f"{path}?{query}"):
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    raise KubeError(f"watch of {path}: {obj.get('message', obj)}")
                version = obj["metadata"]["resourceVersion"]
                if kind == "BOOKMARK" or not self._wanted(obj):
                    continue
                if kind == "DELETED":
                    store.pop(_key(obj), None)
                else:
                    store[_key(obj)] = obj
                self.apply(table)

    def apply(self, table: RoutingTable) -> None:
        """Makes the table say what the watched objects say (cheap: a handful of models per router)."""
        endpoints: dict[tuple[str, str], list[tuple[str, int]]] = {}
        for (namespace, _), obj in self.slices.items():
            model = (obj["metadata"].get("labels") or {}).get(MODEL_LABEL)
            if model:
                endpoints.setdefault((namespace, model), []).extend(ready_addresses(obj))
        served = {key: obj for key, obj in self.models.items() if not opted_out(obj)}
        for (namespace, name), obj in served.items():
            phase, reason = model_state(obj)
            table.set_model(namespace, name, phase, reason, _created(obj), model_scaling(obj))
            table.set_endpoints(namespace, name, sorted(set(endpoints.get((namespace, name), []))))
        for full in [full for full, model in table.models.items() if (model.namespace, model.name) not in served]:
            table.remove_model(*full.split("/", 1))


def opted_out(obj: dict) -> bool:
    """A model annotated inference.ai.example.com/router: "false" is not served (nor listed) by the router."""
    return (obj["metadata"].get("annotations") or {}).get(OPT_OUT_ANNOTATION) == "false"


def _key(obj: dict) -> tuple[str, str]:
    return obj["metadata"]["namespace"], obj["metadata"]["name"]


def _created(obj: dict) -> int:
    stamp = obj["metadata"].get("creationTimestamp")
    if not stamp:
        return 0
    return int(datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())
