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
    targets = list(results["latency"])  # direct, nginx, router, router@<baseline>
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
    if "paced" in results:
        base = results["paced"]["direct"]
        row = []
        for name in targets:
            run = results["paced"][name]
            added = "" if name == "direct" else f" (+{ms(run['p50'] - base['p50'])} / +{ms(run['p99'] - base['p99'])})"
            core = "" if run.get("core") is None else f", {run['core']:.2f} core"
            row.append(f"{ms(run['p50'])} / {ms(run['p99'])}{added}; {run['rate']:,.0f}/s{core}")
        lines.append("| 64 connections paced (a pause after each answer): p50 / p99 (added); rate, proxy CPU | "
                     + " | ".join(row) + " |")
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
    if "replicas" in results:
        lines += ["", replicas_table(results["replicas"])]
    return "\n".join(lines)


def replicas_table(layouts: dict) -> str:
    lines = ["| router replicas, saturated | requests/s (each replica's share) | router CPU-seconds per second "
             "(each) | requests per router CPU-second | p50 / p99 (added) | lost | stream chunks/s; per CPU-second |",
             "|---|---|---|---|---|---|---|"]
    for layout, runs in layouts.items():
        direct = runs["direct"]
        lines.append(f"| {layout}: direct | {direct['rate']:,.0f}/s | | | {ms(direct['p50'])} / {ms(direct['p99'])} | "
                     f"{direct['non_2xx'] + direct['socket_errors']} | |")
        for count in (1, 2):
            run = runs[count]
            seconds = run["seconds"]
            answered = sum(run["answered"]) or 1
            shares = ", ".join(f"{100 * each / answered:.0f}%" for each in run["answered"])
            cores = ", ".join(f"{each / seconds:.2f}" for each in run["cpu_each"])
            chunks_cpu = per_cpu(run["chunks"], sum(run["chunks_cpu_each"]))
            lines.append(
                f"| {layout}: {count} | {run['rate']:,.0f}/s ({shares}) | {cores} | "
                f"{per_cpu(run['requests'], run['cpu_seconds'])} | {ms(run['p50'])} / {ms(run['p99'])} "
                f"(+{ms(run['p50'] - direct['p50'])} / +{ms(run['p99'] - direct['p99'])}) | {run['lost']} | "
                f"{run['chunks_rate']:,.0f}/s; {chunks_cpu} |"
            )
    return "\n".join(lines)


def mean(values):
    return statistics.fmean(values) if values else None
