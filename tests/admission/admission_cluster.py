"""Constants and helpers of the admission tests (a module of its own name, so that the admission and
install tests can run in one pytest session)."""

import os
import pathlib
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[2]
KUBECONFIG = os.environ.get("KUBECONFIG") or str(REPO / ".cluster" / "kubeconfig")
KUBECTL = os.environ.get("KUBECTL") or str(REPO / "bin" / "kubectl")
CRD_FILE = REPO / "config" / "crd" / "bases" / "inference.ai.example.com_llmmodels.yaml"
CRD_NAME = "llmmodels.inference.ai.example.com"
GROUP, VERSION, PLURAL = "inference.ai.example.com", "v1alpha1", "llmmodels"


def kubectl(*args, check=True):
    """Run bin/kubectl against the test cluster; return the completed process."""
    result = subprocess.run(
        [KUBECTL, "--kubeconfig", KUBECONFIG, *args], capture_output=True, text=True, timeout=120, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return result
