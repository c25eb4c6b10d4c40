"""A Hugging Face repo snapshot, filtered to what an inference server reads.

huggingface_hub reads its environment when imported: cli.prepare_hf_environment() runs before this
module is imported.
"""

import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import httpx2
from huggingface_hub import HfApi, snapshot_download
from huggingface_hub.errors import (
    FileMetadataError,
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.hf_api import RepoFile
from huggingface_hub.utils import filter_repo_objects

from . import __version__
from .config import Config
from .errors import AuthError, DiskFullError, NotFoundError, PullerError, TransientError
from .progress import Progress, human_bytes, log
from .retry import with_retries
from .store import Staging

# What vLLM, TGI, SGLang and llama.cpp read: configs, tokenizers, chat templates, remote code, weights.
# Left out: README/LICENSE/*.md, .gitattributes, images, other frameworks' weights (*.h5, *.msgpack,
# *.onnx, *.ot), consolidated *.pth checkpoints (Meta's original/ folders).
SERVER_PATTERNS = [
    "*.json",
    "*.safetensors",
    "*.gguf",
    "*.model",
    "*.tiktoken",
    "*.jinja",
    "*.py",
    "tokenizer*",
    "*merges.txt",
    "*vocab.txt",
]
# The puller's own names in MODEL_DEST; a repo file must not pose as the manifest.
RESERVED_PATTERNS = [".llm-model-puller*"]
# Only for repos without safetensors: the old PyTorch pickles are the weights then.
FALLBACK_WEIGHT_PATTERNS = ["*.bin", "*.pt"]
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
POLL_SECONDS = 1.0

T = TypeVar("T")


def allow_patterns(paths: list[str]) -> list[str]:
    if any(path.endswith(".safetensors") for path in paths):
        return list(SERVER_PATTERNS)
    return SERVER_PATTERNS + FALLBACK_WEIGHT_PATTERNS


def pull_hf(cfg: Config, staging: Staging, progress: Progress) -> tuple[list[str], dict]:
    """Download the filtered snapshot into staging; return its top-level names and the manifest details."""
    repo, revision, settings = cfg.hf_repo, cfg.hf_revision, cfg.settings
    token = cfg.hf_token or False  # False: never look for a token file or another variable
    api = HfApi(endpoint=cfg.hf_endpoint, token=token, library_name="llm-model-puller", library_version=__version__)

    def resolve() -> tuple[str, list[RepoFile]]:
        info = api.model_info(repo, revision=revision)
        tree = api.list_repo_tree(repo, recursive=True, revision=info.sha)
        return info.sha, [entry for entry in tree if isinstance(entry, RepoFile)]

    commit, entries = with_retries(
        lambda: translated(resolve, cfg), settings, progress_marker=lambda: 0, what=f"listing {cfg.source}"
    )
    sizes = {entry.path: entry.size for entry in entries}
    patterns = allow_patterns(list(sizes))
    selected = sorted(filter_repo_objects(list(sizes), allow_patterns=patterns, ignore_patterns=RESERVED_PATTERNS))
    if not selected:
        raise NotFoundError(f"{repo}@{commit} has no file an inference server reads ({', '.join(patterns)})")
    total = sum(sizes[path] for path in selected)
    log.info(
        "%s is commit %s: %d of %d files selected, %s",
        cfg.source,
        commit,
        len(selected),
        len(sizes),
        human_bytes(total),
    )

    on_disk = staging.used_bytes()
    free = shutil.disk_usage(staging.files).free
    if total - on_disk > free:
        raise DiskFullError(
            f"{repo} needs {human_bytes(total - on_disk)} more but MODEL_DEST has {human_bytes(free)} free"
        )
    progress.begin(on_disk, total)

    def download() -> None:
        snapshot_download(
            repo,
            revision=commit,
            local_dir=staging.files,
            cache_dir=staging.hf_home / "hub",
            allow_patterns=patterns,
            ignore_patterns=RESERVED_PATTERNS,
            token=token,
            endpoint=cfg.hf_endpoint,
            max_workers=settings.hf_max_workers,
            library_name="llm-model-puller",
            library_version=__version__,
        )

    with polling(lambda: progress.set_done(staging.used_bytes())):
        with_retries(lambda: translated(download, cfg), settings, progress_marker=staging.used_bytes, what=cfg.source)
    progress.set_done(staging.used_bytes())

    for path in selected:
        local = staging.files / path
        if not local.is_file() or local.stat().st_size != sizes[path]:
            raise PullerError(f"{path} is missing or has the wrong size after the download of {cfg.source}")
    names = sorted({path.split("/", 1)[0] for path in selected})
    details = {"kind": "huggingface", "repo": repo, "revision": revision, "commit": commit, "allow_patterns": patterns}
    return names, details


def translated(call: Callable[[], T], cfg: Config) -> T:
    """Run call(), turning huggingface_hub's and httpx2's exceptions into the puller's failure classes."""
    try:
        return call()
    except Exception as exc:
        mapped = classify(exc, cfg)
        if mapped is exc:
            raise
        raise mapped from exc


def classify(exc: Exception, cfg: Config) -> Exception:
    repo, revision = cfg.hf_repo, cfg.hf_revision
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    token_hint = "the token was refused" if cfg.hf_token else "no HF_TOKEN was given"
    if _in_chain(exc, FileMetadataError):
        return PullerError(f"the endpoint does not answer like the Hugging Face Hub: {_first_line(exc)}")
    if isinstance(exc, GatedRepoError):
        return AuthError(
            f"{repo} is gated (HTTP {status}): accept its conditions on the Hub with an account whose token "
            f"is in the credentialsSecret; {token_hint}"
        )
    if isinstance(exc, RevisionNotFoundError):
        return NotFoundError(f"revision {revision!r} not found in {repo} (HTTP {status})")
    if isinstance(exc, RemoteEntryNotFoundError):
        return NotFoundError(f"a file of {repo}@{revision} disappeared (HTTP {status}): {_first_line(exc)}")
    if isinstance(exc, HfHubHTTPError):
        if status in (401, 403):
            kind = (
                "repository not found or access refused"
                if isinstance(exc, RepositoryNotFoundError)
                else "access refused"
            )
            return AuthError(f"{repo}: {kind} (HTTP {status}); {token_hint}")
        if status in (404, 410):
            what = "repository not found" if isinstance(exc, RepositoryNotFoundError) else "not found"
            return NotFoundError(f"{repo}: {what} (HTTP {status})")
        if status in TRANSIENT_STATUSES:
            return TransientError(f"HTTP {status} from the Hub")
        return PullerError(f"{repo}: unexpected HTTP {status}: {_first_line(exc)}")
    if isinstance(exc, (httpx2.TransportError, LocalEntryNotFoundError)):
        cause = _transport_cause(exc)
        return TransientError(f"{type(cause).__name__}: {_first_line(cause)}")
    if isinstance(exc, OSError) and "Consistency check failed" in str(exc):
        return TransientError(_first_line(exc))
    return exc


def _in_chain(exc: BaseException, kind: type) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _transport_cause(exc: BaseException) -> BaseException:
    current: BaseException = exc
    while current.__cause__ is not None and not isinstance(current, httpx2.TransportError):
        current = current.__cause__
    return current


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@contextmanager
def polling(tick: Callable[[], None], every: float = POLL_SECONDS) -> Iterator[None]:
    """Call tick() every `every` seconds in a thread while the block runs."""
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(every):
            tick()

    thread = threading.Thread(target=run, name="progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
