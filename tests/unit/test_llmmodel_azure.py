"""Azure Blob Storage sources on the operator's side (module_utils/llmmodel_azure.py): the credentials
Secret's Azure keys reach the pull by reference only, each optional (the Secret holds one of three
choices), and a pull that found none of them is told as CredentialsNotFound with the command that
creates the Secret. The puller's own words are taken from the puller's code, not copied here."""

from __future__ import annotations

import json
import sys

import pytest
from diagnosis_objects import FAILED, pull_job_with_credentials, pull_pod
from render_helpers import case, model, render
from unit_helpers import REPO

from ansible.module_utils.llmmodel_azure import AZURE_KEYS, uses_azure_keys  # noqa: E402  (unit_helpers' path)
from ansible.module_utils.llmmodel_credentials import credentials_env  # noqa: E402
from ansible.module_utils.llmmodel_diagnosis import diagnose_pull  # noqa: E402

sys.path.insert(0, str(REPO / "puller" / "src"))
from llm_model_puller.config import config_from_env  # noqa: E402
from llm_model_puller.errors import PullerError  # noqa: E402

NOW = "2026-03-01T12:00:00Z"


def source_model(source):
    obj = model(runtime="llamacpp")
    obj["spec"]["source"] = source
    return obj


CASES = {
    "az folder": case(source_model({"url": "az://models/llama-ft/", "credentialsSecret": "weights-azure"}),
                      weights_ready=False),
    "blob https": case(source_model({"url": "https://acct01.blob.core.windows.net/models/m.gguf",
                                     "credentialsSecret": "weights-azure"}), weights_ready=False),
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    return render(CASES, tmp_path_factory.mktemp("render"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_azure_keys_reach_the_puller_by_reference_each_optional(rendered, name):
    env = rendered[name]["objects"]["Job"]["spec"]["template"]["spec"]["containers"][0]["env"]
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in env if "secretKeyRef" in e.get("valueFrom", {})}
    assert refs == {key: {"name": "weights-azure", "key": key, "optional": True} for key in AZURE_KEYS}
    assert all("value" not in e for e in env if e["name"] in refs)
    assert "AZURE_" not in json.dumps([rendered[name]["objects"]["Job"]["metadata"], rendered[name]["state"]])


@pytest.mark.parametrize(
    "url, expected",
    [("az://models/m.gguf", True), ("AZ://models/m/", True), ("https://acct01.blob.core.windows.net/c/m.gguf", True),
     ("https://acct01.blob.core.windows.net.example.com/c/m.gguf", False), ("s3://models/m.gguf", False),
     ("https://models.example/m.gguf", False)],
)
def test_which_sources_take_the_azure_keys(url, expected):
    assert uses_azure_keys({"url": url}) is expected


def puller_failure(env):
    """The termination message the puller writes when its environment holds no Azure credentials."""
    try:
        config_from_env(env)
    except PullerError as exc:
        return f"{exc.label}: {exc}\n"
    raise AssertionError("the puller accepted the environment")


def failed_azure_pull(message):
    job = pull_job_with_credentials(conditions=FAILED, active=0)
    source = {"url": "az://models/m.gguf", "credentialsSecret": "weights-azure"}
    job["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "MODEL_URL", "value": source["url"]}] + \
        credentials_env(source)
    terminated = {"exitCode": 2, "reason": "Error", "message": message, "startedAt": "2026-03-01T11:41:00Z",
                  "finishedAt": "2026-03-01T11:41:02Z"}
    return job, [pull_pod("qwen-pull-a", "2026-03-01T11:40:00Z", "Failed", terminated=terminated)]


def test_a_pull_that_found_no_azure_credentials_says_which_secret_to_create():
    job, pods = failed_azure_pull(puller_failure({"MODEL_URL": "az://models/m.gguf"}))

    found = diagnose_pull(job, pods, now=NOW)

    assert found["reason"] == "CredentialsNotFound"
    assert found["message"].startswith("Secret weights-azure in namespace models is missing or holds no Azure Storage "
                                       "credentials")
    assert "kubectl -n models create secret generic weights-azure --from-literal=AZURE_STORAGE_ACCOUNT=<account> " \
           "--from-literal=AZURE_STORAGE_KEY=<account key>" in found["message"]


def test_any_other_azure_failure_is_the_puller_s_own_message():
    """A refused key, a missing blob: the role shows the puller's message (PullFailed), not this diagnosis."""
    job, pods = failed_azure_pull("access refused: the storage account refused the Shared Key request for az://models/m.gguf")
    assert diagnose_pull(job, pods, now=NOW) is None
