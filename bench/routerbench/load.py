"""The load: wrk for request rates and latency (a closed loop, or paced; one thread per replica), an
asyncio client for the delay each stream chunk picks up, and a thousand held requests for memory."""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import subprocess
import time
from pathlib import Path

from .procs import API_KEY, cpu_seconds, rss_mib

PLAIN = {"model": "bench", "messages": [{"role": "user", "content": "What is the capital of France?"}]}
UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}


def wrk_script(workdir: Path, name: str, body: dict, ports: list[int] | None = None, pause_ms: int = 0) -> Path:
    """wrk's request; with `ports`, wrk's threads connect to them in turn (thread i to ports[i % n]: the
    load split by connection over replicas, as a Service spreads it); with `pause_ms`, each connection
    waits that long between an answer and its next request (a paced load, not a closed loop)."""
    lines = [
        'wrk.method = "POST"',
        f"wrk.body = [[{json.dumps(body)}]]",
        'wrk.headers["Content-Type"] = "application/json"',
        f'wrk.headers["Authorization"] = "Bearer {API_KEY}"',
    ]
    if ports:
        lines += [
            f"local ports = {{{', '.join(map(str, ports))}}}",
            "local started = 0",
            "function setup(thread)",
            '  thread.addr = wrk.lookup("127.0.0.1", tostring(ports[started % #ports + 1]))[1]',
            "  started = started + 1",
            "end",
        ]
    if pause_ms:
        lines.append(f"function delay() return {pause_ms} end")
    script = workdir / f"{name}.lua"
    script.write_text("\n".join(lines) + "\n")
    return script


def seconds(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(value) * UNITS[unit]


def wrk(port: int, script: Path, connections: int, duration: int, proxy_pid, cpu: str | None, threads: int = 1) -> dict:
    """One wrk run; the proxy's CPU-seconds over it (None for the direct target). `proxy_pid` is one
    process or a tuple of them (replicas): `cpu_each` has each one's CPU-seconds."""
    argv = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency", "--timeout", "10s",
            "-s", str(script), f"http://127.0.0.1:{port}/v1/chat/completions"]
    if cpu is not None:
        argv = ["taskset", "-c", cpu] + argv
    pids = () if not proxy_pid else proxy_pid if isinstance(proxy_pid, tuple) else (proxy_pid,)
    before = [cpu_seconds(pid) for pid in pids]
    output = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 30, check=True).stdout
    each = [cpu_seconds(pid) - start for pid, start in zip(pids, before, strict=True)]
    requests = int(re.search(r"(\d+) requests in", output).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    percentiles = {q: seconds(v) for q, v in re.findall(r"^\s+(50|99)(?:\.0+)?%\s+([\d.]+(?:us|ms|s|m))\s*$",
                                                        output, re.M)}
    if len(percentiles) != 2:
        raise SystemExit(f"wrk's output not understood:\n{output}")
    return {
        "connections": connections,
        "requests": requests,
        "rate": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),
        "p50": percentiles["50"],
        "p99": percentiles["99"],
        "non_2xx": int(bad.group(1)) if bad else 0,
        "socket_errors": sum(map(int, errors.groups())) if errors else 0,
        "cpu_seconds": sum(each) if pids else None,
        "cpu_each": each,
    }


def median(runs: list[dict]) -> dict:
    """Runs of one target as one: each figure's median (requests per CPU-second too), errors summed."""
    if len(runs) == 1:
        return runs[0]
    merged = {key: statistics.median(run[key] for run in runs)
              for key in ("requests", "rate", "p50", "p99")}
    merged["connections"] = runs[0]["connections"]
    merged["non_2xx"] = sum(run["non_2xx"] for run in runs)
    merged["socket_errors"] = sum(run["socket_errors"] for run in runs)
    if runs[0]["cpu_seconds"] is None:
        merged["cpu_seconds"] = None
    else:  # so that requests / cpu_seconds is the median of the runs' requests per CPU-second
        merged["cpu_seconds"] = merged["requests"] / statistics.median(run["requests"] / run["cpu_seconds"]
                                                                       for run in runs)
    merged["runs"] = runs
    return merged


EVENT = re.compile(rb'"i": (\d+), "t": ([\d.]+)')


async def one_stream(port: int, chunks: int, interval: float) -> tuple[float, list[float]]:
    """(time to the first byte of the response, each chunk's delay from its sending to its arrival)."""
    body = json.dumps({"model": "bench", "stream": True, "fake": {"chunks": chunks, "interval": interval}}).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
                 b"authorization: Bearer %s\r\ncontent-length: %d\r\n\r\n%s" % (API_KEY.encode(), len(body), body))
    first = None
    delays = []
    buffer = b""
    while True:
        data = await asyncio.wait_for(reader.read(65536), 30)
        now = time.monotonic()
        if not data:
            break
        if first is None:
            first = now - started
        buffer += data
        cut = buffer.rfind(b"\n\n")
        if cut >= 0:
            complete, buffer = buffer[: cut + 2], buffer[cut + 2 :]
            delays.extend(now - float(match.group(2)) for match in EVENT.finditer(complete))
            if b"[DONE]" in complete:
                break
    writer.close()
    return first, delays


async def streams(port: int, concurrent: int, chunks: int, interval: float) -> dict:
    results = await asyncio.gather(*(one_stream(port, chunks, interval) for _ in range(concurrent)))
    return {"ttfb": [first for first, _ in results], "delays": [d for _, delays in results for d in delays]}


async def stream_rounds(port: int, rounds: int, concurrent: int, chunks: int, interval: float) -> dict:
    """`rounds` times `concurrent` streams at once, one round after the other, pooled together."""
    merged = {"ttfb": [], "delays": []}
    for _ in range(rounds):
        result = await streams(port, concurrent, chunks, interval)
        merged["ttfb"] += result["ttfb"]
        merged["delays"] += result["delays"]
    return merged


async def held(port: int, count: int, proxy_pid: int, hold: float) -> dict:
    """`count` requests held open by the server for `hold` seconds; the proxy's RSS while they are."""
    body = json.dumps({"model": "bench", "fake": {"delay": hold}}).encode()
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
               b"authorization: Bearer %s\r\ncontent-length: %d\r\n\r\n%s" % (API_KEY.encode(), len(body), body))
    idle = rss_mib(proxy_pid)
    connections = []
    for _ in range(count):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request)
        connections.append((reader, writer))
    await asyncio.sleep(min(3.0, hold / 2))
    holding = rss_mib(proxy_pid)
    answered = 0
    for reader, writer in connections:
        try:
            head = await asyncio.wait_for(reader.read(12), hold + 15)
            answered += head.startswith(b"HTTP/1.1 200")
        except (TimeoutError, OSError):
            pass
        writer.close()
    return {"idle_mib": idle, "holding_mib": holding, "held": count, "answered": answered}
