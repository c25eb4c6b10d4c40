"""No credential of a URL (its user info, its query string) ever leaves the puller except in the
requests it sends: not in a log line, the termination message, the manifest and staging files it
writes on the volume, nor the progress reports. Real HTTP servers on 127.0.0.1, the puller run as a
subprocess, as in test_url.py."""

import json
import socket
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

from llm_model_puller.progress import redact, scrub_urls
from llm_model_puller.sources import redact_url, source_identity, url_secrets
from puller_servers import FileServer, StatusServer
from puller_testkit import MANIFEST, MiB, payload, sha256

OBJECT = "/apis/inference.ai.example.com/v1alpha1/namespaces/models/llmmodels/tiny"
SA_TOKEN = "eyJhbGciOiJSUzI1NiJ9.service-account-token-value.c2lnbmF0dXJl"
SIGNED = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIASECRETCRED%2F20260301&X-Amz-Signature=SECRETSIG"
MARKERS = ("SECRET", quote("SECRET"))


@pytest.fixture
def files():
    with FileServer() as server:
        yield server


def with_user(url: str, userinfo: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{userinfo}@{rest}"


def volume_text(dest: Path) -> str:
    """Every name and every byte of text under MODEL_DEST but the weights themselves."""
    texts = []
    for path in sorted(dest.rglob("*")):
        texts.append(str(path.relative_to(dest)))
        if path.is_file() and path.suffix != ".gguf":
            texts.append(path.read_text(errors="replace"))
    return "\n".join(texts)


def assert_hidden(*texts: str) -> None:
    for text in texts:
        for form in (text, unquote(text)):
            for marker in MARKERS:
                assert marker not in form, text


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_signed_link_with_user_info_pulls_and_shows_neither(files, puller, dest, tmp_path):
    data = payload(MiB, seed=21)
    url = with_user(files.add("/models/m.gguf", data), "user:SECRETPW") + "?" + SIGNED
    token = tmp_path / "token"
    token.write_text(SA_TOKEN)
    with StatusServer(OBJECT, SA_TOKEN) as api:
        run = puller({"MODEL_URL": url, "MODEL_SHA256": sha256(data), "PULLER_STATUS_OBJECT": OBJECT,
                      "PULLER_KUBE_API_URL": api.url, "PULLER_KUBE_TOKEN_FILE": str(token), "PULLER_STATUS_SECONDS": "1"})
        patches = json.dumps(api.patches)

    assert run.returncode == 0, run.output
    assert (dest / "m.gguf").read_bytes() == data
    [get] = files.seen("GET", "/models/m.gguf")
    assert get.path == "/models/m.gguf?" + SIGNED  # the full URL still reaches the server
    assert api.patches, "no progress report"
    assert_hidden(run.stdout, run.stderr, run.termination, volume_text(dest), patches)
    record = json.loads(run.termination)
    assert record["source"] == files.url + "/models/m.gguf?<redacted>"
    manifest = json.loads((dest / MANIFEST).read_text())
    assert manifest["source"] == source_identity(url) and manifest["source"].startswith(files.url + "/models/m.gguf?query-sha256=")

    # The same link again finds its weights; another signature of the same file is another source.
    again = puller({"MODEL_URL": url})
    assert again.returncode == 0 and "already complete" in again.stdout, again.output
    other = puller({"MODEL_URL": url.replace("SECRETSIG", "SECRETSIG2")})
    assert other.returncode == 0 and "replacing it with" in other.stdout, other.output
    assert_hidden(again.output, other.output, volume_text(dest))


def test_a_url_read_from_a_secret_as_a_file_left_it_pulls_and_shows_nothing_of_it(files, puller, dest):
    """spec.source.urlSecret: the Job's MODEL_URL comes from the Secret (secretKeyRef), whose value a
    `kubectl create secret --from-file` leaves with its trailing newline; the URL without it is fetched
    and reported redacted, like any other."""
    data = payload(MiB // 4, seed=22)
    url = with_user(files.add("/models/s.gguf", data), "user:SECRETPW") + "?" + SIGNED
    run = puller({"MODEL_URL": url + "\n", "MODEL_SHA256": sha256(data)})

    assert run.returncode == 0, run.output
    [get] = files.seen("GET", "/models/s.gguf")
    assert get.path == "/models/s.gguf?" + SIGNED
    assert json.loads(run.termination)["source"] == files.url + "/models/s.gguf?<redacted>"
    assert_hidden(run.stdout, run.stderr, run.termination, volume_text(dest))


@pytest.mark.parametrize("status, code, label", [(404, 4, "not found"), (403, 3, "access refused"), (500, 7, "network failure")])
def test_failures_name_the_url_without_its_credentials(files, puller, status, code, label):
    url = files.add("/m.gguf", b"x")
    files.fail("/m.gguf", status, times=10)
    run = puller({"MODEL_URL": with_user(url, "SECRETUSER:SECRETPW") + "?" + SIGNED, "PULLER_MAX_RETRIES": "1"})

    assert run.returncode == code, run.output
    assert run.termination.startswith(f"{label}: ") and f"{url}?<redacted>" in run.termination
    assert_hidden(run.output, run.termination)


def test_a_checksum_mismatch_names_the_url_without_its_credentials(files, puller):
    url = files.add("/m.gguf", b"weights")
    run = puller({"MODEL_URL": with_user(url, "SECRETTOKEN") + "?" + SIGNED, "MODEL_SHA256": sha256(b"other")})

    assert run.returncode == 5, run.output
    assert run.termination.startswith("checksum mismatch: m.gguf from " + url + "?<redacted>")
    assert_hidden(run.output, run.termination)


def test_connection_errors_and_retries_show_no_query(puller):
    url = f"http://user:SECRETPW@127.0.0.1:{closed_port()}/m.gguf?{SIGNED}"
    run = puller({"MODEL_URL": url, "PULLER_MAX_RETRIES": "2"})

    assert run.returncode == 7, run.output
    assert "retry 2/2" in run.stdout and "ConnectionError" in run.termination
    assert_hidden(run.output, run.termination)


def test_a_redirect_to_a_signed_link_does_not_show_the_link(files, puller):
    # A Hub or an object store answers with a short-lived signed link the puller never saw before.
    url = files.add("/m.gguf", b"x")
    files.redirects["/m.gguf"] = f"http://127.0.0.1:{closed_port()}/cdn/m.gguf?{SIGNED}"
    run = puller({"MODEL_URL": url, "PULLER_MAX_RETRIES": "1"})

    assert run.returncode == 7, run.output
    assert "/cdn/m.gguf?<redacted>" in run.termination
    assert_hidden(run.output, run.termination)


def test_a_url_that_cannot_be_parsed_fails_without_its_credentials(puller):
    run = puller({"MODEL_URL": f"http://user:SECRETPW@127.0.0.1:notaport/m.gguf?{SIGNED}"})

    assert run.returncode != 0 and run.termination, run.output
    assert_hidden(run.output, run.termination)


def test_an_s3_key_with_a_query_is_not_shown(files, puller):
    run = puller({"MODEL_URL": f"s3://bucket/m.gguf?{SIGNED}", "AWS_ENDPOINT_URL": files.url})

    assert run.returncode == 4, run.output
    assert_hidden(run.output, run.termination)
    assert files.seen("GET")[0].path == "/bucket/m.gguf" + quote("?" + SIGNED, safe="/~")  # still fetched as the key


def test_endpoints_with_credentials_are_not_shown(files, puller):
    run = puller({"MODEL_URL": "s3://bucket/m.gguf", "AWS_ENDPOINT_URL": with_user(files.url, "minio:SECRETPW")})
    assert run.returncode == 4, run.output
    assert_hidden(run.output, run.termination)

    bad = puller({"HF_REPO": "acme/tiny", "HF_ENDPOINT": "ftp://user:SECRETPW@hub.local/?token=SECRET"})
    assert bad.returncode == 2, bad.output
    assert_hidden(bad.output, bad.termination)


# --- the pure helpers ---------------------------------------------------------------------------

@pytest.mark.parametrize("url, shown", [
    ("https://user:pw@h:8443/p/m.gguf?X-Amz-Signature=abc#f", "https://h:8443/p/m.gguf?<redacted>"),
    ("http://h/m.gguf", "http://h/m.gguf"),
    ("https://u:p@[2001:db8::1]:8443/m.gguf?sig=x", "https://[2001:db8::1]:8443/m.gguf?<redacted>"),
    ("https://u:p@ss@Host.Example/a@b/m.gguf", "https://Host.Example/a@b/m.gguf"),
    ("https://h?sig=x", "https://h?<redacted>"),
    ("https://bücher.example/ß.gguf?tök=x", "https://bücher.example/ß.gguf?<redacted>"),
    ("s3://bucket/odd#key.gguf", "s3://bucket/odd#key.gguf"),
    ("s3://bucket/k?x=1", "s3://bucket/k?<redacted>"),
    ("http://h:notaport/m?x", "http://h:notaport/m?<redacted>"),
])
def test_redact_url(url, shown):
    assert redact_url(url) == shown


def test_source_identity_keeps_plain_urls_and_tells_queries_apart():
    assert source_identity("https://h/m.gguf") == "https://h/m.gguf"
    assert source_identity("s3://b/a#1") != source_identity("s3://b/a#2")
    one, two = source_identity("https://h/m?sig=1"), source_identity("https://h/m?sig=2")
    assert one != two and one.startswith("https://h/m?query-sha256=") and "sig" not in one
    assert source_identity("https://u:p@h/m.gguf#f") == "https://h/m.gguf"


def test_url_secrets_cover_user_info_query_and_their_encodings():
    found = url_secrets("https://user:p%40ss@h/m?X-Amz-Signature=abc%2Bdef&X-Amz-Expires=900&a=b c")
    for expected in ("user:p%40ss", "p%40ss", "p@ss", "X-Amz-Signature=abc%2Bdef&X-Amz-Expires=900&a=b c",
                     "X-Amz-Signature=abc%2Bdef&X-Amz-Expires=900&a=b%20c", "abc%2Bdef", "abc+def"):
        assert expected in found
    assert "900" not in found and "b" not in found  # short values would wreck every log line
    assert url_secrets("https://TOKENONLY@h/m") == ["TOKENONLY"]
    assert url_secrets("https://h/m") == [] and url_secrets("") == []


@pytest.mark.parametrize("text, expected", [
    ("HTTPConnectionPool(host='h', port=80): Max retries exceeded with url: /m.gguf?X-Amz-Signature=abc (Caused by x)",
     "HTTPConnectionPool(host='h', port=80): Max retries exceeded with url: /m.gguf?<redacted> (Caused by x)"),
    ("404 Client Error for url: https://cdn.example/r/m?Expires=1&Signature=abc", "404 Client Error for url: https://cdn.example/r/m?<redacted>"),
    ("fetching 'https://u:pw@h/m.gguf'", "fetching 'https://h/m.gguf'"),
    ("see https://u:p@ss@h/x and http://other/", "see https://h/x and http://other/"),
    ("is MODEL_DEST writable? no", "is MODEL_DEST writable? no"),
    ("progress m.gguf: 3.0 MiB / 3.0 MiB (100.0%)", "progress m.gguf: 3.0 MiB / 3.0 MiB (100.0%)"),
    ("hf://acme/tiny@main and acme/tiny@main", "hf://acme/tiny@main and acme/tiny@main"),
])
def test_scrub_urls(text, expected):
    assert scrub_urls(text) == expected
    assert redact(text, []) == expected
