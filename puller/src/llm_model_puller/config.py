"""The environment contract: read, validate, refuse bad combinations at once."""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from .azure_source import SECRET_VARIABLES as AZURE_SECRET_VARIABLES
from .azure_source import AzureLocation, azure_location, is_azure_url
from .errors import UsageError
from .gcs_source import GcsLocation, gcs_location, reads_json_api
from .s3_source import S3Location, prefix_label, s3_location
from .sources import KEY_SCHEMES, URL_SCHEMES, file_name_for_url, hf_source, redact_url, source_identity, url_secrets
from .store import REVISIONS_DIR, ROOT_REVISION

DEFAULT_DEST = "/model-weights"
DEFAULT_REVISION = "main"
REVISION_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]*$")
REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
SHA256_HEX = re.compile(r"^[0-9a-fA-F]{64}$")


@dataclass(frozen=True)
class Settings:
    """Tuning knobs; the defaults suit a Job, tests shrink them."""

    max_retries: int = 5
    backoff_seconds: float = 2.0
    backoff_max_seconds: float = 60.0
    timeout_seconds: float = 60.0
    progress_seconds: float = 5.0
    hf_max_workers: int = 8
    s3_max_workers: int = 8
    s3_part_mib: int = 32


@dataclass(frozen=True)
class Config:
    dest: Path
    source: str  # canonical: hf://owner/name@revision, or the URL's identity (sources.source_identity)
    hf_repo: str | None = None
    hf_revision: str | None = None
    hf_token: str | None = None
    hf_endpoint: str | None = None
    url: str | None = None
    fetch_url: str | None = None  # where the bytes are fetched: url, or an s3:// object's http(s) URL
    file_name: str | None = None
    sha256: str | None = None
    s3: S3Location | None = None  # an s3:// source: signed requests, one object or a prefix (s3_download)
    gcs: GcsLocation | None = None  # a gs:// source read through the JSON API (gcs_download)
    azure: AzureLocation | None = None  # an az:// or blob https source: Shared Key or SAS (azure_download)
    settings: Settings = Settings()
    # The volume's root when MODEL_DEST is one revision directory in it (WEIGHTS_ROOT/revisions/<id>),
    # and the revisions the operator keeps there besides MODEL_DEST (store.prune_revisions).
    root: Path | None = None
    keep: frozenset[str] = frozenset()


# Variables that are credentials as a whole (the access key id too: it names the account).
SECRET_VARIABLES = (
    "HF_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    *AZURE_SECRET_VARIABLES,
)
# Variables whose URL may carry credentials in its user info or query string.
URL_VARIABLES = ("MODEL_URL", "HF_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "STORAGE_EMULATOR_HOST")


def secrets_from_env(env: Mapping[str, str]) -> list[str]:
    """Strings that must never reach a log line or the termination message: the Hub token, and the
    user info and query of every URL the environment gives (read before anything is validated)."""
    found = [env.get(name, "").strip() for name in SECRET_VARIABLES]
    for name in URL_VARIABLES:
        found += url_secrets(env.get(name, "").strip())
    return [secret for secret in found if secret]


def _get(env: Mapping[str, str], name: str) -> str | None:
    # Kubernetes renders absent optional values as "", which means unset here.
    value = env.get(name, "").strip()
    return value or None


def _number(env: Mapping[str, str], name: str, default, kind, minimum):
    raw = _get(env, name)
    if raw is None:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise UsageError(f"{name} must be a number, got {raw!r}") from None
    if value < minimum:
        raise UsageError(f"{name} must be at least {minimum}, got {raw!r}")
    return value


def settings_from_env(env: Mapping[str, str]) -> Settings:
    return Settings(
        max_retries=_number(env, "PULLER_MAX_RETRIES", Settings.max_retries, int, 0),
        backoff_seconds=_number(env, "PULLER_BACKOFF_SECONDS", Settings.backoff_seconds, float, 0),
        backoff_max_seconds=_number(env, "PULLER_BACKOFF_MAX_SECONDS", Settings.backoff_max_seconds, float, 0),
        timeout_seconds=_number(env, "PULLER_TIMEOUT_SECONDS", Settings.timeout_seconds, float, 0.1),
        progress_seconds=_number(env, "PULLER_PROGRESS_SECONDS", Settings.progress_seconds, float, 0.1),
        hf_max_workers=_number(env, "PULLER_HF_MAX_WORKERS", Settings.hf_max_workers, int, 1),
        s3_max_workers=_number(env, "PULLER_S3_MAX_WORKERS", Settings.s3_max_workers, int, 1),
        s3_part_mib=_number(env, "PULLER_S3_PART_MIB", Settings.s3_part_mib, int, 1),
    )


def _check_http_url(name: str, value: str) -> None:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"{name} must be an http(s) URL, got {redact_url(value)!r}")


def revisions_from_env(env: Mapping[str, str], dest: Path) -> dict:
    """WEIGHTS_ROOT and KEEP_REVISIONS: where the revisions live and which ones stay (none: no pruning)."""
    raw_root = _get(env, "WEIGHTS_ROOT")
    raw_keep = _get(env, "KEEP_REVISIONS")
    if raw_root is None:
        if raw_keep is not None:
            raise UsageError("KEEP_REVISIONS goes with WEIGHTS_ROOT only")
        return {}
    root = Path(raw_root)
    if dest.parent != root / REVISIONS_DIR or not REVISION_NAME.match(dest.name):
        raise UsageError(f"MODEL_DEST must be WEIGHTS_ROOT/{REVISIONS_DIR}/<name> when WEIGHTS_ROOT is set, got {dest}")
    keep = frozenset(name.strip() for name in (raw_keep or "").split(",") if name.strip())
    bad = sorted(name for name in keep if not REVISION_NAME.match(name))
    if bad:
        raise UsageError(f"KEEP_REVISIONS names directories of {REVISIONS_DIR}/ (or {ROOT_REVISION}), got {bad[0]!r}")
    return {"root": root, "keep": keep}


def config_from_env(env: Mapping[str, str]) -> Config:
    """Build the Config from the Job's environment or raise UsageError with a one-line reason."""
    repo = _get(env, "HF_REPO")
    url = _get(env, "MODEL_URL")
    revision = _get(env, "HF_REVISION")
    sha256 = _get(env, "MODEL_SHA256")
    endpoint = _get(env, "HF_ENDPOINT")
    dest = Path(_get(env, "MODEL_DEST") or DEFAULT_DEST)
    settings = settings_from_env(env)
    revisions = revisions_from_env(env, dest)

    if repo and url:
        raise UsageError("set exactly one of HF_REPO and MODEL_URL, not both")
    if not repo and not url:
        raise UsageError("set exactly one of HF_REPO and MODEL_URL")
    if endpoint:
        _check_http_url("HF_ENDPOINT", endpoint)
        endpoint = endpoint.rstrip("/")

    if repo:
        if sha256:
            raise UsageError("MODEL_SHA256 goes with MODEL_URL only; a Hugging Face download is pinned by HF_REVISION")
        if not REPO_ID.match(repo) or ".." in repo or "--" in repo:
            raise UsageError(f"HF_REPO must look like owner/name, got {repo!r}")
        revision = revision or DEFAULT_REVISION
        return Config(
            dest=dest,
            source=hf_source(repo, revision),
            hf_repo=repo,
            hf_revision=revision,
            hf_token=_get(env, "HF_TOKEN"),
            hf_endpoint=endpoint,
            settings=settings,
            **revisions,
        )

    if revision:
        raise UsageError("HF_REVISION goes with HF_REPO only")
    if sha256 and not SHA256_HEX.match(sha256):
        raise UsageError("MODEL_SHA256 must be 64 hexadecimal characters")
    scheme = urlsplit(url).scheme.lower()
    if scheme not in URL_SCHEMES:
        raise UsageError(f"MODEL_URL scheme must be one of {', '.join(URL_SCHEMES)}, got {scheme or 'none'!r}")
    azure = azure_location(url, env) if is_azure_url(url) else None
    gcs = gcs_location(url, env) if scheme == "gs" and reads_json_api(env) else None
    s3 = s3_location(url, env) if scheme in KEY_SCHEMES and not azure and gcs is None else None
    store = s3 or gcs or azure
    if store and store.is_prefix and sha256:
        raise UsageError("MODEL_SHA256 goes with one object; the objects of a prefix are checked against the store's checksums")
    if not store:
        _check_http_url("MODEL_URL", url)
    try:
        fetch_url = s3.object_url(s3.key) if s3 else azure.object_url(azure.key) if azure else url
        label = azure.label if azure else prefix_label(store) if store else None
        file_name = label if store and store.is_prefix else file_name_for_url(url)
    except ValueError as exc:
        raise UsageError(f"MODEL_URL: {exc}") from None
    return Config(
        dest=dest,
        source=source_identity(url),
        url=url,
        fetch_url=fetch_url,
        file_name=file_name,
        sha256=sha256.lower() if sha256 else None,
        s3=s3,
        gcs=gcs,
        azure=azure,
        hf_token=_get(env, "HF_TOKEN"),
        hf_endpoint=endpoint,
        settings=settings,
        **revisions,
    )
