#!/usr/bin/env python3
"""The previous release of the operator, for the e2e test that upgrades from it with models serving
(tests/e2e/test_e2e_upgrade_with_models_of_the_previous_release.py; docs/install.md, "Upgrade").

    previous_release.py [--commit COMMIT]

Checks the commit out with `git archive` into .cache/previous-release/<commit>/ (once: it never
changes) and builds its operator image, localhost/llm-operator/llm-operator:<commit>, with the
project's image builder (hack/imagebuild; rebuilt only when its inputs changed), exported to
.cache/images/previous-operator.tar, which the real node imports at cluster-up. Prints the directory.
The commit must be in the clone's history (a shallow clone has to fetch it).
"""

from __future__ import annotations

import argparse
import io
import pathlib
import shutil
import subprocess
import sys
import tarfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from imagebuild import builder, catalog, paths  # noqa: E402

# The last main before issue 25: selectors by app.kubernetes.io/instance and component, the weights
# at the volume's root, no revisions, no preset pin.
DEFAULT_COMMIT = "2189821"
CHECKOUT = paths.CACHE / "previous-release"
# What the test needs of it: the operator image's inputs and the chart (with its CRD).
PATHS = ("Dockerfile", "requirements.yml", "watches.yaml", "roles", "playbooks", "charts/llm-operator")


def git_archive(commit: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(paths.ROOT), "archive", "--format=tar", commit, *PATHS],
                          capture_output=True, check=False)


def shallow() -> bool:
    done = subprocess.run(["git", "-C", str(paths.ROOT), "rev-parse", "--is-shallow-repository"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() == "true"


def checkout(commit: str) -> pathlib.Path:
    """The commit's files under .cache/previous-release/<commit>/, extracted once."""
    target = CHECKOUT / commit
    if (target / ".complete").exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    archive = git_archive(commit)
    if archive.returncode != 0 and shallow():
        # A shallow clone (CI's may be one): fetch the history from where it was cloned, once.
        subprocess.run(["git", "-C", str(paths.ROOT), "fetch", "--quiet", "--unshallow"], check=False)
        archive = git_archive(commit)
    if archive.returncode != 0:
        raise SystemExit(f"previous_release: git archive {commit} failed (a shallow clone lacks it: "
                         f"git fetch --unshallow): {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(target, filter="data")
    (target / ".complete").write_text(commit + "\n")
    return target


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commit", default=DEFAULT_COMMIT)
    args = parser.parse_args(argv)
    source = checkout(args.commit)
    builder.ensure(catalog.previous_operator(source, args.commit))
    print(source)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
