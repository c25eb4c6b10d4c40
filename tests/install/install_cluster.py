"""Constants and helpers of the install tests (a module of its own name, so that the admission and
install tests can run in one pytest session)."""

import os
import pathlib
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[2]
KUBECONFIG = os.environ.get("KUBECONFIG") or str(REPO / ".cluster" / "kubeconfig")
KUBECTL = os.environ.get("KUBECTL") or str(REPO / "bin" / "kubectl")
OPERATOR_SDK = os.environ.get("OPERATOR_SDK") or str(REPO / "bin" / "operator-sdk")
CRD_NAME = "llmmodels.inference.ai.example.com"
NAMESPACE = "llm-operator-system"
SERVICE_ACCOUNT = f"system:serviceaccount:{NAMESPACE}:llm-operator-controller-manager"
TEST_IMAGE = "example.com/llm-operator:test"


def run(*command, check=True, timeout=600, env=None):
    """Run a command in the repository; return the completed process."""
    result = subprocess.run(
        command,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "KUBECONFIG": KUBECONFIG, **(env or {})},
    )
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result


def kubectl(*args, check=True):
    return run(KUBECTL, "--kubeconfig", KUBECONFIG, *args, check=check, timeout=300)


def make(*args):
    return run("make", "--no-print-directory", *args, f"KUBECONFIG={KUBECONFIG}")
