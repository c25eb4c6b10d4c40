"""The images `make images` builds: which Dockerfile, which context, which build arguments, in order.

Stand-ins (localhost/llm-operator/...) replace the public bases that cannot be pulled here; the
project's own images are built from its own Dockerfiles with the stand-ins named by build arguments,
and are the ones exported to .cache/images/<key>.tar for a containerd. A user's names (IMG,
LLMMODEL_PULLER_IMAGE, LLM_ROUTER_IMAGE) come from the Makefile and reach `images(...)` as arguments.
"""

from __future__ import annotations

import dataclasses
import pathlib

from . import paths

STANDIN = "localhost/llm-operator"
DEBIAN_BOOKWORM = f"{STANDIN}/debian:bookworm"
DEBIAN_FORKY = f"{STANDIN}/debian:forky"
PYTHON = f"{STANDIN}/python:3.11-slim"
OPERATOR_BASE = f"{STANDIN}/ansible-operator:v1.42.2"
PAUSE = "registry.k8s.io/pause:3.10.1"
LLAMA_SERVER_REPOSITORY = "ghcr.io/llm-operator/llama-server"
# A test fixture (e2e): the pause image with user 0, for the kubelet's runAsNonRoot refusal.
RUNS_AS_ROOT = f"{STANDIN}/runs-as-root:test"
ROUTER = "ghcr.io/llm-operator/llm-router:0.1.0"


@dataclasses.dataclass(frozen=True)
class Image:
    key: str  # short name: stamps, contexts and the exported tar are named after it
    name: str  # the reference it is tagged (and exported) with
    dockerfile: str  # repository-relative
    context: dict[str, pathlib.Path]  # path in the staged context -> file or directory it is copied from
    build_args: dict[str, str] = dataclasses.field(default_factory=dict)
    bases: tuple[str, ...] = ()  # names of local images it is built FROM (part of its inputs)
    rootfs: str | None = None  # Debian suite whose mmdebstrap rootfs becomes rootfs.tar in the context
    export: bool = False  # written to .cache/images/<key>.tar for a containerd
    host_ca: bool = False  # its RUN steps see the host's CA bundle (pip behind this machine's proxy)


def _repo(*names: str) -> dict[str, pathlib.Path]:
    return {name: paths.ROOT / name for name in names}


def llama_cpp_version() -> str:
    """The pinned Debian version of llama.cpp-tools, read from its Dockerfile (the one place it lives)."""
    for line in (paths.ROOT / "images/llama-server/Dockerfile").read_text().splitlines():
        if line.startswith("ARG LLAMA_CPP_VERSION="):
            return line.split("=", 1)[1].strip()
    raise SystemExit("images: ARG LLAMA_CPP_VERSION= is missing from images/llama-server/Dockerfile")


def llama_server_name() -> str:
    """ghcr.io/llm-operator/llama-server:<upstream version>, e.g. 1:0.7.0+dfsg-2 -> 0.7.0."""
    version = llama_cpp_version().split(":", 1)[-1].split("+", 1)[0].split("-", 1)[0]
    return f"{LLAMA_SERVER_REPOSITORY}:{version}"


def collection_artifacts() -> dict[str, pathlib.Path]:
    """The Galaxy artifacts of `make collections` (.cache/collections/*.tar.gz), by context path."""
    found = sorted(paths.COLLECTIONS.glob("*.tar.gz"))
    return {path.relative_to(paths.ROOT).as_posix(): path for path in found}


def _python_package(directory: str) -> dict[str, pathlib.Path]:
    """The context of an image that pip-installs one of the repository's Python packages (puller/, router/)."""
    return {name: paths.ROOT / directory / name for name in ("requirements.lock", "pyproject.toml", "README.md", "src")}


def images(operator: str, puller: str, ansible_operator: pathlib.Path, router: str = ROUTER) -> list[Image]:
    """Every image in build order (a base before the images built FROM it)."""
    collections = paths.COLLECTIONS.relative_to(paths.ROOT).as_posix()
    return [
        Image("debian-bookworm", DEBIAN_BOOKWORM, "images/debian/Dockerfile", {}, rootfs="bookworm"),
        Image("debian-forky", DEBIAN_FORKY, "images/debian/Dockerfile", {}, rootfs="forky"),
        Image(
            "python", PYTHON, "images/python/Dockerfile", {},
            build_args={"DEBIAN_IMAGE": DEBIAN_BOOKWORM}, bases=(DEBIAN_BOOKWORM,),
        ),
        Image(
            "operator-base", OPERATOR_BASE, "images/operator-base/Dockerfile",
            {
                "requirements.txt": paths.ROOT / "images/operator-base/requirements.txt",
                **{f"runner-http-plugin/{name}": paths.ROOT / "runner-http-plugin" / name
                   for name in ("pyproject.toml", "README.md", "src")},
                "ansible-operator": ansible_operator,
            },
            build_args={"PYTHON_IMAGE": PYTHON}, bases=(PYTHON,), host_ca=True,
        ),
        Image(
            "operator", operator, "Dockerfile",
            {**_repo("requirements.yml", "watches.yaml", "roles", "playbooks"), **collection_artifacts()},
            build_args={"BASE_IMAGE": OPERATOR_BASE, "COLLECTIONS": collections}, bases=(OPERATOR_BASE,),
            export=True,
        ),
        Image(
            "puller", puller, "puller/Dockerfile", _python_package("puller"),
            build_args={"PYTHON_IMAGE": PYTHON}, bases=(PYTHON,), export=True, host_ca=True,
        ),
        Image(
            "router", router, "router/Dockerfile", _python_package("router"),
            build_args={"PYTHON_IMAGE": PYTHON}, bases=(PYTHON,), export=True, host_ca=True,
        ),
        Image(
            "llama-server", llama_server_name(), "images/llama-server/Dockerfile", {},
            build_args={"DEBIAN_IMAGE": DEBIAN_FORKY}, bases=(DEBIAN_FORKY,), export=True,
        ),
        Image(
            "pause", PAUSE, "images/pause/Dockerfile", {"pause.c": paths.ROOT / "images/pause/pause.c"},
            build_args={"BUILD_IMAGE": DEBIAN_BOOKWORM}, bases=(DEBIAN_BOOKWORM,), export=True,
        ),
        Image(
            "runs-as-root", RUNS_AS_ROOT, "images/runs-as-root/Dockerfile", {},
            build_args={"PAUSE_IMAGE": PAUSE}, bases=(PAUSE,), export=True,
        ),
    ]


def previous_operator(source: pathlib.Path, tag: str) -> Image:
    """The operator image of an earlier commit, checked out (git archive) in `source` under .cache/: its
    own Dockerfile, role, watches and playbooks on today's operator base (tests/e2e upgrades from it).
    Exported as previous-operator.tar, so the real node imports it at cluster-up like the others."""
    collections = paths.COLLECTIONS.relative_to(paths.ROOT).as_posix()
    return Image(
        "previous-operator", f"{STANDIN}/llm-operator:{tag}", (source / "Dockerfile").relative_to(paths.ROOT).as_posix(),
        {**{name: source / name for name in ("requirements.yml", "watches.yaml", "roles", "playbooks")}, **collection_artifacts()},
        build_args={"BASE_IMAGE": OPERATOR_BASE, "COLLECTIONS": collections}, bases=(OPERATOR_BASE,), export=True,
    )
