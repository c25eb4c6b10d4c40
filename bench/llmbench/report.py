"""Figures to text: statistics, formatting, the result table, the machine's description."""

from __future__ import annotations

import os
import pathlib
import platform
import statistics

from .common import BIN, KUBECTL, ROOT, run


def median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def percentile(values: list[float], q: float) -> float | None:
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def fmt(value, unit: str = "s", digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f} {unit}".strip()



def machine() -> dict:
    cpuinfo = pathlib.Path("/proc/cpuinfo").read_text().splitlines()
    meminfo = pathlib.Path("/proc/meminfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), platform.processor())
    mem = next((int(line.split()[1]) for line in meminfo if line.startswith("MemTotal")), 0)

    def version(cmd: list[str]) -> str:
        try:
            return run(cmd, check=False).stdout.strip().splitlines()[0]
        except (OSError, IndexError):
            return "?"

    return {
        "load_average": os.getloadavg(),
        "nproc": os.cpu_count(), "memory_gib": round(mem / (1 << 20), 1), "cpu": cpu, "kernel": platform.release(),
        "python": platform.python_version(),
        "ansible_operator": version([str(BIN / "ansible-operator"), "version"]),
        "ansible_core": version([str(ROOT / ".venv" / "bin" / "ansible"), "--version"]),
        "kubernetes": version([str(KUBECTL), "version", "--client"]),
    }


def table(rows: list[tuple[str, str, str, str]]) -> str:
    """The rows (metric, value, target, result) as a text table."""
    headers = ("metric", "value", "target", "result")
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(4)]
    line = "+-" + "-+-".join("-" * w for w in widths) + "-+"
    out = [line, "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |", line]
    out += ["| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    out.append(line)
    return "\n".join(out)
