"""The az:// and blob https forms, the credentials Azure's tools read, Shared Key's string to sign, and
the error answers Azurite does not give (the service's own words for them)."""

import base64
from datetime import datetime, timezone

import pytest

from llm_model_puller.azure_auth import sign, string_to_sign
from llm_model_puller.azure_errors import azure_error
from llm_model_puller.azure_source import AzureCredentials, azure_location, is_azure_url
from llm_model_puller.config import config_from_env, secrets_from_env
from llm_model_puller.errors import AuthError, NotFoundError, UsageError

KEY = base64.b64encode(b"k" * 64).decode()
NOW = datetime(2026, 12, 5, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "url, expected",
    [
        ("az://models/m.gguf", True),
        ("https://acct01.blob.core.windows.net/models/m.gguf", True),
        ("https://acct01.blob.core.chinacloudapi.cn/models/m.gguf", True),
        ("https://acct01.dfs.core.windows.net/models/m.gguf", False),
        ("https://example.com/acct01.blob.core.windows.net/m.gguf", False),
        ("s3://models/m.gguf", False),
    ],
)
def test_which_urls_are_azure_blobs(url, expected):
    assert is_azure_url(url) is expected


def test_an_az_url_takes_the_account_and_key_from_the_environment():
    location = azure_location("az://models/llama/", {"AZURE_STORAGE_ACCOUNT": "acct01", "AZURE_STORAGE_KEY": KEY})
    found = (location.account, location.container, location.key, location.is_prefix)
    assert found == ("acct01", "models", "llama/", True)
    assert location.endpoint == "https://acct01.blob.core.windows.net"
    assert location.object_url("llama/a b#c.json") == "https://acct01.blob.core.windows.net/models/llama/a%20b%23c.json"
    assert location.creds.key == b"k" * 64 and location.creds.sas is None
    assert "k" * 64 not in repr(location)


def test_the_key_comes_before_a_sas_and_a_connection_string_before_both():
    both = {"AZURE_STORAGE_ACCOUNT": "acct01", "AZURE_STORAGE_KEY": KEY, "AZURE_STORAGE_SAS_TOKEN": "?sv=1&sig=abc"}
    assert azure_location("az://models/m.gguf", both).creds.key
    sas_only = {"AZURE_STORAGE_ACCOUNT": "acct01", "AZURE_STORAGE_SAS_TOKEN": "?sv=1&sig=abc"}
    sas = azure_location("az://models/m.gguf", sas_only)
    assert sas.creds.sas == "sv=1&sig=abc"
    connection = f"AccountName=other02;AccountKey={KEY};EndpointSuffix=core.usgovcloudapi.net"
    location = azure_location("az://models/m.gguf", {**both, "AZURE_STORAGE_CONNECTION_STRING": connection})
    assert (location.account, location.endpoint) == ("other02", "https://other02.blob.core.usgovcloudapi.net")


def test_a_sas_connection_string_needs_no_account_name():
    for endpoint, account in [("http://127.0.0.1:10000/acct01", "acct01"),
                              ("https://acct01.privatelink.blob.core.windows.net", "acct01")]:
        env = {"AZURE_STORAGE_CONNECTION_STRING": f"BlobEndpoint={endpoint};SharedAccessSignature=sv=1&sig=abc"}
        location = azure_location("az://models/m.gguf", env)
        assert (location.account, location.endpoint, location.creds.sas) == (account, endpoint, "sv=1&sig=abc")


def test_the_https_form_names_the_account_and_its_query_is_a_sas():
    location = azure_location("https://acct01.blob.core.windows.net/models/dir/m%20x.gguf?sv=2022&sig=SIGNATURE", {})
    assert (location.account, location.container, location.key) == ("acct01", "models", "dir/m x.gguf")
    assert location.creds.sas == "sv=2022&sig=SIGNATURE"
    with pytest.raises(UsageError, match="names account acct01 but the credentials are of account other02"):
        azure_location("https://acct01.blob.core.windows.net/models/m.gguf",
                       {"AZURE_STORAGE_ACCOUNT": "other02", "AZURE_STORAGE_KEY": KEY})


@pytest.mark.parametrize(
    "url, env, message",
    [
        ("az://models/m.gguf", {}, "an az:// URL takes the storage account from the environment"),
        ("az://models/", {"AZURE_STORAGE_ACCOUNT": "acct01"}, "must name a container and a blob"),
        ("az://Models/m.gguf", {"AZURE_STORAGE_ACCOUNT": "acct01"}, "container 'Models' is not a valid name"),
        ("az://models/m.gguf", {"AZURE_STORAGE_ACCOUNT": "Acct_01"}, "3 to 24 lowercase letters and digits"),
        ("az://models/m.gguf", {"AZURE_STORAGE_ACCOUNT": "acct01", "AZURE_STORAGE_SAS_TOKEN": "sv=1"},
         "must be a SAS token"),
        ("az://models/m.gguf", {"AZURE_STORAGE_CONNECTION_STRING": "AccountName=acct01"},
         "neither AccountKey nor SharedAccessSignature"),
    ],
)
def test_malformed_sources_are_refused_with_what_to_fix(url, env, message):
    with pytest.raises(UsageError, match=message):
        azure_location(url, env)


def test_the_config_routes_blobs_to_azure_and_hides_their_credentials():
    env = {"MODEL_URL": "az://models/llama/", "AZURE_STORAGE_CONNECTION_STRING": f"AccountName=acct01;AccountKey={KEY}"}
    cfg = config_from_env(env)
    assert cfg.azure is not None and cfg.s3 is None and cfg.file_name == "llama"
    assert cfg.fetch_url == "https://acct01.blob.core.windows.net/models/llama/"
    assert env["AZURE_STORAGE_CONNECTION_STRING"] in secrets_from_env(env)
    signed = config_from_env({"MODEL_URL": "https://acct01.blob.core.windows.net/models/m.gguf?sv=1&sig=SECRETSIG"})
    assert signed.source == "https://acct01.blob.core.windows.net/models/m.gguf?query-sha256=" + signed.source[-16:]
    assert "SECRETSIG" not in signed.source


def test_shared_key_signs_the_standard_headers_the_x_ms_headers_and_the_resource():
    url = "http://127.0.0.1:10000/acct01/models?restype=container&comp=list&prefix=llama%2F"
    headers = sign("GET", url, "acct01", AzureCredentials(key=b"k" * 64), {"Range": "bytes=0-0"}, now=NOW)
    text = string_to_sign("GET", url, "acct01", {k: v for k, v in headers.items() if k != "Authorization"})
    assert text == (
        "GET\n\n\n\n\n\n\n\n\n\n\nbytes=0-0\n"
        "x-ms-date:Sat, 05 Dec 2026 12:00:00 GMT\nx-ms-version:2023-11-03\n"
        "/acct01/acct01/models\ncomp:list\nprefix:llama/\nrestype:container"
    )
    assert headers["Authorization"].startswith("SharedKey acct01:")
    assert "Authorization" not in sign("GET", url, "acct01", AzureCredentials(sas="sv=1&sig=x"), now=NOW)


@pytest.mark.parametrize(
    "status, code, detail, auth, kind, message",
    [
        (403, "AuthenticationFailed", "The MAC signature found in the HTTP request 'x' is not the same", "Shared Key",
         AuthError, "AZURE_STORAGE_KEY is not a key of AZURE_STORAGE_ACCOUNT"),
        (403, "AuthenticationFailed", "Signed expiry time [Thu, 01 Jan 2026] must be after signed start time", "SAS",
         AuthError, "is expired or not yet valid"),
        (403, "AuthenticationFailed", "Signature did not match", "SAS", AuthError, "rejected the SAS token"),
        (404, "ResourceNotFound", "", None, NotFoundError, "the request was anonymous because no Azure credentials"),
        (409, "PublicAccessNotPermitted", "", None, AuthError, "allows no anonymous access"),
    ],
)
def test_the_service_s_answers_read_as_what_to_fix(status, code, detail, auth, kind, message):
    body = f"<?xml version='1.0'?><Error><Code>{code}</Code><Message>m</Message>" \
           f"<AuthenticationErrorDetail>{detail}</AuthenticationErrorDetail></Error>".encode()
    error = azure_error(status, {}, body, "az://models/m.gguf", "acct01", auth, now=NOW)
    assert isinstance(error, kind) and message in str(error)
    assert "The MAC signature" not in str(error)


def test_a_head_s_error_code_header_is_enough():
    error = azure_error(404, {"x-ms-error-code": "BlobNotFound"}, b"", "az://models/m.gguf", "acct01", "Shared Key")
    assert isinstance(error, NotFoundError) and "(BlobNotFound)" in str(error)
