"""Progress reports into the model's status: throttling, the body, the token, and failures that never
fail the pull. The API server is stood in for by a real HTTP server on 127.0.0.1 (StatusServer); the
real API server and RBAC are exercised by tests/unit/test_puller_progress_cluster.py."""

import json
from pathlib import Path

import pytest

from llm_model_puller.progress import Progress
from llm_model_puller.status_report import StatusReporter, Target, snapshot, target_from_env
from puller_servers import FileServer, StatusServer
from puller_testkit import MiB, payload, sha256

OBJECT = "/apis/inference.ai.example.com/v1alpha1/namespaces/models/llmmodels/tiny"
SA_TOKEN = "eyJhbGciOiJSUzI1NiJ9.service-account-token-value.c2lnbmF0dXJl"
HF_TOKEN = "hf_secretTOKENvalue1234567890"


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def token_file(tmp_path) -> Path:
    path = tmp_path / "token"
    path.write_text(SA_TOKEN + "\n")
    return path


def test_snapshot_figures():
    assert snapshot(37 * MiB, 100 * MiB, 2 * MiB, 0) == {
        "bytesDone": 37 * MiB,
        "bytesTotal": 100 * MiB,
        "percent": 37,
        "summary": "37%",
        "bytesPerSecond": 2 * MiB,
        "etaSeconds": 32,
        "updatedAt": "1970-01-01T00:00:00Z",
    }
    stalled = snapshot(5, 10, 0.0, 0)
    assert stalled["percent"] == 50 and "etaSeconds" not in stalled
    unknown = snapshot(3 * MiB, None, 1.0, 0)
    assert unknown["summary"] == "3.0MiB" and "percent" not in unknown and "bytesTotal" not in unknown


def test_target_from_env():
    assert target_from_env({}) is None
    env = {"PULLER_STATUS_OBJECT": OBJECT, "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    target = target_from_env(env)
    assert target.api_url == "https://10.96.0.1:443" and target.object_path == OBJECT
    assert (target.interval, target.step_percent) == (10.0, 5.0)
    assert target_from_env({**env, "PULLER_STATUS_OBJECT": "/etc/passwd"}) is None
    assert target_from_env({"PULLER_STATUS_OBJECT": OBJECT}) is None  # no API server known


def test_reports_are_throttled_by_time_and_step(token_file):
    clock = Clock()
    with StatusServer(OBJECT, SA_TOKEN) as api:
        progress = Progress("m.gguf", clock=clock, emit=lambda line: None)
        target = Target(OBJECT, api.url, token_file, None, interval=10, step_percent=5)
        reporter = StatusReporter(target, progress, clock=clock, wall=lambda: 0.0)

        assert not reporter.due(clock.now + 0.5)  # never within a second
        clock.now += 2
        assert not reporter.due(clock.now)  # size not known yet, interval not over
        progress.begin(0, 100 * MiB)
        assert reporter.due(clock.now)  # the first report as soon as the size is known
        reporter.report(clock.now)

        progress.add(3 * MiB)
        clock.now += 2
        assert not reporter.due(clock.now)  # 3 %: below the step, 2 s: below the interval
        progress.add(3 * MiB)
        assert reporter.due(clock.now)  # 6 %: a step
        reporter.report(clock.now)
        clock.now += 10
        assert reporter.due(clock.now)  # 10 s without a report, even without progress
        reporter.report(clock.now)

    reports = [p["status"]["weights"]["progress"] for p in api.patches]
    assert [r["percent"] for r in reports] == [0, 6, 6]
    assert reports[1]["bytesPerSecond"] == 3 * MiB  # 6 MiB since the last report, 2 s ago
    assert reports[2]["bytesPerSecond"] == 0 and "etaSeconds" not in reports[2]
    assert all(set(p) == {"status"} and set(p["status"]) == {"weights"} for p in api.patches)


def test_a_refused_report_is_logged_once_and_never_fails(token_file, caplog):
    with StatusServer(OBJECT + "-other", SA_TOKEN) as api:
        progress = Progress("m.gguf", emit=lambda line: None)
        progress.begin(0, 10)
        reporter = StatusReporter(Target(OBJECT, api.url, token_file, None), progress)
        reporter.report(1.0)
        reporter.report(2.0)
    assert reporter.sent == 0
    refused = [r.getMessage() for r in caplog.records if "HTTP 403" in r.getMessage()]
    assert len(refused) == 1 and "forbidden" in refused[0]


def test_the_puller_reports_progress_while_it_downloads(puller, dest, token_file):
    data = payload(2 * MiB, seed=3)
    with FileServer() as files, StatusServer(OBJECT, SA_TOKEN) as api:
        url = files.add("/m.gguf", data)
        files.chunk_delay = 0.08  # 32 chunks of 64 KiB: about 2.5 s
        run = puller(
            {
                "MODEL_URL": url,
                "MODEL_SHA256": sha256(data),
                "HF_TOKEN": HF_TOKEN,
                "PULLER_STATUS_OBJECT": OBJECT,
                "PULLER_KUBE_API_URL": api.url,
                "PULLER_KUBE_TOKEN_FILE": str(token_file),
                "PULLER_STATUS_SECONDS": "1",
            }
        )
        patches = list(api.patches)
        seen = api.seen("PATCH")

    assert run.returncode == 0, run.output
    reports = [p["status"]["weights"]["progress"] for p in patches]
    assert len(reports) >= 2, reports  # at least one while downloading, and the last one
    assert any(0 < r.get("percent", 0) < 100 for r in reports), reports
    assert reports[-1]["percent"] == 100 and reports[-1]["bytesDone"] == len(data) == reports[-1]["bytesTotal"]
    assert reports[-1]["summary"] == "100%"
    assert all(s.path == OBJECT + "/status" and s.headers["Authorization"] == f"Bearer {SA_TOKEN}" for s in seen)
    assert SA_TOKEN not in run.output and HF_TOKEN not in run.output
    assert HF_TOKEN not in json.dumps(patches)
    assert json.loads(run.termination)["size"] == len(data)


def test_the_pull_succeeds_when_reports_are_refused(puller, dest, tmp_path):
    data = payload(MiB, seed=4)
    wrong = tmp_path / "wrong-token"
    wrong.write_text("not-the-token-" + SA_TOKEN)
    with FileServer() as files, StatusServer(OBJECT, SA_TOKEN) as api:
        url = files.add("/m.gguf", data)
        run = puller(
            {
                "MODEL_URL": url,
                "PULLER_STATUS_OBJECT": OBJECT,
                "PULLER_KUBE_API_URL": api.url,
                "PULLER_KUBE_TOKEN_FILE": str(wrong),
            }
        )
    assert run.returncode == 0, run.output
    assert run.output.count("progress not reported: HTTP 401") == 1
    assert "not-the-token-" not in run.output
