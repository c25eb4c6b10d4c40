"""The cluster's TableSource: a watch of LLMModels and of their servers' EndpointSlices.

State is rebuilt from the API server on start and after any broken watch (list, then watch from the
list's resourceVersion), so a restarted router routes as the one before it did. A model's ready
endpoints are the ready addresses (port `http`) of the EndpointSlices that carry its Service's labels
(the EndpointSlice controller copies a Service's labels to its slices): `app.kubernetes.io/managed-by=
llm-operator`, `app.kubernetes.io/component=server` and `inference.ai.example.com/model=<name>`.
A model's phase and its `Ready` condition's reason come from its status.

The API is read with a small HTTP/1.0 client (the watch's body then ends with the connection, no
chunk framing to parse); every connection and read is bounded, a watch by `timeoutSeconds`.
"""

import asyncio
import base64
import json
import logging
import os
import ssl
import tempfile
import urllib.parse

from .table import RoutingTable, TableSource

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

    async def _open(self, path: str):
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, ssl=self.context, limit=LINE_LIMIT), READ_TIMEOUT
        )
        auth = f"Authorization: Bearer {self.token}\r\n" if self.token else ""
        writer.write(f"GET {path} HTTP/1.0\r\nHost: {self.host}\r\nAccept: application/json\r\n{auth}\r\n".encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT)
        status = int(head.split(b" ", 2)[1])
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
            table.set_model(namespace, name, phase, reason, _created(obj))
            table.set_endpoints(namespace, name, sorted(set(endpoints.get((namespace, name), []))))
        for full in [full for full, model in table.models.items() if (model.namespace, model.name) not in served]:
            table.remove_model(*full.split("/", 1))


def opted_out(obj: dict) -> bool:
    """A model annotated inference.ai.example.com/router: "false" is not served (nor listed) by the router."""
    return (obj["metadata"].get("annotations") or {}).get(OPT_OUT_ANNOTATION) == "false"


def _key(obj: dict) -> tuple[str, str]:
    return obj["metadata"]["namespace"], obj["metadata"]["name"]


def _created(obj: dict) -> int:
    import datetime

    stamp = obj["metadata"].get("creationTimestamp")
    if not stamp:
        return 0
    return int(datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())
