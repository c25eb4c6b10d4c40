"""Revisions on one volume: a pull into WEIGHTS_ROOT/revisions/<id> removes only the revisions the
operator no longer keeps, never the one served, and a failed pull leaves every kept revision whole.
The puller runs as a subprocess against a real HTTP server on 127.0.0.1."""

import json

import pytest

from puller_servers import FileServer
from puller_testkit import MANIFEST, MiB, payload, sha256

from llm_model_puller.config import config_from_env
from llm_model_puller.errors import UsageError

EXIT_NOT_FOUND = 4


@pytest.fixture
def files():
    with FileServer() as server:
        yield server


def revision(root, name, content):
    """A complete revision as the puller leaves it: a model file and its manifest."""
    path = root / "revisions" / name
    path.mkdir(parents=True)
    (path / "model.gguf").write_bytes(content)
    (path / MANIFEST).write_text(json.dumps({"version": 1, "source": name, "files": []}))
    return path


def snapshot(path):
    """Every file under path with its bytes: what a server reading it would see."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def volume(tmp_path):
    """A volume of the previous release (its revision at the root) with two revisions beside it."""
    root = tmp_path / "volume"
    (root / "lost+found").mkdir(parents=True)
    (root / "legacy.gguf").write_bytes(b"legacy weights")
    (root / MANIFEST).write_text(json.dumps({"version": 1, "source": "legacy", "files": []}))
    revision(root, "served0000aa", b"served weights")
    revision(root, "older0000bbb", b"older weights")
    return root


def test_a_pull_keeps_the_served_and_listed_revisions_and_removes_the_others(files, puller, volume):
    data = payload(2 * MiB)
    url = files.add("/models/new.gguf", data)
    served = snapshot(volume / "revisions" / "served0000aa")
    dest = volume / "revisions" / "new000000ccc"

    run = puller({"MODEL_URL": url, "MODEL_SHA256": sha256(data), "MODEL_DEST": str(dest),
                  "WEIGHTS_ROOT": str(volume), "KEEP_REVISIONS": "served0000aa,root"})

    assert run.returncode == 0, run.output
    assert (dest / "new.gguf").read_bytes() == data
    assert snapshot(volume / "revisions" / "served0000aa") == served
    assert sorted(p.name for p in (volume / "revisions").iterdir()) == ["new000000ccc", "served0000aa"]
    # The previous release's revision at the root is kept when listed: its files and manifest stay.
    assert (volume / "legacy.gguf").read_bytes() == b"legacy weights"
    assert (volume / MANIFEST).exists()
    assert "removed 1 path no longer kept (kept: root, served0000aa): revisions/older0000bbb" in run.stdout


def test_the_root_revision_goes_when_not_kept_but_not_lost_found(files, puller, volume):
    data = payload(MiB, seed=3)
    url = files.add("/m.gguf", data)
    dest = volume / "revisions" / "new000000ccc"

    run = puller({"MODEL_URL": url, "MODEL_DEST": str(dest), "WEIGHTS_ROOT": str(volume),
                  "KEEP_REVISIONS": "served0000aa"})

    assert run.returncode == 0, run.output
    assert sorted(p.name for p in volume.iterdir()) == ["lost+found", "revisions"]
    assert sorted(p.name for p in (volume / "revisions").iterdir()) == ["new000000ccc", "served0000aa"]


def test_a_failed_pull_leaves_every_kept_revision_whole(files, puller, volume):
    before = snapshot(volume)
    dest = volume / "revisions" / "new000000ccc"

    run = puller({"MODEL_URL": files.url + "/missing.gguf", "MODEL_DEST": str(dest), "WEIGHTS_ROOT": str(volume),
                  "KEEP_REVISIONS": "served0000aa,older0000bbb,root"})

    assert run.returncode == EXIT_NOT_FOUND, run.output
    after = snapshot(volume)
    # Only the new revision's own directory was written (its staging area); nothing else changed.
    assert {k: v for k, v in after.items() if not k.startswith("revisions/new000000ccc/")} == before


def test_a_repull_of_a_kept_revision_touches_no_other(files, puller, volume):
    data = payload(MiB, seed=4)
    url = files.add("/again.gguf", data)
    others = {name: snapshot(volume / "revisions" / name) for name in ("served0000aa",)}
    dest = volume / "revisions" / "older0000bbb"

    run = puller({"MODEL_URL": url, "MODEL_DEST": str(dest), "WEIGHTS_ROOT": str(volume),
                  "KEEP_REVISIONS": "served0000aa,root"})

    assert run.returncode == 0, run.output
    assert {name: snapshot(volume / "revisions" / name) for name in others} == others
    # MODEL_DEST's own earlier contents are its to replace, as without revisions.
    assert sorted(p.name for p in dest.iterdir()) == [MANIFEST, "again.gguf"]
    assert (volume / "legacy.gguf").exists()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MODEL_DEST": "/v/other/x", "WEIGHTS_ROOT": "/v"}, "MODEL_DEST must be WEIGHTS_ROOT/revisions/<name>"),
        ({"MODEL_DEST": "/v/revisions/..", "WEIGHTS_ROOT": "/v"}, "MODEL_DEST must be WEIGHTS_ROOT/revisions/<name>"),
        ({"MODEL_DEST": "/v/revisions/a", "WEIGHTS_ROOT": "/v", "KEEP_REVISIONS": "b,../c"}, "got '../c'"),
        ({"MODEL_DEST": "/v/revisions/a", "KEEP_REVISIONS": "b"}, "KEEP_REVISIONS goes with WEIGHTS_ROOT only"),
    ],
)
def test_revision_settings_are_checked(env, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        config_from_env({"MODEL_URL": "https://h/m.gguf", **env})
