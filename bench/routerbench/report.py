"""Figures to a markdown table."""

from __future__ import annotations

import statistics


def quantile(values: list[float], q: float) -> float | None:
    values = sorted(v for v in values if v is not None)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))] if values else None


def ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 1000:.2f} ms"


def per_cpu(count: int, cpu: float | None) -> str:
    return "n/a" if not cpu else f"{count / cpu:,.0f}"


def table(results: dict) -> str:
    targets = [name for name in ("direct", "nginx", "router") if name in results["latency"]]
    lines = ["| | " + " | ".join(targets) + " |", "|---|" + "---|" * len(targets)]
    direct = results["latency"].get("direct", {})
    for connections in results["concurrency"]:
        for q in ("p50", "p99"):
            row = []
            for name in targets:
                run = results["latency"][name][connections]
                added = "" if name == "direct" else f" (+{ms(run[q] - direct[connections][q])})"
                row.append(ms(run[q]) + added)
            lines.append(f"| {connections} concurrent, latency {q} (added) | " + " | ".join(row) + " |")
        rates = [f"{results['latency'][name][connections]['rate']:,.0f}/s" for name in targets]
        lines.append(f"| {connections} concurrent, requests per second | " + " | ".join(rates) + " |")
        cpu = [per_cpu(results["latency"][name][connections]["requests"],
                       results["latency"][name][connections]["cpu_seconds"]) for name in targets]
        lines.append(f"| {connections} concurrent, requests per proxy CPU-second | " + " | ".join(cpu) + " |")
    errors = [str(sum(run["non_2xx"] + run["socket_errors"] for run in results["latency"][name].values()))
              for name in targets]
    lines.append("| errors (non-2xx + socket) over all runs | " + " | ".join(errors) + " |")
    if "chunks" in results:
        row = [per_cpu(results["chunks"][name]["chunks"], results["chunks"][name]["cpu_seconds"]) for name in targets]
        lines.append("| stream chunks per proxy CPU-second | " + " | ".join(row) + " |")
        row = [f"{results['chunks'][name]['chunks'] / results['chunks'][name]['seconds']:,.0f}/s" for name in targets]
        lines.append("| stream chunks per second | " + " | ".join(row) + " |")
    if "streams" in results:
        base = results["streams"].get("direct")
        for label, key, q in (("time to first byte p50", "ttfb", 0.5), ("time to first byte p99", "ttfb", 0.99),
                              ("chunk delay p50", "delays", 0.5), ("chunk delay p99", "delays", 0.99)):
            row = []
            for name in targets:
                value = quantile(results["streams"][name][key], q)
                added = "" if name == "direct" or base is None else f" (+{ms(value - quantile(base[key], q))})"
                row.append(ms(value) + added)
            lines.append(f"| streams: {label} | " + " | ".join(row) + " |")
    if "held" in results:
        row = ["n/a" if name == "direct" else
               f"{results['held'][name]['holding_mib']:.0f} MiB ({results['held'][name]['answered']}"
               f"/{results['held'][name]['held']} answered)" for name in targets]
        lines.append("| RSS with 1,000 held requests | " + " | ".join(row) + " |")
    for count, run in sorted(results.get("workers", {}).items()):
        lines.append(f"| router, {count} worker process(es), 512 concurrent, unpinned: requests per second, "
                     f"per CPU-second, p99, errors | | | {run['rate']:,.0f}/s, "
                     f"{per_cpu(run['requests'], run['cpu_seconds'])}, {ms(run['p99'])}, "
                     f"{run['non_2xx'] + run['socket_errors']} |")
    return "\n".join(lines)


def mean(values):
    return statistics.fmean(values) if values else None
