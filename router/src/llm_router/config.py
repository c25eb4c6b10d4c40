"""The router's settings: command-line flags, each with an LLM_ROUTER_* environment default.

Every wait the router makes has its bound here.
"""

import argparse
import dataclasses
import os


@dataclasses.dataclass
class Settings:
    host: str = "0.0.0.0"
    port: int = 8000
    admin_port: int = 9090  # /metrics, /healthz, /readyz: kept off the public port
    workers: int = 1  # processes sharing the port (SO_REUSEPORT)
    table_file: str | None = None  # a JSON routing table (local runs, tests)
    kube: str | None = (
        None  # the cluster source: "in-cluster", or a kubeconfig as JSON (kubectl config view --raw -o json)
    )
    namespaces: str = ""  # comma-separated namespaces whose models are served; empty: all
    api_keys_file: str | None = None  # JSON list of keys (a mounted Secret); none: no authentication
    reload_interval: float = 5.0  # how often the keys file (and a table file) is checked for changes
    max_body_bytes: int = 8 * 1024 * 1024
    max_header_bytes: int = 16 * 1024  # request line and headers together
    max_headers: int = 100
    max_connections: int = 10_000
    header_timeout: float = 10.0  # from a request's first byte to its last header (slowloris)
    body_timeout: float = 60.0  # the whole body
    keepalive_timeout: float = 60.0  # an idle client connection
    connect_timeout: float = 5.0  # to a model's server
    response_timeout: float = 600.0  # until the server's response headers (a long prompt's first token)
    idle_stream_timeout: float = 300.0  # between two pieces of a response body
    queue_length: int = 100  # requests per model waiting for a replica with room
    queue_timeout: float = 30.0
    max_in_flight_per_replica: int = 0  # 0: no limit, requests never queue for room
    wake_timeout: float = 0.0  # a request held for a model at zero; 0: the model's startup budget
    lease_namespace: str = ""  # where the activity Leases of scaled models live; "": the router's own
    retry_after: int = 10  # seconds, in a 503's Retry-After
    pool_idle_timeout: float = 4.0  # below the servers' own keep-alive (uvicorn 5 s), so a pooled
    #                                 connection is not closed by the server just as it is reused
    pool_max_idle: int = 1024  # per replica (closed after pool_idle_timeout anyway); fewer made
    #                            connections churn under bursts wider than the pool
    drain_timeout: float = 30.0  # on SIGTERM: answer what is in flight, at most this long


def _env(name: str, default):
    raw = os.environ.get("LLM_ROUTER_" + name.upper())
    if raw is None:
        return default
    kind = type(default) if default is not None else str
    return kind(raw)


def parse(argv: list[str] | None = None) -> Settings:
    parser = argparse.ArgumentParser(prog="llm-router", description=__doc__)
    defaults = Settings()
    for field in dataclasses.fields(Settings):
        default = _env(field.name, getattr(defaults, field.name))
        kind = type(getattr(defaults, field.name)) if getattr(defaults, field.name) is not None else str
        parser.add_argument("--" + field.name.replace("_", "-"), type=kind, default=default)
    return Settings(**vars(parser.parse_args(argv)))
