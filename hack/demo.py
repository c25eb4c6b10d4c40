#!/usr/bin/env python3
"""The main job, end to end: apply the sample models and show them Serving.

Run by `make demo` after the local cluster and the operator are up. It applies config/samples into the
namespace `llm-demo`, waits until every sample reports phase Serving with its URL, and prints
`kubectl get llmmodels`. With the real node (`make demo` on a machine that can run it) it then serves
SmolLM2-135M-Instruct for real as two models behind the router, the one OpenAI endpoint
(hack/demo_real.py), and prints the router's model list and a chat streamed through it, with the
curl commands that asked them. Leaves everything running; `make cluster-down` ends it.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
KUBECTL = [str(ROOT / "bin" / "kubectl"), "--kubeconfig", os.environ.get("KUBECONFIG", str(ROOT / ".cluster" / "kubeconfig"))]
NAMESPACE = os.environ.get("LLM_DEMO_NAMESPACE", "llm-demo")
TIMEOUT = float(os.environ.get("LLM_DEMO_TIMEOUT", "180"))


def kubectl(*args: str, capture: bool = True) -> str:
    done = subprocess.run([*KUBECTL, *args], capture_output=capture, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"demo: kubectl {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout if capture else ""


def main() -> int:
    subprocess.run([*KUBECTL, "create", "namespace", NAMESPACE], capture_output=True, check=False)
    print(f"demo: applying the samples of config/samples to namespace {NAMESPACE}")
    print(kubectl("apply", "-n", NAMESPACE, "-k", str(ROOT / "config" / "samples")), end="")
    deadline = time.monotonic() + TIMEOUT
    last = ""
    while True:
        models = json.loads(kubectl("get", "llmmodels", "-n", NAMESPACE, "-o", "json"))["items"]
        phases = {m["metadata"]["name"]: m.get("status", {}).get("phase", "") for m in models}
        line = ", ".join(f"{name}={phase or '-'}" for name, phase in sorted(phases.items()))
        if line != last:
            print(f"demo: {line}", flush=True)
            last = line
        if models and all(m.get("status", {}).get("phase") == "Serving" and m["status"].get("inferenceURL") for m in models):
            break
        if time.monotonic() > deadline:
            print(kubectl("get", "llmmodels", "-n", NAMESPACE, "-o", "wide"))
            sys.exit(f"demo: not every model was Serving after {TIMEOUT:.0f}s; operator log: .cluster/operator.log")
        time.sleep(2)
    print()
    print(kubectl("get", "llmmodels", "-n", NAMESPACE), end="")
    print()
    # Honest about what ran: kwok plays these pods, so their Serving is the simulated readiness.
    nodes = sorted(set(kubectl("get", "pods", "-n", NAMESPACE, "-o", "jsonpath={range .items[*]}{.spec.nodeName}{'\\n'}{end}").split()))
    print(f"demo: SIMULATED: the samples' pods run on the kwok nodes ({', '.join(nodes) or 'none'}): no container runs, "
          "no weights are downloaded, and Serving means kwok's simulated readiness. They show the operator's "
          "objects and phases, not a model answering.")
    print(f"demo: try: KUBECONFIG={KUBECTL[2]} bin/kubectl get llmmodels,pvc,jobs,deploy,svc -n {NAMESPACE}")
    if real_node_present():
        import demo_real

        demo_real.main(KUBECTL)
    print("demo: `make cluster-down` stops the cluster and the operator.")
    return 0


def real_node_present() -> bool:
    sys.path.insert(0, str(ROOT / "hack"))
    import node

    return subprocess.run([*KUBECTL, "get", "node", node.NODE_NAME], capture_output=True, check=False).returncode == 0


if __name__ == "__main__":
    sys.exit(main())
