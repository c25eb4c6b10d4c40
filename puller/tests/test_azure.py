"""az:// sources against a real Blob service that checks Shared Key and SAS signatures (Azurite on
127.0.0.1, azure_server.py), the puller run as a subprocess: one blob, a folder with its layout, the
blob https form, parts, resume, Content-MD5, the errors."""

import json
import signal
from datetime import datetime, timedelta, timezone

import pytest

from azure_server import ACCOUNT, KEY, WRONG_KEY, AzureServer
from puller_testkit import MANIFEST, SRC, STAGING, MiB, payload, sha256
from s3_server import free_port
from test_s3 import HEADERS_SLACK, parts_done, run_counted, slow_pull

EXIT_USAGE, EXIT_AUTH, EXIT_NOT_FOUND, EXIT_CHECKSUM, EXIT_NETWORK = 2, 3, 4, 5, 7
CONTAINER = "models"
SINGLE = "tiny/tiny.Q4_K_M.gguf"
FOLDER = {  # a multi-file model folder, generated
    "config.json": b'{"model_type": "llama"}\n',
    "model-00001-of-00002.safetensors": payload(3 * MiB, seed=41),
    "model-00002-of-00002.safetensors": payload(2 * MiB + 17, seed=42),
    "tokenizer/tokenizer.json": payload(300_000, seed=43),
}


@pytest.fixture(scope="module")
def azure(tmp_path_factory):
    with AzureServer(tmp_path_factory.mktemp("azure")) as server:
        server.create_container(CONTAINER)
        server.put(CONTAINER, SINGLE, payload(2 * MiB, seed=40))
        for path, data in FOLDER.items():
            server.put(CONTAINER, f"llama/{path}", data)
        server.put(CONTAINER, "llama-other/config.json", b"{}")  # shares the prefix's first letters only
        yield server


def sas_env(azure, sas: str, endpoint: str | None = None) -> dict[str, str]:
    """A Secret with a SAS: the connection string's SharedAccessSignature and BlobEndpoint."""
    return {"AZURE_STORAGE_CONNECTION_STRING": f"BlobEndpoint={endpoint or azure.endpoint};SharedAccessSignature={sas}"}


def manifest(dest):
    return json.loads((dest / MANIFEST).read_text())


def secrets_of(*texts: str) -> list[str]:
    """The credentials a run must never show: the account key and every SAS signature."""
    found = [KEY, WRONG_KEY]
    for text in texts:
        found += [part.partition("=")[2] for part in text.split("&") if part.startswith("sig=")]
    return found


def assert_no_credential(run, *sas: str):
    for text in (run.stdout, run.stderr, run.termination or ""):
        for secret in secrets_of(*sas):
            assert secret not in text
            assert secret.replace("+", "%2B").replace("/", "%2F").replace("=", "%3D") not in text


def test_one_private_blob_is_signed_with_the_key_and_checked_against_its_md5(azure, puller, dest):
    data = payload(2 * MiB, seed=40)

    run = puller({**azure.env(), "MODEL_URL": f"az://{CONTAINER}/{SINGLE}", "MODEL_SHA256": sha256(data)})

    assert run.returncode == 0, run.output
    assert (dest / "tiny.Q4_K_M.gguf").read_bytes() == data
    assert f"sha256 {sha256(data)} verified" in run.stdout
    assert "Shared Key from AZURE_STORAGE_CONNECTION_STRING (account key)" in run.stdout
    recorded = manifest(dest)
    assert recorded["kind"] == "azure" and recorded["source"] == f"az://{CONTAINER}/{SINGLE}"
    assert recorded["objects"][0]["md5"] and recorded["objects"][0]["etag"].startswith('"0x')
    assert json.loads(run.termination)["gguf"] == "tiny.Q4_K_M.gguf"
    assert_no_credential(run)


def test_a_folder_read_with_a_sas_keeps_its_layout_and_a_second_pull_transfers_nothing(azure, puller, dest):
    sas = azure.container_sas(CONTAINER, "rl")
    run = puller({**sas_env(azure, sas), "MODEL_URL": f"az://{CONTAINER}/llama/", "PULLER_S3_MAX_WORKERS": "3"})

    assert run.returncode == 0, run.output
    for path, data in FOLDER.items():
        assert (dest / path).read_bytes() == data, path
    assert sorted(p.name for p in dest.iterdir()) == sorted(
        [MANIFEST, "config.json", "tokenizer", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    )
    recorded = manifest(dest)
    assert recorded["kind"] == "azure-prefix"
    assert [(o["key"], o["path"], o["sha256"]) for o in recorded["objects"]] == [
        (f"llama/{path}", path, sha256(data)) for path, data in sorted(FOLDER.items())
    ]
    assert "SAS from AZURE_STORAGE_CONNECTION_STRING (SAS)" in run.stdout
    assert "4 objects, 5.3 MiB; 0 already here, 4 to fetch, 3 at a time" in run.stdout
    assert not any(secret in (dest / MANIFEST).read_text() for secret in secrets_of(sas))
    assert_no_credential(run, sas)

    # The same source again: complete without a request (the endpoint now points nowhere).
    nowhere = f"http://127.0.0.1:{free_port()}/{ACCOUNT}"
    again = puller({**sas_env(azure, sas, nowhere), "MODEL_URL": f"az://{CONTAINER}/llama/"})
    assert again.returncode == 0, again.output
    assert "is already complete" in again.stdout


def test_an_interrupted_folder_keeps_the_blobs_it_finished_by_etag(azure, puller, dest):
    """A blob failing its Content-MD5 stops the pull; the next run fetches it alone, the others kept by ETag."""
    azure.create_container("checked")
    for path, data in FOLDER.items():
        azure.put("checked", f"m/{path}", data)
    good = FOLDER["tokenizer/tokenizer.json"]  # the last in the listing's order: the three before it finish
    azure.request("PUT", "/checked/m/tokenizer/tokenizer.json?comp=properties", b"",
                  {"x-ms-blob-content-md5": "AAAAAAAAAAAAAAAAAAAAAA=="})  # a stored MD5 the bytes do not have

    bad = puller({**azure.env(), "MODEL_URL": "az://checked/m/", "PULLER_S3_MAX_WORKERS": "1"})

    assert bad.returncode == EXIT_CHECKSUM, bad.output
    assert bad.termination.startswith("checksum mismatch: az://checked/m/tokenizer/tokenizer.json has md5 ")
    assert "but the store's Content-MD5 says 00000000000000000000000000000000" in bad.termination
    assert not (dest / MANIFEST).exists()

    azure.put("checked", "m/tokenizer/tokenizer.json", good)  # put again: a new ETag, the right MD5
    fixed = puller({**azure.env(), "MODEL_URL": "az://checked/m/"})
    assert fixed.returncode == 0, fixed.output
    assert "4 objects, 5.3 MiB; 3 already here, 1 to fetch" in fixed.stdout
    for path, data in FOLDER.items():
        assert (dest / path).read_bytes() == data, path


def test_a_blob_without_md5_is_recorded_by_its_sha256(azure, puller, dest):
    data = payload(100_000, seed=44)
    azure.put(CONTAINER, "nomd5/weights.bin", data, md5=False)

    run = puller({**azure.env(), "MODEL_URL": f"az://{CONTAINER}/nomd5/weights.bin"})

    assert run.returncode == 0, run.output
    assert f"sha256 {sha256(data)} (no MODEL_SHA256 or store checksum to compare with)" in run.stdout
    assert "md5" not in manifest(dest)["objects"][0]


def test_the_blob_https_form_names_the_account_and_takes_a_sas_in_its_query(azure, puller, dest):
    """https://<account>.blob.core.windows.net/<container>/<blob>?<SAS>: the connection string says where
    the account's blobs are (Azurite here); the URL's SAS is the credential, never shown."""
    data = payload(2 * MiB, seed=40)
    sas = azure.container_sas(CONTAINER, "r")
    url = f"https://{ACCOUNT}.blob.core.windows.net/{CONTAINER}/{SINGLE}?{sas}"
    endpoint_only = {"AZURE_STORAGE_CONNECTION_STRING": f"BlobEndpoint={azure.endpoint};SharedAccessSignature=sig=x"}

    run = puller({**endpoint_only, "MODEL_URL": url})

    assert run.returncode == 0, run.output
    assert (dest / "tiny.Q4_K_M.gguf").read_bytes() == data
    assert "SAS from the URL's SAS token" in run.stdout
    record = json.loads(run.termination)
    assert record["source"] == f"https://{ACCOUNT}.blob.core.windows.net/{CONTAINER}/{SINGLE}?<redacted>"
    assert_no_credential(run, sas)


def test_a_large_blob_comes_in_parallel_parts_checked_against_its_md5(azure, puller, dest):
    data = payload(5 * MiB + 123, seed=45)
    azure.put(CONTAINER, "parts/model.gguf", data)

    run = puller({**azure.env(), "MODEL_URL": f"az://{CONTAINER}/parts/model.gguf", "PULLER_S3_PART_MIB": "1",
                  "PULLER_S3_MAX_WORKERS": "3"})

    assert run.returncode == 0, run.output
    assert "az://models/parts/model.gguf: 5.0 MiB in 6 parts of 1.0 MiB, 3 at a time" in run.stdout
    assert f"sha256 {sha256(data)} verified" in run.stdout
    assert (dest / "model.gguf").read_bytes() == data

    azure.put(CONTAINER, "parts/rotten.gguf", data)
    azure.request("PUT", "/models/parts/rotten.gguf?comp=properties", b"",
                  {"x-ms-blob-content-md5": "AAAAAAAAAAAAAAAAAAAAAA=="})
    rotten = puller({**azure.env(), "MODEL_URL": f"az://{CONTAINER}/parts/rotten.gguf", "PULLER_S3_PART_MIB": "1",
                     "MODEL_DEST": str(dest / "other")})
    assert rotten.returncode == EXIT_CHECKSUM, rotten.output
    assert "the store's Content-MD5 says 00000000000000000000000000000000" in rotten.termination


def through(azure):
    """What points the puller at a proxy in front of Azurite: the connection string's BlobEndpoint."""
    return lambda proxy_url: {"AZURE_STORAGE_CONNECTION_STRING": azure.connection_string().replace(
        azure.endpoint, f"{proxy_url}/{ACCOUNT}")}


def direct_env(dest, url: str, **extra: str) -> dict[str, str]:
    return {"MODEL_URL": url, "MODEL_DEST": str(dest), "PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin",
            "PULLER_BACKOFF_SECONDS": "0.01", **extra}


def test_a_killed_parted_pull_fetches_only_the_missing_parts(azure, dest):
    data = payload(12 * MiB, seed=46)
    key = "parts/killed.gguf"
    azure.put(CONTAINER, key, data)
    env = direct_env(dest, f"az://{CONTAINER}/{key}", PULLER_S3_PART_MIB="1", PULLER_S3_MAX_WORKERS="2")
    with slow_pull(azure, env, lambda: parts_done(dest, key) >= 3, through(azure)) as pull:
        pull.send_signal(signal.SIGKILL)
        pull.communicate(timeout=10)
    kept = parts_done(dest, key)
    assert 3 <= kept < 12

    done, proxy = run_counted(azure, env, through(azure))

    assert done.returncode == 0, done.stdout + done.stderr
    assert (dest / "killed.gguf").read_bytes() == data
    assert f"resuming killed.gguf: {kept} of 12 parts here ({kept:.1f} MiB)" in done.stdout
    missing = (12 - kept) * MiB
    assert missing <= proxy.served < missing + HEADERS_SLACK


def killed_midway(azure, env, partial) -> int:
    """SIGKILL a slowed pull once partial holds 2 MiB; the bytes it kept."""
    with slow_pull(azure, env, lambda: partial.exists() and partial.stat().st_size >= 2 * MiB, through(azure)) as pull:
        pull.send_signal(signal.SIGKILL)
        pull.communicate(timeout=10)
    return partial.stat().st_size


def test_a_killed_pull_resumes_a_folder_blob_by_range(azure, dest):
    data = payload(12 * MiB, seed=47)
    azure.put(CONTAINER, "big/weights.safetensors", data)
    env = direct_env(dest, f"az://{CONTAINER}/big/")
    kept = killed_midway(azure, env, dest / STAGING / "files" / "weights.safetensors")
    assert 2 * MiB <= kept < len(data)

    done, proxy = run_counted(azure, env, through(azure))

    assert done.returncode == 0, done.stdout + done.stderr
    assert (dest / "weights.safetensors").read_bytes() == data
    assert f"resuming weights.safetensors at {kept / MiB:.1f} MiB" in done.stdout
    assert len(data) - kept <= proxy.served < len(data) - kept + HEADERS_SLACK


def test_a_blob_replaced_after_a_kill_is_fetched_again_whole(azure, dest):
    """The resume asks If-Match the ETag begun: a blob put again since answers 412 and comes whole."""
    first, second = payload(12 * MiB, seed=48), payload(12 * MiB, seed=49)
    azure.put(CONTAINER, "swap/weights.safetensors", first)
    env = direct_env(dest, f"az://{CONTAINER}/swap/")
    killed_midway(azure, env, dest / STAGING / "files" / "weights.safetensors")
    azure.put(CONTAINER, "swap/weights.safetensors", second)

    done, _ = run_counted(azure, env, through(azure))

    assert done.returncode == 0, done.stdout + done.stderr
    assert (dest / "weights.safetensors").read_bytes() == second
    assert "changed since the partial download; restarting from zero" in done.stdout


def expired_sas(azure):
    return azure.container_sas(CONTAINER, "rl", expiry=datetime.now(timezone.utc) - timedelta(hours=1))


@pytest.mark.parametrize(
    "env, url, code, message",
    [
        (lambda a: a.env(WRONG_KEY), f"az://{CONTAINER}/{SINGLE}", EXIT_AUTH,
         "access refused: the storage account refused the Shared Key request for az://models/tiny/tiny.Q4_K_M.gguf "
         "(AuthorizationFailure): AZURE_STORAGE_KEY is not a key of the account"),
        (lambda a: sas_env(a, a.container_sas(CONTAINER, "rl", key=WRONG_KEY)), f"az://{CONTAINER}/llama/", EXIT_AUTH,
         "access refused: the storage account refused the SAS for az://models/llama/ (AuthorizationFailure): the "
         "token is not signed by a key of this account"),
        (lambda a: sas_env(a, expired_sas(a)), f"az://{CONTAINER}/{SINGLE}", EXIT_AUTH,
         "access refused: the SAS token for az://models/tiny/tiny.Q4_K_M.gguf expired at "),
        (lambda a: sas_env(a, a.container_sas(CONTAINER, "r")), f"az://{CONTAINER}/llama/", EXIT_AUTH,
         "access refused: the SAS does not permit reading az://models/llama/ (AuthorizationPermissionMismatch)"),
        (lambda a: a.env(), "az://no-such-container/llama/", EXIT_NOT_FOUND,
         "not found: no such container for az://no-such-container/llama/ in storage account modelstore "
         "(ContainerNotFound)"),
        (lambda a: a.env(), f"az://{CONTAINER}/tiny/missing.gguf", EXIT_NOT_FOUND,
         "not found: no such blob az://models/tiny/missing.gguf (BlobNotFound)"),
        (lambda a: a.env(), f"az://{CONTAINER}/empty/", EXIT_NOT_FOUND,
         "not found: no blob under az://models/empty/ in storage account modelstore"),
        (lambda a: {**a.env(), "MODEL_SHA256": "0" * 64}, f"az://{CONTAINER}/llama/", EXIT_USAGE,
         "configuration error: MODEL_SHA256 goes with one object"),
        (lambda a: {}, f"az://{CONTAINER}/{SINGLE}", EXIT_USAGE,
         "configuration error: an az:// URL takes the storage account from the environment: set AZURE_STORAGE_ACCOUNT "
         "with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or AZURE_STORAGE_CONNECTION_STRING"),
        (lambda a: {"AZURE_STORAGE_KEY": KEY}, f"az://{CONTAINER}/{SINGLE}", EXIT_USAGE,
         "configuration error: AZURE_STORAGE_KEY needs AZURE_STORAGE_ACCOUNT"),
        (lambda a: {**a.env(), "AZURE_STORAGE_CONNECTION_STRING": f"AccountName={ACCOUNT};AccountKey=not base64!"},
         f"az://{CONTAINER}/{SINGLE}", EXIT_USAGE,
         "configuration error: the AccountKey of AZURE_STORAGE_CONNECTION_STRING must be the storage account's key"),
    ],
    ids=["wrong-key", "sas-of-another-key", "expired-sas", "sas-without-list", "no-container", "no-blob",
         "empty-prefix", "sha256-with-prefix", "no-account", "key-without-account", "key-not-base64"],
)
def test_errors_say_what_to_fix_once(azure, puller, env, url, code, message):
    given = env(azure)
    run = puller({**given, "MODEL_URL": url, "PULLER_MAX_RETRIES": "3"})

    assert run.returncode == code, run.output
    assert run.termination.startswith(message), run.termination
    assert "retry" not in run.stdout  # said once, no retry loop
    assert_no_credential(run, *given.values())


def test_an_endpoint_that_does_not_answer(azure, puller):
    port = free_port()
    env = {"AZURE_STORAGE_CONNECTION_STRING": azure.connection_string().replace(
        azure.endpoint, f"http://127.0.0.1:{port}/{ACCOUNT}")}
    run = puller({**env, "MODEL_URL": f"az://{CONTAINER}/llama/", "PULLER_MAX_RETRIES": "1"})

    assert run.returncode == EXIT_NETWORK, run.output
    assert run.termination.startswith("network failure: az://models/llama/: gave up after 2 attempts")
    assert f"the storage account's blob endpoint 127.0.0.1:{port} does not answer (ConnectionError)" in run.termination
    assert_no_credential(run)


def test_an_empty_blob_is_pulled(azure, puller, dest):
    azure.put(CONTAINER, "tiny/empty.txt", b"")

    run = puller({**azure.env(), "MODEL_URL": f"az://{CONTAINER}/tiny/empty.txt"})

    assert run.returncode == 0, run.output
    assert (dest / "empty.txt").read_bytes() == b""
