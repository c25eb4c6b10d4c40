"""hack/imagebuild without buildah: build order, and when an image counts as changed."""

import pathlib
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "hack"))

from imagebuild import catalog, context, digest, paths  # noqa: E402

BASE_IDS = {name: "0" * 64 for name in (catalog.DEBIAN_BOOKWORM, catalog.DEBIAN_FORKY, catalog.PYTHON,
                                         catalog.OPERATOR_BASE)}


def test_every_local_base_is_built_before_the_images_built_from_it():
    built = set()
    for image in catalog.images("op:1", "puller:1", pathlib.Path("/bin/true")):
        assert set(image.bases) <= built, f"{image.key} is built before its base"
        built.add(image.name)


def test_the_images_a_containerd_gets_are_the_project_images_under_the_users_names():
    exported = {i.key: i.name for i in catalog.images("op:1", "puller:1", pathlib.Path("/bin/true"), "router:1")
                if i.export}
    assert exported == {
        "operator": "op:1", "puller": "puller:1", "router": "router:1", "pause": "registry.k8s.io/pause:3.10.1",
        "llama-server": catalog.llama_server_name(), "runs-as-root": "localhost/llm-operator/runs-as-root:test",
    }
    assert catalog.llama_server_name() == "ghcr.io/llm-operator/llama-server:0.7.0"


def test_the_digest_follows_the_context_and_the_build_args_only(tmp_path, monkeypatch):
    source = tmp_path / "src"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "a.py").write_text("a = 1\n")
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM scratch\n")
    monkeypatch.setattr(paths, "CONTEXTS", tmp_path / "contexts")
    monkeypatch.setattr(paths, "ROOT", tmp_path)

    def inputs(**args) -> str:
        image = catalog.Image("t", "t:1", "Dockerfile", {"pkg": source / "pkg"}, build_args=args,
                              bases=(catalog.PYTHON,))
        return digest.compute(image, context.stage(image), BASE_IDS)

    first = inputs(X="1")
    assert inputs(X="1") == first, "same inputs, same digest (a warm build does nothing)"
    (source / "pkg" / "__pycache__").mkdir()
    (source / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert inputs(X="1") == first, "caches are not inputs"
    assert inputs(X="2") != first
    (source / "pkg" / "a.py").write_text("a = 2\n")
    changed = inputs(X="1")
    assert changed != first
    dockerfile.write_text("FROM scratch\nUSER 1\n")
    assert inputs(X="1") != changed
