"""What the scenarios measure, kept in .cluster/reliability-figures.json and printed at the end of
the run (README, "Guarantees under faults", quotes them)."""

from __future__ import annotations

import json

from reliability_paths import FIGURES, SCALE, SEED


class Figures:
    def __init__(self):
        self.rows: list[dict] = []
        FIGURES.unlink(missing_ok=True)

    def record(self, scenario: str, figure: str, value: float, unit: str = "s") -> None:
        self.rows.append({"scenario": scenario, "figure": figure, "value": round(value, 1), "unit": unit,
                          "scale": SCALE, "seed": SEED})
        FIGURES.parent.mkdir(exist_ok=True)
        FIGURES.write_text(json.dumps(self.rows, indent=1) + "\n")

    def lines(self) -> list[str]:
        """One line a figure, for the end of the run."""
        return [f"{row['scenario']:<22} {row['figure']:<58} {row['value']:>8} {row['unit']}" for row in self.rows]
