#!/usr/bin/env python3
"""Build the pinned Go tools into bin/, skipping every tool that is already there.

Each tool has a wrapper module under hack/tools/<module>/ whose go.mod and go.sum pin it: that go.mod
is the one place its version lives. A stamp file bin/.stamps/<tool> records the version a binary was
built from, so `make tools` rebuilds only what is missing or out of date and a warm run takes seconds.

Usage: build_tools.py [TOOL|GROUP ...]   (default: every tool but the node's)
Groups: `cluster` (what the local cluster runs), `operator` (the cluster's, kustomize and
ansible-operator: what `make run` and `make demo` use), `node` (the real node's parts: kubelet, kube-proxy,
containerd, ctr, the runc shim, runc, the CNI plugins, crictl; `make node-tools`). runc is the one
cgo build (libseccomp from Debian: `hack/apt_install.py node-build`); every other tool is pure Go.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOLS_DIR = ROOT / "hack" / "tools"
BIN = ROOT / "bin"
STAMPS = BIN / ".stamps"

# tool name -> (wrapper module dir, pinned module, package to build, extra go build flags)
TOOLS = {
    "kube-apiserver": ("kubernetes", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kube-apiserver"),
    "kube-controller-manager": ("kubernetes", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kube-controller-manager"),
    "kube-scheduler": ("kubernetes", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kube-scheduler"),
    "kubectl": ("kubernetes", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kubectl"),
    "etcd": ("etcd", "go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/server/v3"),
    "kwok": ("kwok", "sigs.k8s.io/kwok", "sigs.k8s.io/kwok/cmd/kwok"),
    "kwokctl": ("kwok", "sigs.k8s.io/kwok", "sigs.k8s.io/kwok/cmd/kwokctl"),
    "kustomize": ("kustomize", "sigs.k8s.io/kustomize/kustomize/v5", "sigs.k8s.io/kustomize/kustomize/v5"),
    "ansible-operator": (
        "ansible-operator",
        "github.com/operator-framework/ansible-operator-plugins",
        "github.com/operator-framework/ansible-operator-plugins/cmd/ansible-operator",
    ),
    "operator-sdk": (
        "operator-sdk",
        "github.com/operator-framework/operator-sdk",
        "github.com/operator-framework/operator-sdk/cmd/operator-sdk",
    ),
    # The chart's tests (charts/llm-operator): helm lint, template, install, upgrade, uninstall.
    "helm": ("helm", "helm.sh/helm/v4", "helm.sh/helm/v4/cmd/helm"),
    # Helm 3 (security fixes until February 2027): the chart must render and refuse wrong values as with 4.
    "helm3": ("helm3", "helm.sh/helm/v3", "helm.sh/helm/v3/cmd/helm"),
    # The real node (hack/node.py).
    "kubelet": ("kubernetes", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kubelet"),
    "kube-proxy": ("kubernetes", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kube-proxy"),
    "containerd": ("containerd", "github.com/containerd/containerd/v2", "github.com/containerd/containerd/v2/cmd/containerd"),
    "ctr": ("containerd", "github.com/containerd/containerd/v2", "github.com/containerd/containerd/v2/cmd/ctr"),
    "containerd-shim-runc-v2": (
        "containerd",
        "github.com/containerd/containerd/v2",
        "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2",
    ),
    "runc": ("runc", "github.com/opencontainers/runc", "github.com/opencontainers/runc"),
    "cni/bridge": ("cni-plugins", "github.com/containernetworking/plugins", "github.com/containernetworking/plugins/plugins/main/bridge"),
    "cni/host-local": ("cni-plugins", "github.com/containernetworking/plugins", "github.com/containernetworking/plugins/plugins/ipam/host-local"),
    "cni/loopback": ("cni-plugins", "github.com/containernetworking/plugins", "github.com/containernetworking/plugins/plugins/main/loopback"),
    "cni/portmap": ("cni-plugins", "github.com/containernetworking/plugins", "github.com/containernetworking/plugins/plugins/meta/portmap"),
    "crictl": ("cri-tools", "sigs.k8s.io/cri-tools", "sigs.k8s.io/cri-tools/cmd/crictl"),
    # Monitoring (docs/monitoring.md): promtool checks and unit-tests the alerts in `make test`; the
    # e2e suite runs a real Prometheus and kube-state-metrics against the real node.
    "promtool": ("prometheus", "github.com/prometheus/prometheus", "github.com/prometheus/prometheus/cmd/promtool"),
    "prometheus": ("prometheus", "github.com/prometheus/prometheus", "github.com/prometheus/prometheus/cmd/prometheus"),
    "kube-state-metrics": ("kube-state-metrics", "k8s.io/kube-state-metrics/v2", "k8s.io/kube-state-metrics/v2"),
    # The puller's S3 tests and `make bench-pull`: an S3 gateway over a directory that checks AWS
    # Signature V4 (Apache-2.0; MinIO and garage are AGPL).
    "versitygw": ("versitygw", "github.com/versity/versitygw", "github.com/versity/versitygw/cmd/versitygw"),
    # The puller's gs:// tests: the Cloud Storage JSON API over memory (BSD-2-Clause); it checks no token.
    "fake-gcs-server": ("fake-gcs-server", "github.com/fsouza/fake-gcs-server", "github.com/fsouza/fake-gcs-server"),
}

# Tools the local cluster and the operator need; operator-sdk is only for the bundle, helm for the chart.
CLUSTER_TOOLS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "kwokctl"]
# The real node's parts: built only on request (`make node-tools`), not by `make tools`.
NODE_TOOLS = [
    "kubelet",
    "kube-proxy",
    "containerd",
    "ctr",
    "containerd-shim-runc-v2",
    "runc",
    "cni/bridge",
    "cni/host-local",
    "cni/loopback",
    "cni/portmap",
    "crictl",
]
# What running the operator locally needs (`make run`, `operator-start`, `make demo`): the cluster, the
# operator binary and kustomize (the demo's router). Not operator-sdk, Helm or the monitoring tools.
OPERATOR_TOOLS = [*CLUSTER_TOOLS, "kustomize", "ansible-operator"]
GROUPS = {"cluster": CLUSTER_TOOLS, "node": NODE_TOOLS, "operator": OPERATOR_TOOLS}
# runc's nsenter is C and seccomp comes from libseccomp: the one cgo build.
CGO_TAGS = {"runc": "seccomp"}
# Prometheus and promtool without the cloud service discoveries (half of the build): only the
# kubernetes one the e2e suite uses (plus file and http, always in). The same tags for both, so the
# second build reuses the first's packages. No `builtinassets`: no web UI (it needs npm), the API
# is all the tests use.
BUILD_TAGS = {"promtool": "remove_all_sd,enable_kubernetes_sd", "prometheus": "remove_all_sd,enable_kubernetes_sd"}


def pinned_version(module_dir: str, module: str) -> str:
    """Read the version of `module` from the wrapper's go.mod (a replace wins over a require)."""
    text = (TOOLS_DIR / module_dir / "go.mod").read_text()
    replaced = re.search(rf"^\s*(?:replace\s+)?{re.escape(module)}\s*=>\s*\S+\s+(v\S+)", text, re.M)
    if replaced:
        return replaced.group(1)
    required = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", text, re.M)
    if not required:
        sys.exit(f"build_tools: {module} is not pinned in hack/tools/{module_dir}/go.mod")
    return required.group(1)


def ldflags(tool: str, version: str) -> str:
    flags = ["-s", "-w"]
    if TOOLS[tool][1] == "k8s.io/kubernetes":
        major, minor = version.lstrip("v").split(".")[:2]
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            flags += [
                f"-X {pkg}.gitVersion={version}",
                f"-X {pkg}.gitMajor={major}",
                f"-X {pkg}.gitMinor={minor}",
                f"-X {pkg}.gitTreeState=clean",
                f"-X {pkg}.buildDate=1970-01-01T00:00:00Z",
            ]
    if tool == "kustomize":
        flags.append(f"-X sigs.k8s.io/kustomize/api/provenance.version={version}")
    if tool == "operator-sdk":
        flags.append(f"-X github.com/operator-framework/operator-sdk/internal/version.Version={version}")
    if tool == "ansible-operator":
        flags.append(f"-X github.com/operator-framework/ansible-operator-plugins/internal/version.Version={version}")
    if tool == "helm":
        flags += [f"-X helm.sh/helm/v4/internal/version.version={version}", "-X helm.sh/helm/v4/internal/version.gitTreeState=clean"]
    if tool == "helm3":
        flags += [f"-X helm.sh/helm/v3/internal/version.version={version}", "-X helm.sh/helm/v3/internal/version.gitTreeState=clean"]
        # Helm 3's default Kubernetes version (helm template, helm lint) is set at build time from the
        # client-go it is built with, as its Makefile does (v0.36.x -> 1.36); unset, it is 1.20.
        client_go = pinned_version("helm3", "k8s.io/client-go").lstrip("v").split(".")
        for pkg in ("helm.sh/helm/v3/pkg/chartutil", "helm.sh/helm/v3/pkg/lint/rules"):
            flags += [f"-X {pkg}.k8sVersionMajor={int(client_go[0]) + 1}", f"-X {pkg}.k8sVersionMinor={client_go[1]}"]
    module = TOOLS[tool][1]
    if module == "github.com/containerd/containerd/v2":
        flags.append(f"-X github.com/containerd/containerd/v2/version.Version={version}")
    if module == "github.com/containernetworking/plugins":
        flags.append(f"-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion={version}")
    if tool == "versitygw":
        flags.append(f"-X main.Version={version}")
    if tool == "crictl":
        flags.append(f"-X sigs.k8s.io/cri-tools/pkg/version.Version={version}")
    if module in ("github.com/prometheus/prometheus", "k8s.io/kube-state-metrics/v2"):
        # Prometheus v0.3yy.z is release 3.yy.z (its README); kube-state-metrics' tag is its version.
        shown = version
        if module == "github.com/prometheus/prometheus":
            minor, patch = version.lstrip("v").split(".")[1:3]
            shown = f"{int(minor) // 100}.{int(minor) % 100}.{patch}"
        flags.append(f"-X github.com/prometheus/common/version.Version={shown.lstrip('v')}")
    return " ".join(flags)


def build(tool: str) -> bool:
    """Build one tool unless its stamp says it is current. Returns True when it built."""
    module_dir, module, package = TOOLS[tool]
    version = pinned_version(module_dir, module)
    target, stamp = BIN / tool, STAMPS / tool
    if target.exists() and stamp.exists() and stamp.read_text().strip() == version:
        return False
    print(f"building {tool} {version} ...", flush=True)
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod -buildvcs=false")
    if tool == "operator-sdk":
        env["GOFLAGS"] += " -tags=containers_image_openpgp"
    if tool in CGO_TAGS:
        env["CGO_ENABLED"] = "1"
        env["GOFLAGS"] += f" -tags={CGO_TAGS[tool]}"
    if tool in BUILD_TAGS:
        env["GOFLAGS"] += f" -tags={BUILD_TAGS[tool]}"
    target.parent.mkdir(parents=True, exist_ok=True)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    subprocess.run(
        ["go", "build", "-trimpath", "-ldflags", ldflags(tool, version), "-o", str(target), package],
        cwd=TOOLS_DIR / module_dir,
        env=env,
        check=True,
    )
    stamp.write_text(version + "\n")
    print(f"built {tool} {version} in {time.monotonic() - started:.0f}s", flush=True)
    return True


def main(argv: list[str]) -> int:
    wanted = [tool for name in argv for tool in GROUPS.get(name, [name])]
    if not argv:
        wanted = [tool for tool in TOOLS if tool not in NODE_TOOLS]
    unknown = [t for t in wanted if t not in TOOLS]
    if unknown:
        sys.exit(f"build_tools: unknown tool(s) {', '.join(unknown)}; known: {', '.join(TOOLS)}")
    STAMPS.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        built = [t for t in wanted if build(t)]
    except subprocess.CalledProcessError as err:
        sys.exit(f"build_tools: go build failed ({err.returncode}); see the output above")
    if built:
        print(f"tools: built {len(built)} in {time.monotonic() - started:.0f}s: {' '.join(built)}")
    else:
        print("tools: all present")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
