"""The puller's progress report (puller/src/llm_model_puller/status_report.py) against the CRD's rules
for status.weights.progress: whatever the puller sends is admitted, so its reports are never refused,
while the rules admit figures only (tests/admission asks the API server the same of forged ones)."""

from __future__ import annotations

import re
import sys

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from unit_helpers import REPO

sys.path.insert(0, str(REPO / "puller" / "src"))
from llm_model_puller.status_report import snapshot  # noqa: E402

CRD = REPO / "config" / "crd" / "bases" / "inference.ai.example.com_llmmodels.yaml"
PROGRESS = (yaml.safe_load(CRD.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            ["properties"]["status"]["properties"]["weights"]["properties"]["progress"]["properties"])


def summary_pattern():
    """The regular expression of the summary's CEL rule (self.matches('<RE2>'), a CEL string literal)."""
    [rule] = PROGRESS["summary"]["x-kubernetes-validations"]
    literal = re.fullmatch(r"self\.matches\('(.*)'\)", rule["rule"]).group(1)
    return re.compile(literal.replace("\\\\", "\\"))


@settings(max_examples=300, deadline=None)
@given(done=st.integers(0, 2**50), total=st.one_of(st.none(), st.integers(1, 2**50)),
       fetched=st.integers(0, 2**40), seconds=st.floats(0.001, 86_400))
def test_every_report_the_puller_sends_is_admitted(done, total, fetched, seconds):
    # The rate as the reporter computes it: bytes fetched since the last report over the time since.
    report = snapshot(done, total if total is None else max(total, done), fetched / seconds, 1_767_225_600)
    assert summary_pattern().fullmatch(report["summary"]), report
    assert len(report["summary"]) <= PROGRESS["summary"]["maxLength"]
    for field, value in report.items():
        schema = PROGRESS[field]
        if schema["type"] == "integer":
            assert isinstance(value, int) and value >= schema.get("minimum", 0)
            assert value <= schema.get("maximum", value)


def test_the_summary_admits_figures_only():
    pattern = summary_pattern()
    for forged in ("done, see http://x", "101%", "37 %", "1.5 GiB", "-1B", "1e9B", ""):
        assert not pattern.fullmatch(forged), forged
