"""The puller's progress reports against the real API server, with the real RBAC the role renders.

The role's own templates (puller-serviceaccount, -role, -rolebinding) are rendered by Ansible and
applied; the real puller then downloads a slow file from a local HTTP server with a token of that
ServiceAccount and writes `status.weights.progress` of its LLMModel while it runs. Pointed at another
model, the same token is refused and the pull still succeeds.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import uuid

import pytest
import yaml
from kubernetes.dynamic.exceptions import NotFoundError
from unit_helpers import REPO, ROLE, VENV_BIN, kubectl

sys.path.insert(0, str(REPO / "puller" / "tests"))
from puller_servers import FileServer  # noqa: E402

pytestmark = pytest.mark.cluster

API = "inference.ai.example.com/v1alpha1"
MiB = 1 << 20


def render_puller_access(tmp_path, name, namespace):
    """The role's puller-*.yaml.j2 rendered by Ansible, as the role renders them."""
    playbook = tmp_path / "render.yml"
    out = tmp_path / "rendered.json"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "hosts": "localhost",
                    "gather_facts": False,
                    "vars_files": [str(ROLE / "vars" / "main.yml")],
                    "vars": {
                        "__llmmodel_name": name,
                        "__llmmodel_namespace": namespace,
                        "__llmmodel_puller_account": name + "-puller",
                        "__llmmodel_labels": {"app.kubernetes.io/instance": name, "inference.ai.example.com/model": name},
                    },
                    "tasks": [
                        {
                            "name": "Render",
                            "ansible.builtin.copy": {
                                "dest": str(out),
                                "content": "{{ query('ansible.builtin.template', *(__llmmodel_puller_access"
                                " | map('regex_replace', '^', '" + str(ROLE / "templates") + "/')))"
                                " | map('from_yaml') | list | to_json }}",
                                "mode": "0600",
                            },
                        }
                    ],
                }
            ]
        )
    )
    env = dict(os.environ, ANSIBLE_GATHERING="explicit", ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               ANSIBLE_FILTER_PLUGINS=str(ROLE / "filter_plugins"))
    done = subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook)],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(out.read_text())


@pytest.fixture
def models(dynamic, kubeconfig, llmmodel_crd, tmp_path):
    """Namespace with LLMModels tiny and other, and tiny's puller access applied; yields the namespace."""
    namespace = "puller-progress-" + uuid.uuid4().hex[:6]
    namespaces = dynamic.resources.get(api_version="v1", kind="Namespace")
    namespaces.create(body={"metadata": {"name": namespace, "labels": {"llm-operator-test": "unit"}}})
    llmmodels = dynamic.resources.get(api_version=API, kind="LLMModel")
    for name in ("tiny", "other"):
        llmmodels.create(
            namespace=namespace,
            body={
                "apiVersion": API,
                "kind": "LLMModel",
                "metadata": {"name": name},
                "spec": {"source": {"url": "https://models.example.com/m.gguf"}, "serve": {"image": "registry.invalid/s:1"}},
            },
        )
    for manifest in render_puller_access(tmp_path, "tiny", namespace):
        resource = dynamic.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
        resource.create(body=manifest, namespace=namespace)
    yield namespace
    namespaces.delete(name=namespace)


@pytest.fixture
def credentials(kubeconfig, tmp_path):
    """A token of ServiceAccount `account`, the API server's URL and its CA file."""
    config = yaml.safe_load(open(kubeconfig))
    cluster = config["clusters"][0]["cluster"]
    if "certificate-authority-data" in cluster:
        ca = tmp_path / "ca.crt"
        ca.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    else:
        ca = os.path.join(os.path.dirname(os.path.abspath(kubeconfig)), cluster["certificate-authority"])

    def get(namespace, account):
        token = kubectl(kubeconfig, "create", "token", account, "--namespace", namespace, "--duration=10m").strip()
        path = tmp_path / "token"
        path.write_text(token)
        return token, path, cluster["server"], ca

    return get


def puller_env(tmp_path, url, object_path, token_file, api_url, ca):
    dest = tmp_path / "weights"
    dest.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "NO_PROXY": "*",
        "PYTHONPATH": str(REPO / "puller" / "src"),
        "MODEL_DEST": str(dest),
        "MODEL_URL": url,
        "PULLER_TERMINATION_LOG": str(tmp_path / "termination-log"),
        "PULLER_STATUS_OBJECT": object_path,
        "PULLER_STATUS_SECONDS": "1",
        "PULLER_KUBE_API_URL": api_url,
        "PULLER_KUBE_TOKEN_FILE": str(token_file),
        "PULLER_KUBE_CA_FILE": str(ca),
    }


def progress_of(dynamic, namespace, name):
    llmmodels = dynamic.resources.get(api_version=API, kind="LLMModel")
    try:
        status = llmmodels.get(name=name, namespace=namespace).to_dict().get("status") or {}
    except NotFoundError:
        return None
    return (status.get("weights") or {}).get("progress")


def test_the_puller_reports_progress_into_its_model_and_nowhere_else(dynamic, kubeconfig, models, credentials, tmp_path):
    namespace = models
    token, token_file, api_url, ca = credentials(namespace, "tiny-puller")
    data = os.urandom(3 * MiB)
    path = f"/apis/{API}/namespaces/{namespace}/llmmodels/"
    with FileServer() as files:
        url = files.add("/m.gguf", data)
        files.chunk_delay = 0.06  # 48 chunks: about 3 s
        env = puller_env(tmp_path, url, path + "tiny", token_file, api_url, ca)
        process = subprocess.Popen(
            [sys.executable, "-m", "llm_model_puller"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        seen = []
        while process.poll() is None:
            report = progress_of(dynamic, namespace, "tiny")
            if report and report not in seen:
                seen.append(report)
            time.sleep(0.2)
        output = process.stdout.read()

        assert process.returncode == 0, output
        final = progress_of(dynamic, namespace, "tiny")
        assert final["percent"] == 100 and final["bytesDone"] == final["bytesTotal"] == len(data), final
        assert any(0 < r.get("percent", 0) < 100 for r in seen), seen  # seen while it was pulling
        assert token not in output

        # The same token for another model's status: refused, reported once, the pull unharmed.
        (tmp_path / "weights" / ".llm-model-puller.json").unlink()
        env = puller_env(tmp_path, url, path + "other", token_file, api_url, ca)
        files.chunk_delay = 0
        refused = subprocess.run([sys.executable, "-m", "llm_model_puller"], env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 0, refused.stdout + refused.stderr
    assert refused.stdout.count("progress not reported: HTTP 403") == 1, refused.stdout
    assert progress_of(dynamic, namespace, "other") is None
    assert token not in refused.stdout + refused.stderr
