"""AWS credentials, found as the AWS SDKs find them, and AWS Signature Version 4 for S3 requests.

The chain, first match wins (the SDKs' order, without config files and SSO, which a pod does not have):
  1. AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN): a Secret's keys, or a shell's;
  2. AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN: STS AssumeRoleWithWebIdentity (EKS IRSA), unsigned;
  3. AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI (+ AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE]):
     EKS Pod Identity and ECS task roles;
  4. the EC2 instance metadata service (IMDSv2), unless AWS_EC2_METADATA_DISABLED=true;
  5. none: requests go unsigned (public objects), as `aws s3 cp --no-sign-request` sends them.
Every secret learnt on the way is registered with the log redaction before it is used.
"""

import hashlib
import hmac
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import requests

from .errors import AuthError, UsageError
from .progress import register_secret

ALGORITHM = "AWS4-HMAC-SHA256"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
ECS_HOST = "http://169.254.170.2"
IMDS = "http://169.254.169.254"
IMDS_TIMEOUT = 1.0  # the SDKs' default: a machine without metadata service must not wait long
STS_NS = "{https://sts.amazonaws.com/doc/2011-06-15/}"


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str
    session_token: str | None = None
    origin: str = "environment"  # where they came from, for one log line

    def __repr__(self) -> str:  # never a secret in a traceback or a debug print
        return f"Credentials(origin={self.origin!r})"


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def static_credentials(env: Mapping[str, str]) -> Credentials | None:
    access, secret = _get(env, "AWS_ACCESS_KEY_ID"), _get(env, "AWS_SECRET_ACCESS_KEY")
    if not access and not secret:
        return None
    if not access or not secret:
        missing = "AWS_SECRET_ACCESS_KEY" if access else "AWS_ACCESS_KEY_ID"
        raise UsageError(f"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together; {missing} is not set")
    return Credentials(access, secret, _get(env, "AWS_SESSION_TOKEN"), "environment")


def resolve_credentials(env: Mapping[str, str], region: str, timeout: float) -> Credentials | None:
    """The first credentials of the chain (module docstring), or None for unsigned requests."""
    found = static_credentials(env)
    if found is None and _get(env, "AWS_WEB_IDENTITY_TOKEN_FILE"):
        found = web_identity_credentials(env, region, timeout)
    if found is None and (
        _get(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI") or _get(env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
    ):
        found = container_credentials(env, timeout)
    if found is None and (_get(env, "AWS_EC2_METADATA_DISABLED") or "").lower() != "true":
        found = instance_credentials(env)
    if found is None:
        return None
    for secret in (found.secret_key, found.session_token, found.access_key):
        register_secret(secret or "")
    return found


def web_identity_credentials(env: Mapping[str, str], region: str, timeout: float) -> Credentials:
    token_file, role = _get(env, "AWS_WEB_IDENTITY_TOKEN_FILE"), _get(env, "AWS_ROLE_ARN")
    if not role:
        raise UsageError("AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not")
    try:
        token = Path(token_file).read_text().strip()
    except OSError as exc:
        raise UsageError(f"cannot read AWS_WEB_IDENTITY_TOKEN_FILE {token_file}: {exc.strerror or exc}") from None
    register_secret(token)
    endpoint = (_get(env, "AWS_ENDPOINT_URL_STS") or f"https://sts.{region}.amazonaws.com").rstrip("/")
    form = {
        "Action": "AssumeRoleWithWebIdentity",
        "Version": "2011-06-15",
        "RoleArn": role,
        "RoleSessionName": _get(env, "AWS_ROLE_SESSION_NAME") or "llm-model-puller",
        "WebIdentityToken": token,
    }
    try:
        response = requests.post(endpoint + "/", data=form, timeout=timeout)
    except requests.RequestException as exc:
        raise AuthError(
            f"STS at {endpoint} did not answer ({type(exc).__name__}); check AWS_ENDPOINT_URL_STS"
        ) from None
    if response.status_code != 200:
        code, message = xml_error(response.content)
        raise AuthError(
            f"STS refused AssumeRoleWithWebIdentity for {role} (HTTP {response.status_code} {code}: {message}); "
            "check the role's trust policy and the ServiceAccount's eks.amazonaws.com/role-arn annotation"
        )
    try:
        result = ET.fromstring(response.content).find(f".//{STS_NS}Credentials")
        creds = Credentials(
            result.findtext(f"{STS_NS}AccessKeyId"),
            result.findtext(f"{STS_NS}SecretAccessKey"),
            result.findtext(f"{STS_NS}SessionToken"),
            f"web identity ({role})",
        )
    except (ET.ParseError, AttributeError):
        raise AuthError(f"STS at {endpoint} answered AssumeRoleWithWebIdentity without credentials") from None
    if not creds.access_key or not creds.secret_key:
        raise AuthError(f"STS at {endpoint} answered AssumeRoleWithWebIdentity without credentials")
    return creds


def container_credentials(env: Mapping[str, str], timeout: float) -> Credentials:
    url = _get(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI") or ECS_HOST + _get(
        env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"
    )
    headers = {}
    token_file = _get(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")
    try:
        token = Path(token_file).read_text().strip() if token_file else _get(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN")
    except OSError as exc:
        raise UsageError(f"cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: {exc.strerror or exc}") from None
    if token:
        register_secret(token)
        headers["Authorization"] = token
    try:
        response = requests.get(url, headers=headers, timeout=timeout)
        response.raise_for_status()
        data = response.json()
        return Credentials(data["AccessKeyId"], data["SecretAccessKey"], data.get("Token"), "container credentials")
    except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
        where = urlsplit(url).netloc
        raise AuthError(
            f"the container credentials endpoint {where} gave no credentials ({type(exc).__name__})"
        ) from None


def instance_credentials(env: Mapping[str, str]) -> Credentials | None:
    """IMDSv2: a session token, the role name, the role's credentials. None when there is no service."""
    base = (_get(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT") or IMDS).rstrip("/")
    try:
        token = requests.put(
            base + "/latest/api/token", headers={"X-aws-ec2-metadata-token-ttl-seconds": "300"}, timeout=IMDS_TIMEOUT
        )
        if token.status_code != 200:
            return None
        headers = {"X-aws-ec2-metadata-token": token.text}
        roles = requests.get(
            base + "/latest/meta-data/iam/security-credentials/", headers=headers, timeout=IMDS_TIMEOUT
        )
        role = roles.text.split()[0] if roles.status_code == 200 and roles.text.strip() else None
        if role is None:
            return None
        data = requests.get(
            f"{base}/latest/meta-data/iam/security-credentials/{role}", headers=headers, timeout=IMDS_TIMEOUT
        ).json()
        return Credentials(data["AccessKeyId"], data["SecretAccessKey"], data.get("Token"), f"instance role {role}")
    except (requests.RequestException, ValueError, KeyError, TypeError, IndexError):
        return None


def xml_error(body: bytes) -> tuple[str, str]:
    """(Code, Message) of an AWS XML error body (S3's <Error> or STS's <ErrorResponse>), or ('', text)."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return "", body[:200].decode("utf-8", "replace").strip()
    code = message = ""
    for element in root.iter():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag == "Code" and not code:
            code = (element.text or "").strip()
        elif tag == "Message" and not message:
            message = (element.text or "").strip()
    return code, message


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def sign(
    method: str,
    url: str,
    creds: Credentials,
    region: str,
    headers: Mapping[str, str] | None = None,
    *,
    payload_sha256: str = UNSIGNED_PAYLOAD,
    now: datetime | None = None,
) -> dict[str, str]:
    """The headers of an S3 request signed with SigV4: the given ones (all signed) plus x-amz-date,
    x-amz-content-sha256, x-amz-security-token and Authorization. Headers added afterwards (Range,
    User-Agent) are not signed, which S3 allows for anything but x-amz-*."""
    parts = urlsplit(url)
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    signed = {name.lower(): " ".join(str(value).split()) for name, value in (headers or {}).items()}
    signed.update({"host": parts.netloc, "x-amz-date": stamp, "x-amz-content-sha256": payload_sha256})
    if creds.session_token:
        signed["x-amz-security-token"] = creds.session_token
    names = sorted(signed)
    query = sorted(
        (quote(unquote(k), safe="-_.~"), quote(unquote(v), safe="-_.~"))
        for k, _, v in (pair.partition("=") for pair in parts.query.split("&") if pair)
    )
    canonical = "\n".join(
        [
            method,
            quote(unquote(parts.path) or "/", safe="/-_.~"),
            "&".join(f"{k}={v}" for k, v in query),
            "".join(f"{name}:{signed[name]}\n" for name in names),
            ";".join(names),
            payload_sha256,
        ]
    )
    scope = f"{stamp[:8]}/{region}/s3/aws4_request"
    to_sign = "\n".join([ALGORITHM, stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(("AWS4" + creds.secret_key).encode(), stamp[:8]), region), "s3"), "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    result = {name: value for name, value in signed.items() if name != "host"}
    result["Authorization"] = (
        f"{ALGORITHM} Credential={creds.access_key}/{scope}, SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    return result


def describe(creds: Credentials | None) -> str:
    return "unsigned requests (no AWS credentials found)" if creds is None else f"credentials from {creds.origin}"
