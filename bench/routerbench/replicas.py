"""One router replica against two side by side, as the chart runs them (two pods behind a Service).

A Service spreads connections, not requests, over the replicas: here one wrk with two threads whose
connections go to one replica each (with one replica, both to it), so the load generator is the same
for one and for two. Each setup is measured at saturation (a closed loop): requests and stream chunks
per second, each replica's CPU-seconds and share of the requests (its own metrics), latency added to
the same load sent directly, and requests lost (wrk's non-2xx and socket errors).

Two CPU layouts, because this machine has two cores for everything:
- "one core": every replica on CPU 1, wrk and the fake on CPU 0. Two replicas get the CPU one had:
  what is shown is that splitting costs nothing per request and loses none, not twice the throughput.
- "a core each": one replica on CPU 1 against two on CPU 0 and CPU 1; wrk and the fake unpinned, so
  they take their CPU from the replicas' cores.
"""

from __future__ import annotations

from . import load, procs

LAYOUTS = {"one core": ("1", "1"), "a core each": ("1", "0")}
STREAM = {**load.PLAIN, "stream": True, "fake": {"chunks": 100, "interval": 0.002}}


def compare(args, fake, workdir, load_cpu: str, proxy_cpu: str) -> dict:
    results = {}
    for layout, cpus in LAYOUTS.items():
        unpinned = cpus[1] != proxy_cpu
        wrk_cpu = None if unpinned else load_cpu
        fake.pin("0,1" if unpinned else load_cpu)
        runs = results[layout] = {}
        direct = load.wrk_script(workdir, "direct-2", load.PLAIN)
        runs["direct"] = load.wrk(fake.port, direct, args.replica_connections, args.duration, None, wrk_cpu, threads=2)
        for count in (1, 2):
            routers = [procs.start_router(fake.port, workdir / f"replica-{layout}-{count}-{index}", cpus[index])
                       for index in range(count)]
            try:
                runs[count] = measure(args, workdir, routers, wrk_cpu)
            finally:
                for router in routers:
                    router.stop()
            run = runs[count]
            print(f"{layout}, {count} replica(s), {args.replica_connections} connections: {run['rate']:8.0f}/s "
                  f"p50 {run['p50'] * 1000:.2f} ms p99 {run['p99'] * 1000:.2f} ms cpu {run['cpu_each']} "
                  f"answered {run['answered']} lost {run['lost']} chunks/s {run['chunks_rate']:.0f}", flush=True)
    fake.pin(load_cpu)
    return results


def measure(args, workdir, routers, wrk_cpu) -> dict:
    ports = [router.port for router in routers]
    pids = tuple(router.pid for router in routers)
    name = "-".join(map(str, ports))
    plain = load.wrk_script(workdir, f"replicas-{name}", load.PLAIN, ports=ports)
    streamed = load.wrk_script(workdir, f"replicas-stream-{name}", STREAM, ports=ports)
    load.wrk(ports[0], plain, 64, 2, pids, wrk_cpu, threads=2)  # warm-up: connections pooled, code paths hot
    before = [procs.answered(router) for router in routers]
    run = load.wrk(ports[0], plain, args.replica_connections, args.duration, pids, wrk_cpu, threads=2)
    run["answered"] = [procs.answered(router) - start for router, start in zip(routers, before, strict=True)]
    run["lost"] = run["non_2xx"] + run["socket_errors"]
    stream = load.wrk(ports[0], streamed, args.replica_connections, args.duration, pids, wrk_cpu, threads=2)
    run["seconds"] = args.duration
    run["chunks"] = stream["requests"] * 101  # 100 events and [DONE]
    run["chunks_rate"] = run["chunks"] / args.duration
    run["chunks_cpu_each"] = stream["cpu_each"]
    run["lost"] += stream["non_2xx"] + stream["socket_errors"]
    return run
