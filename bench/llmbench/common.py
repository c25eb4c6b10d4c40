"""What every part of the bench shares: paths, names, running commands and kubectl."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "bench" / "out"
BIN = ROOT / "bin"
KUBECTL = BIN / "kubectl"
ADMIN_KUBECONFIG = ROOT / ".cluster" / "kubeconfig"
PIDFILE = ROOT / ".cluster" / "operator.pid"
OPERATOR_LOG = OUT / "operator.log"
RUNNER_ROOT = pathlib.Path("/tmp/ansible-operator/runner/inference.ai.example.com/v1alpha1/LLMModel")
OPERATOR_METRICS = "http://127.0.0.1:8686/metrics"

GROUP, VERSION, PLURAL = "inference.ai.example.com", "v1alpha1", "llmmodels"
PULL_SECONDS = 5
RUN_LABEL = "bench.llm-operator.io/run"
FLEET_LABEL = "bench.llm-operator.io/fleet"
POKE_ANNOTATION = "bench.llm-operator.io/poke"
SA_NAMESPACE = SA_NAME = FLOW_SCHEMA = "llm-operator-bench"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
MiB = 1 << 20

# The reference: the tutorial's own Go operator (controller-runtime) on this machine, same cluster,
# 100 models in 10 namespaces, 5 s pulls, 2 concurrent reconciles (issue 14).
GO_PEER = "Go peer (controller-runtime), same machine: 100 up 34 s, 100 down 7 s, 3.4 CPU-s in all, 45 MiB"


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def run(cmd: list[str], *, env: dict | None = None, input_text: str | None = None, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=ROOT, env=env, input=input_text, capture_output=True, text=True, timeout=timeout, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


def kubectl(*args: str, input_text: str | None = None, check: bool = True, kubeconfig: pathlib.Path = ADMIN_KUBECONFIG) -> str:
    return run([str(KUBECTL), "--kubeconfig", str(kubeconfig), *args], input_text=input_text, check=check).stdout


