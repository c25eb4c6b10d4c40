"""The router against the same load sent directly to a fake OpenAI server and through nginx.

    .venv-router/bin/python bench/router_bench.py [--duration 5] [--json bench/out/router.json] [--baseline REF]

All on 127.0.0.1. The fake server (router/tests/fake_openai.py) and the load generators are pinned to
CPU 0, the proxy under test (nginx: Debian's package, one worker, proxy_buffering off, upstream
keep-alive; or the router: one process, API keys, metrics and routing on) to CPU 1, so each proxy
has one core and its CPU-seconds are its own (read from /proc). wrk (one thread, closed loop) gives
latency percentiles and rates at 1, 64 and 512 connections; an asyncio client measures time to first
byte and the delay each stream chunk picks up (the fake stamps each event with its monotonic send
time); 1,000 requests held by the server give each proxy's memory. A paced run (64 connections, each
pausing between an answer and its next request) measures the latency a proxy adds below half a core.
`--baseline REF` runs the router of a git commit beside this tree's, in the same run (before/after).
Then one router replica against two side by side, the load split by connection as the chart's Service
spreads it (replicas.py). Every run is bounded by its duration; the processes are stopped at the end
whatever happens.
"""

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from routerbench import load, procs, replicas, report  # noqa: E402 (path set just above)

LOAD_CPU, PROXY_CPU = "0", "1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=5, help="seconds per wrk run")
    parser.add_argument("--concurrency", default="1,64,512")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--baseline", metavar="REF", help="also run the router of this git commit (before/after)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="wrk runs per target and concurrency, interleaved (the order reversed every other "
                             "time); the table shows their medians")
    parser.add_argument("--pause-ms", type=int, default=10, help="the paced run's pause between requests")
    parser.add_argument("--replica-connections", type=int, default=512)
    parser.add_argument("--skip-replicas", action="store_true")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is needed: apt-get install wrk")
    concurrency = [int(c) for c in args.concurrency.split(",")]
    results = {"concurrency": concurrency, "latency": {}, "load_before": os.getloadavg()}
    running = []
    with tempfile.TemporaryDirectory(prefix="router-bench-") as tmp:
        workdir = Path(tmp)
        try:
            fake = procs.start_fake(LOAD_CPU)
            running.append(fake)
            targets = {"direct": (fake.port, None)}
            nginx = procs.start_nginx(fake.port, workdir, PROXY_CPU)
            if nginx is None:
                print("nginx not installed (apt-get install nginx-light): compared with direct only")
            else:
                running.append(nginx)
                targets["nginx"] = (nginx.port, nginx.pid)
            router = procs.start_router(fake.port, workdir, PROXY_CPU)
            running.append(router)
            targets["router"] = (router.port, router.pid)
            if args.baseline:
                before = procs.start_router(fake.port, workdir / "baseline-router", PROXY_CPU,
                                            procs.baseline_src(args.baseline, workdir))
                running.append(before)
                targets[f"router@{args.baseline}"] = (before.port, before.pid)
            measure(args, results, targets, workdir, concurrency)
            for proc in running[1:]:  # the proxies: the replicas below have the CPUs to themselves
                proc.stop()
            if not args.skip_replicas:
                results["replicas"] = replicas.compare(args, fake, workdir, LOAD_CPU, PROXY_CPU)
        finally:
            for proc in reversed(running):
                proc.stop()
    results["load_after"] = os.getloadavg()
    text = report.table(results)
    print(text)
    print(f"load average before {results['load_before'][0]:.1f}, after {results['load_after'][0]:.1f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**results, "table": text}, indent=1, default=str))


def measure(args, results, targets, workdir, concurrency) -> None:
    plain = load.wrk_script(workdir, "plain", load.PLAIN)
    streamed = load.wrk_script(workdir, "stream", {**load.PLAIN, "stream": True,
                                                    "fake": {"chunks": 100, "interval": 0.002}})
    for port, pid in targets.values():  # warm-up: connections pooled, code paths hot
        load.wrk(port, plain, 64, 2, pid, LOAD_CPU)
    for connections in concurrency:
        runs = {name: [] for name in targets}
        # interleaved, the order reversed every other time: load from elsewhere hits every target alike
        order = list(targets.items())
        for index in range(args.repeat):
            for name, (port, pid) in order if index % 2 == 0 else reversed(order):
                run = load.wrk(port, plain, connections, args.duration, pid, LOAD_CPU)
                runs[name].append(run)
                print(f"{name:6} {connections:4} connections: {run['rate']:8.0f}/s p50 {run['p50'] * 1000:.2f} ms "
                      f"p99 {run['p99'] * 1000:.2f} ms cpu {run['cpu_seconds']}", flush=True)
        for name in targets:
            results["latency"].setdefault(name, {})[connections] = load.median(runs[name])
    paced = load.wrk_script(workdir, "paced", load.PLAIN, pause_ms=args.pause_ms)
    results["paced"] = {}
    for name, (port, pid) in targets.items():
        run = load.wrk(port, paced, 64, args.duration, pid, LOAD_CPU)
        run["core"] = run["cpu_seconds"] / args.duration if pid else None
        results["paced"][name] = run
        print(f"{name:6} 64 paced: {run['rate']:8.0f}/s p50 {run['p50'] * 1000:.2f} ms p99 {run['p99'] * 1000:.2f} ms "
              f"cpu {run['cpu_seconds']}", flush=True)
    results["chunks"] = {}
    for name, (port, pid) in targets.items():
        run = load.wrk(port, streamed, 64, args.duration, pid, LOAD_CPU)
        run["chunks"] = run["requests"] * 101  # 100 events and [DONE]
        run["seconds"] = args.duration
        results["chunks"][name] = run
        print(f"{name:6} streams: {run['chunks'] / args.duration:8.0f} chunks/s cpu {run['cpu_seconds']}", flush=True)
    for port, _ in targets.values():  # warm-up: the streams below find pooled connections, as in steady use
        asyncio.run(load.streams(port, 16, 5, 0.0))
    results["streams"] = {name: asyncio.run(load.stream_rounds(port, 3, 16, 50, 0.01))
                          for name, (port, _) in targets.items()}
    results["held"] = {name: asyncio.run(load.held(port, 1000, pid, 6.0))
                       for name, (port, pid) in targets.items() if pid is not None}


if __name__ == "__main__":
    main()
