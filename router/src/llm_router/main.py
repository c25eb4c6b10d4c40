"""Starts the router: the table's source, the public and admin ports, the deadline sweep."""

import asyncio
import json
import logging
import os
import signal
import socket
import time

from . import config
from .auth import KeyStore
from .balancer import Balancer
from .handlers import AdminApp, App
from .metrics import Metrics
from .proxy import Forwarder
from .scaling import Autoscaler
from .server import ClientConnection
from .table import FileSource, RoutingTable, TableSource

LOG = logging.getLogger("llm_router")
SWEEP_INTERVAL = 0.5


class Router:
    """Everything one router process runs; tests start it on 127.0.0.1 with a port of 0."""

    def __init__(self, settings: config.Settings, source: TableSource | None = None, scale_backend=None):
        self.settings = settings
        self.table = RoutingTable()
        self.source = source or make_source(settings)
        self.metrics = Metrics()
        self.keys = KeyStore(settings.api_keys_file, settings.reload_interval)
        backend = scale_backend or make_scale_backend(settings, self.source)
        self.autoscaler = Autoscaler(backend, self.metrics, settings.wake_timeout) if backend is not None else None
        self.balancer = Balancer(self.table, settings, self.metrics, self.autoscaler)
        self.app = App(
            settings,
            self.table,
            self.balancer,
            self.keys,
            self.metrics,
            Forwarder(settings, self.balancer, self.metrics),
        )
        self.connections: set[ClientConnection] = set()
        self.servers = []
        self.background = []
        self.port = None
        self.admin_port = None

    async def start(self, sock: socket.socket | None = None) -> None:
        loop = asyncio.get_running_loop()
        settings = self.settings
        if self.keys.enabled:
            self.keys.load()  # refuse to start on an unreadable keys file rather than serve without it
            self.background.append(loop.create_task(self.keys.run()))
        if self.source is not None:
            self.background.append(loop.create_task(self.source.run(self.table)))
        if self.autoscaler is not None:
            self.background.append(loop.create_task(self.autoscaler.run(self.table)))
        public = await loop.create_server(
            lambda: ClientConnection(self.app, settings, self.connections),
            host=None if sock else settings.host,
            port=None if sock else settings.port,
            sock=sock,
            reuse_port=None if sock else settings.workers > 1,
            backlog=4096,
        )
        admin = await loop.create_server(
            lambda: ClientConnection(AdminApp(self.metrics, self.source or _Synced()), settings, self.connections),
            host=settings.host,
            port=settings.admin_port,
            reuse_port=settings.workers > 1,
        )
        self.servers = [public, admin]
        self.port = public.sockets[0].getsockname()[1]
        self.admin_port = admin.sockets[0].getsockname()[1]
        self.background.append(loop.create_task(self._sweep()))

    async def _sweep(self) -> None:
        """Enforces every connection's deadline and closes pooled connections idle too long."""
        while True:
            await asyncio.sleep(SWEEP_INTERVAL)
            now = time.monotonic()
            for client in list(self.connections):
                client.expire(now)
                exchange = client.exchange
                if exchange is not None:
                    exchange.upstream.expire(now)
            stale = now - self.settings.pool_idle_timeout
            for model in self.table.models.values():
                for endpoint in model.endpoints:
                    if endpoint.pool is not None:
                        endpoint.pool.expire(stale)

    async def stop(self) -> None:
        """Stops accepting, lets requests in flight finish (at most drain_timeout), then closes."""
        for server in self.servers:
            server.close()
        deadline = time.monotonic() + self.settings.drain_timeout
        while self.app.tasks and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for task in list(self.app.tasks) + self.background:
            task.cancel()
        await asyncio.gather(*self.background, return_exceptions=True)  # the watches and the sweeps end here
        for client in list(self.connections):
            client.close()
        for model in self.table.models.values():
            for endpoint in model.endpoints:
                endpoint.close()


def make_source(settings: config.Settings) -> TableSource | None:
    if settings.table_file:
        return FileSource(settings.table_file, settings.reload_interval)
    if settings.kube:
        from .kube import KubeApi, KubeSource

        if settings.kube == "in-cluster":
            api = KubeApi.in_cluster()
        else:
            with open(settings.kube, encoding="utf-8") as handle:
                api = KubeApi.from_kubeconfig(json.load(handle))
        namespaces = frozenset(filter(None, settings.namespaces.split(","))) or None
        return KubeSource(api, namespaces)
    return None


def make_scale_backend(settings: config.Settings, source: TableSource | None):
    """The cluster's scaler when the models come from the cluster; none otherwise (a table file)."""
    from .kube import KubeScaler, KubeSource, pod_namespace

    if not isinstance(source, KubeSource):
        return None
    return KubeScaler(source.api, settings.lease_namespace or pod_namespace())


class _Synced:
    synced = asyncio.Event()
    synced.set()


async def serve(settings: config.Settings) -> None:
    router = Router(settings)
    await router.start()
    LOG.info("router listening on %s:%d (admin %d)", settings.host, router.port, router.admin_port)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    await stopping.wait()
    await router.stop()


def main(argv: list[str] | None = None) -> None:
    import uvloop

    settings = config.parse(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    children = []
    for index in range(1, settings.workers):
        pid = os.fork()
        if pid == 0:
            # each worker counts its own requests: its metrics are on the admin port plus its index
            settings.admin_port += index
            children = []
            break
        children.append(pid)
    uvloop.run(serve(settings))
    for pid in children:  # the parent is the one the container runtime signals: pass it on
        os.kill(pid, signal.SIGTERM)
    for pid in children:
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
