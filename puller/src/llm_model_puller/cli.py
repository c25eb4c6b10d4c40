"""Entry point: environment in, weights and a manifest in MODEL_DEST out, an exit code that says why."""

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from . import __version__
from .config import Config, config_from_env, secrets_from_env
from .errors import DiskFullError, ExitCode, PullerError, UsageError, find_disk_full
from .http_download import pull_url
from .progress import Progress, human_bytes, log, redact, setup_logging
from .record import pinned, success_record
from .sources import redact_url
from .status_report import start_reporter
from .store import Staging, exclusive, missing_or_wrong, prune_revisions, read_manifest

DEFAULT_TERMINATION_LOG = Path("/dev/termination-log")
TERMINATION_MESSAGE_LIMIT = 1024  # Kubernetes keeps 4096 bytes; one readable line is plenty
USAGE = """\
llm-model-puller: download LLM weights into MODEL_DEST (configured by environment, see README.md)

  MODEL_DEST      destination directory (default /model-weights)
  HF_REPO         Hugging Face repo id owner/name          } exactly one
  MODEL_URL       one file: http(s)://, s3://, gs:// or az:// URL }
  HF_REVISION     branch, tag or commit (default main; HF_REPO only)
  HF_TOKEN        Hugging Face token (optional)
  HF_ENDPOINT     Hub mirror (optional)
  MODEL_SHA256    expected sha256 of the file (optional; MODEL_URL only)
  WEIGHTS_ROOT    the volume's root when MODEL_DEST is WEIGHTS_ROOT/revisions/<name> (optional)
  KEEP_REVISIONS  names in WEIGHTS_ROOT/revisions/ (or "root") kept; the others are removed first

exit codes: 0 ok, 1 other error, 2 configuration, 3 access refused, 4 not found,
            5 checksum mismatch, 6 disk full, 7 network gave up
"""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["-h"], ["--help"]):
        print(USAGE, end="")
        return ExitCode.OK
    if args == ["--version"]:
        print(__version__)
        return ExitCode.OK
    env = os.environ
    secrets = secrets_from_env(env)
    setup_logging(secrets)
    try:
        if args:
            raise UsageError(f"no arguments are accepted (configuration is by environment), got {' '.join(args)!r}")
        cfg = config_from_env(env)
        code = pull(cfg)
        if code == ExitCode.OK:
            report_success(cfg, env)
        return code
    except PullerError as exc:
        return fail(exc, env, secrets)
    except Exception as exc:  # the last line of defence: still a one-line reason and a distinct code
        disk_full = find_disk_full(exc)
        if disk_full is not None:
            return fail(
                DiskFullError(f"{disk_full.strerror} while writing {disk_full.filename or 'MODEL_DEST'}"), env, secrets
            )
        log.exception("unexpected failure")
        return fail(PullerError(f"unexpected {type(exc).__name__}: {exc}"), env, secrets)


def pull(cfg: Config) -> int:
    dest = cfg.dest
    shown = redact_url(cfg.url) if cfg.url else cfg.source
    if cfg.root is not None:
        prune(cfg)
    try:
        dest.mkdir(parents=True, exist_ok=True)
        if not os.access(dest, os.W_OK | os.X_OK):
            raise PermissionError(13, "not writable")
    except OSError as exc:
        raise UsageError(f"MODEL_DEST {dest} is not a writable directory: {exc.strerror or exc}") from None

    with exclusive(dest, lambda: log.info("another puller is working in %s; waiting for it to finish", dest)):
        return pull_locked(cfg, shown)


def prune(cfg: Config) -> None:
    """Make room for MODEL_DEST: remove the revisions the operator no longer keeps (KEEP_REVISIONS).

    Under a lock on the volume's root, the one a puller of the previous release takes on its
    MODEL_DEST, so that no revision is removed while another puller writes the root.
    """
    root = cfg.root
    if not root.is_dir():
        raise UsageError(f"WEIGHTS_ROOT {root} is not a directory")
    with exclusive(root, lambda: log.info("another puller is working in %s; waiting for it to finish", root)):
        removed = prune_revisions(root, cfg.dest, cfg.keep)
    kept = ", ".join(sorted(cfg.keep)) or "none"
    if removed:
        log.info("removed %s no longer kept (kept: %s): %s", count(removed, "path"), kept, ", ".join(removed))


def pull_locked(cfg: Config, shown: str) -> int:
    dest = cfg.dest
    if already_complete(cfg, shown):
        return ExitCode.OK
    staging = Staging(dest)
    if staging.prepare(cfg.source):
        log.info("continuing the partial download of %s found in %s", shown, staging.root)
    progress = Progress(cfg.file_name or cfg.hf_repo, interval=cfg.settings.progress_seconds)
    log.info("pulling %s into %s", shown, dest)
    reporter = start_reporter(None, progress)
    try:
        if cfg.hf_repo:
            prepare_hf_environment(cfg, staging)
            from .hf_download import pull_hf  # after prepare_hf_environment: huggingface_hub reads env on import

            names, details = pull_hf(cfg, staging, progress)
        elif cfg.s3 is not None:
            from .s3_download import pull_s3

            names, details = pull_s3(cfg, staging, progress)
        elif cfg.gcs is not None:
            from .gcs_download import pull_gcs

            names, details = pull_gcs(cfg, staging, progress)
        elif cfg.azure is not None:
            from .azure_download import pull_azure

            names, details = pull_azure(cfg, staging, progress)
        else:
            details = pull_url(cfg, staging, progress)
            names = [cfg.file_name]
    finally:
        if reporter is not None:
            reporter.stop()
    manifest = staging.publish(names, cfg.source, details)
    log.info("done: %s, %s, %s; %s", shown, pinned(details), count(manifest["files"], "file"), progress.summary())
    return ExitCode.OK


def already_complete(cfg: Config, shown: str) -> bool:
    """True when MODEL_DEST's manifest names this source and every file it lists is there with its size."""
    dest = cfg.dest
    manifest = read_manifest(dest)
    if not manifest:
        return False
    if manifest["source"] != cfg.source or (cfg.sha256 and manifest.get("sha256") != cfg.sha256):
        log.info("%s holds %s; replacing it with %s", dest, manifest["source"], shown)
        return False
    damaged = missing_or_wrong(dest, manifest)
    if damaged:
        some = ", ".join(damaged[:3])
        log.warning("%s: %s missing or changed (%s); downloading again", dest, count(damaged, "file"), some)
        return False
    files, size = count(manifest["files"], "file"), human_bytes(manifest.get("total_bytes", 0))
    log.info(
        "%s is already complete in %s (%s, %s, %s); nothing to download", shown, dest, pinned(manifest), files, size
    )
    return True


def count(items: list, noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def prepare_hf_environment(cfg: Config, staging: Staging) -> None:
    """Keep huggingface_hub quiet, inside MODEL_DEST, and on our timeouts."""
    os.environ.setdefault("HF_HOME", str(staging.hf_home))  # xet and token look-ups; removed with staging
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # our own progress lines instead of tqdm bars
    os.environ.setdefault("HF_XET_CHUNK_CACHE_SIZE_BYTES", "0")  # no second copy of the weights
    timeout = str(max(1, round(cfg.settings.timeout_seconds)))
    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", timeout)
    os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", timeout)


def fail(exc: PullerError, env: Mapping[str, str], secrets: list[str]) -> int:
    message = redact(" ".join(f"{exc.label}: {exc}".split()), secrets)
    log.error("%s (exit %d)", message, exc.exit_code)
    path = termination_log_path(env)
    if path is not None:
        try:
            path.write_text(message[:TERMINATION_MESSAGE_LIMIT] + "\n")
        except OSError as write_error:
            log.warning("could not write the termination message to %s: %s", path, write_error)
    return int(exc.exit_code)


def report_success(cfg: Config, env: Mapping[str, str]) -> None:
    """Leave what the volume now holds in the termination message, one JSON line, for the operator.

    Kubernetes keeps it in the pod's terminated state, so the LLMModel status can show the commit a
    branch resolved to (or the file's sha256) without anyone reading the volume.
    """
    path = termination_log_path(env)
    manifest = read_manifest(cfg.dest)
    if path is None or not manifest:
        return
    record = success_record(manifest, redact_url(cfg.url) if cfg.url else cfg.source)
    try:
        path.write_text(json.dumps(record, sort_keys=True)[:TERMINATION_MESSAGE_LIMIT] + "\n")
    except OSError as write_error:
        log.warning("could not write the termination message to %s: %s", path, write_error)


def termination_log_path(env: Mapping[str, str]) -> Path | None:
    override = env.get("PULLER_TERMINATION_LOG", "").strip()
    if override:
        return Path(override)
    return DEFAULT_TERMINATION_LOG if DEFAULT_TERMINATION_LOG.exists() else None
