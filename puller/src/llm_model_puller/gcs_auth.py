"""OAuth2 access tokens for the Cloud Storage JSON API, found as Google's SDKs find them.

  1. GOOGLE_APPLICATION_CREDENTIALS: the path of a service-account key file (JSON). A JWT naming the
     account, signed RS256 with the key's private key, is exchanged at the key file's token_uri
     (the OAuth 2.0 JWT bearer grant, RFC 7523);
  2. the GKE metadata server (workload identity; on a plain VM the instance's service account):
     GCE_METADATA_HOST, else metadata.google.internal, with `Metadata-Flavor: Google`;
  3. none: anonymous requests (public objects).
A token is asked again five minutes before it expires, so a pull longer than its hour goes on. Every
secret learnt on the way (the private key, the signed JWT, each token) is registered with the log
redaction before it is used. RS256 is `cryptography`'s, imported only when a key file is read
(docs/design.md, "Cloud Storage": chosen by size, start time and upkeep).
"""

import base64
import json
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import requests

from .errors import AuthError, TransientError, UsageError
from .progress import register_secret

SCOPE = "https://www.googleapis.com/auth/devstorage.read_only"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
DEFAULT_TOKEN_URI = "https://oauth2.googleapis.com/token"
METADATA_HOST = "metadata.google.internal"
METADATA_TOKEN = "/computeMetadata/v1/instance/service-accounts/default/token"
METADATA_EMAIL = "/computeMetadata/v1/instance/service-accounts/default/email"
METADATA_TIMEOUT = 3.0  # google-auth's: a machine without a metadata server must not wait long
REFRESH_MARGIN = 300  # seconds before expiry when a token is asked again
JWT_LIFETIME = 3600
KEY_FILE_FIELDS = ("client_email", "private_key")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


class TokenSource:
    """Where the access token comes from; token() gives a current one (None: anonymous requests)."""

    identity = "anonymous requests (no Google credentials found)"

    def __init__(self, timeout: float):
        self.timeout = timeout
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires = 0.0

    def token(self) -> str | None:
        with self._lock:
            if self._token is None or time.monotonic() > self._expires - REFRESH_MARGIN:
                token, lifetime = self._fetch()
                if token is None:
                    return None
                register_secret(token)
                self._token, self._expires = token, time.monotonic() + lifetime
            return self._token

    def _fetch(self) -> tuple[str | None, float]:
        return None, 0.0

    def headers(self) -> dict[str, str]:
        token = self.token()
        return {"Authorization": f"Bearer {token}"} if token else {}

    @property
    def anonymous(self) -> bool:
        return type(self) is TokenSource


class KeyFileTokens(TokenSource):
    """A service-account key file: a signed JWT exchanged at its token_uri."""

    def __init__(self, path: str, timeout: float):
        super().__init__(timeout)
        info = read_key_file(path)
        self.email = info["client_email"]
        self.token_uri = info.get("token_uri") or DEFAULT_TOKEN_URI
        self.key_id = info.get("private_key_id")
        self.identity = f"service account {self.email} (key file GOOGLE_APPLICATION_CREDENTIALS)"
        self._signer = load_private_key(info["private_key"])

    def assertion(self, now: float | None = None) -> str:
        """The JWT of the grant: the account asks a read-only storage token of token_uri."""
        issued = int(now if now is not None else time.time())
        header = {"alg": "RS256", "typ": "JWT", **({"kid": self.key_id} if self.key_id else {})}
        claims = {"iss": self.email, "scope": SCOPE, "aud": self.token_uri, "iat": issued, "exp": issued + JWT_LIFETIME}
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = self._signer(signing_input.encode())
        jwt = f"{signing_input}.{_b64(signature)}"
        register_secret(jwt)
        return jwt

    def _fetch(self) -> tuple[str | None, float]:
        form = {"grant_type": JWT_BEARER, "assertion": self.assertion()}
        try:
            response = requests.post(self.token_uri, data=form, timeout=self.timeout)
        except requests.RequestException as exc:
            raise TransientError(
                f"the token endpoint {self.token_uri} does not answer ({type(exc).__name__}): check the key "
                "file's token_uri and the network"
            ) from None
        if response.status_code >= 500 or response.status_code == 429:
            raise TransientError(f"HTTP {response.status_code} from the token endpoint {self.token_uri}")
        if response.status_code != 200:
            error, description = oauth_error(response)
            raise AuthError(
                f"the token endpoint {self.token_uri} refused the service-account key of {self.email} "
                f"(HTTP {response.status_code} {error}: {description}): the key may be deleted, disabled or "
                "not this account's; create a new key and put its JSON under GOOGLE_APPLICATION_CREDENTIALS"
            )
        return token_of(response, self.token_uri)


class MetadataTokens(TokenSource):
    """The metadata server's token for the pod's (or machine's) service account."""

    def __init__(self, host: str, email: str, timeout: float):
        super().__init__(timeout)
        self.base = f"http://{host}"
        self.identity = f"workload identity {email} (metadata server {host})"

    def _fetch(self) -> tuple[str | None, float]:
        url = self.base + METADATA_TOKEN
        try:
            response = requests.get(url, headers={"Metadata-Flavor": "Google"}, timeout=self.timeout)
        except requests.RequestException as exc:
            raise TransientError(f"the metadata server {self.base} stopped answering ({type(exc).__name__})") from None
        if response.status_code != 200:
            raise AuthError(
                f"the metadata server {self.base} gave no token (HTTP {response.status_code}): bind the pull pod's "
                "Kubernetes ServiceAccount to a Google service account (GKE workload identity)"
            )
        return token_of(response, self.base)


def oauth_error(response: requests.Response) -> tuple[str, str]:
    """(error, error_description) of an OAuth 2.0 error answer; they carry no credential."""
    try:
        body = response.json()
        return str(body.get("error") or ""), str(body.get("error_description") or "")[:200]
    except (ValueError, AttributeError):
        return "", response.text[:200].strip()


def token_of(response: requests.Response, where: str) -> tuple[str, float]:
    try:
        body = response.json()
        token, lifetime = body["access_token"], float(body.get("expires_in") or 3600)
    except (ValueError, KeyError, TypeError):
        raise AuthError(f"{where} answered without an access token") from None
    if not isinstance(token, str) or not token:
        raise AuthError(f"{where} answered without an access token")
    return token, lifetime


def read_key_file(path: str) -> dict:
    """The key file's fields, or UsageError that says what is wrong with it (never its content)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UsageError(f"cannot read GOOGLE_APPLICATION_CREDENTIALS {path}: {exc.strerror or exc}") from None
    try:
        info = json.loads(text)
    except ValueError:
        info = None
    if not isinstance(info, dict):
        raise UsageError(
            f"GOOGLE_APPLICATION_CREDENTIALS {path} is not JSON: it must hold a service-account key file as "
            "`gcloud iam service-accounts keys create` writes it"
        )
    if isinstance(info.get("private_key"), str):
        register_secret(info["private_key"])
    kind = info.get("type")
    if kind != "service_account":
        raise UsageError(
            f"GOOGLE_APPLICATION_CREDENTIALS {path} is a {kind or 'untyped'!s} credentials file; the puller reads a "
            "service-account key file (type service_account), or HMAC keys, or the pod's workload identity"
        )
    missing = [field for field in KEY_FILE_FIELDS if not isinstance(info.get(field), str) or not info[field]]
    if missing:
        raise UsageError(f"the service-account key file GOOGLE_APPLICATION_CREDENTIALS {path} has no {missing[0]}")
    return info


def load_private_key(pem: str):
    """A function that signs bytes with RS256 (RSASSA-PKCS1-v1_5, SHA-256) under the key, or UsageError."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    try:
        key = serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        key = None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise UsageError(
            "the private_key of the service-account key file (GOOGLE_APPLICATION_CREDENTIALS) is not an RSA "
            "private key in PEM: put the key file as Google wrote it, unchanged"
        )
    return lambda data: key.sign(data, padding.PKCS1v15(), hashes.SHA256())


def metadata_tokens(env: Mapping[str, str], timeout: float) -> TokenSource | None:
    """The metadata server's tokens when there is a metadata server with a service account, else None."""
    host = _get(env, "GCE_METADATA_HOST") or METADATA_HOST
    try:
        response = requests.get(
            f"http://{host}{METADATA_EMAIL}",
            headers={"Metadata-Flavor": "Google"},
            timeout=min(timeout, METADATA_TIMEOUT),
        )
    except requests.RequestException:
        return None
    if response.status_code != 200 or response.headers.get("Metadata-Flavor") != "Google":
        return None
    return MetadataTokens(host, response.text.strip() or "default", timeout)


def resolve_tokens(env: Mapping[str, str], timeout: float) -> TokenSource:
    """The first of the chain (module docstring): a key file, the metadata server, or anonymous."""
    path = _get(env, "GOOGLE_APPLICATION_CREDENTIALS")
    if path:
        return KeyFileTokens(path, timeout)
    return metadata_tokens(env, timeout) or TokenSource(timeout)
