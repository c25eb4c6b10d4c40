"""The router in `make demo` (hack/demo_real.py calls it): config/router applied into the operator's
namespace, llm-operator-system, as `make deploy` names it (Service llm-operator-router, port 8000), its
pod on the real node. The demo runs the operator itself on this machine, so only the router is
deployed; one replica instead of two (the machine is small), said when it is applied. It serves only
the real models' namespace: the samples kwok plays have no server to answer, and nothing may be sent
to a kwok pod's address.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile

import node

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAMESPACE = "llm-operator-system"
SERVICE = "llm-operator-router"
PORT = 8000
TIMEOUT = "180s"
OVERLAY = """\
resources:
  - {config}
namespace: {namespace}
namePrefix: llm-operator-
replicas:
  - name: router
    count: 1
patches:
  - target: {{kind: Deployment, name: router}}
    patch: |-
      - op: replace
        path: /spec/template/spec/containers/0/env/0
        value: {{name: LLM_ROUTER_NAMESPACES, value: {served}}}
"""


def manifest(served: str) -> str:
    """config/router as config/default names it, with one replica, serving the namespace `served`."""
    with tempfile.TemporaryDirectory() as overlay:
        config = os.path.relpath(ROOT / "config" / "router", overlay)
        (pathlib.Path(overlay) / "kustomization.yaml").write_text(OVERLAY.format(config=config, namespace=NAMESPACE, served=served))
        built = subprocess.run([str(ROOT / "bin" / "kustomize"), "build", overlay], capture_output=True, text=True,
                               check=False)
    if built.returncode != 0:
        sys.exit(f"demo: kustomize build config/router failed:\n{built.stderr}")
    return built.stdout


def deploy(kubectl, served: str) -> str:
    """Apply the router (serving the models of namespace `served`) and wait until it is available;
    returns its Service's cluster IP."""
    namespace = node.real_namespace(NAMESPACE)
    namespace["metadata"]["labels"] = {"pod-security.kubernetes.io/enforce": "restricted"}
    kubectl("apply", "--server-side", "-f", "-", stdin=json.dumps(namespace))
    kubectl("apply", "--server-side", "-f", "-", stdin=manifest(served))
    print(f"demo: REAL: the router (config/router, one replica here, two with `make deploy`) runs in "
          f"{NAMESPACE} on the real node as Service {SERVICE}:{PORT}, serving the models of {served}", flush=True)
    kubectl("rollout", "status", f"deployment/{SERVICE}", "-n", NAMESPACE, f"--timeout={TIMEOUT}")
    return kubectl("get", "service", SERVICE, "-n", NAMESPACE, "-o", "jsonpath={.spec.clusterIP}").strip()
