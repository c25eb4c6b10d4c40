"""module_utils/llmmodel_kube: the role's client over real HTTP(S) to a local server on this machine.

The API semantics (apply, status, deletion) are tested against the real API server in the *_cluster
tests; here, what those cannot reach: certificates given as data, a server that drops a kept-alive
connection, error bodies that are not the API server's JSON, and that no credential leaks.
"""

from __future__ import annotations

import datetime
import http.server
import json
import ssl
import threading

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import unit_helpers  # noqa: F401  (makes ansible.module_utils.llmmodel_* importable)
from ansible.module_utils.llmmodel_kube import ApiError, ConflictError, KubeClient, NotFoundError, UnreachableError
from ansible.module_utils.llmmodel_kubeconfig import empty_settings

TOKEN = "s3cr3t-token"


def certificate(name, issuer_key=None, issuer_name=None, ca=False):
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer_name or subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(hours=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
    cert = builder.sign(issuer_key or key, hashes.SHA256())
    return key, cert


def pem(key=None, cert=None):
    if cert is not None:
        return cert.public_bytes(serialization.Encoding.PEM)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    directory = tmp_path_factory.mktemp("pki")
    ca_key, ca = certificate("test-ca", ca=True)
    server_key, server = certificate("localhost", ca_key, ca.subject)
    client_key, client = certificate("admin", ca_key, ca.subject)
    for name, data in {"ca.crt": pem(cert=ca), "server.crt": pem(cert=server), "server.key": pem(server_key),
                       "client.crt": pem(cert=client), "client.key": pem(client_key)}.items():
        (directory / name).write_bytes(data)
    return directory


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen = []

    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type="application/json", close=False):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        if close:
            self.close_connection = True

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        Handler.seen.append({"method": self.command, "path": self.path, "body": body,
                             "authorization": self.headers.get("Authorization"),
                             "content_type": self.headers.get("Content-Type"),
                             "client": dict(x[0] for x in peer["subject"]).get("commonName") if peer else None})
        if self.path.startswith("/api/v1/namespaces/ns/pods/missing"):
            self.answer(404, json.dumps({"kind": "Status", "message": 'pods "missing" not found', "code": 404}))
        elif self.path.startswith("/api/v1/namespaces/ns/pods/taken"):
            self.answer(409, json.dumps({"kind": "Status", "message": "already exists", "code": 409}))
        elif self.path.startswith("/api/v1/namespaces/ns/pods/proxy-error"):
            self.answer(502, "bad gateway\n", "text/plain")
        elif self.path.startswith("/api/v1/namespaces/ns/pods/close"):
            self.answer(200, json.dumps({"metadata": {"name": "close"}}), close=True)
        else:
            self.answer(200, json.dumps({"metadata": {"name": self.path.rsplit("/", 1)[-1]}, "items": []}))

    do_GET = do_POST = do_PATCH = do_DELETE = handle_any


def serve(context=None):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def https_server(pki):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "server.crt", pki / "server.key")
    context.load_verify_locations(pki / "ca.crt")
    context.verify_mode = ssl.CERT_REQUIRED
    server = serve(context)
    Handler.seen = []
    yield "https://localhost:%d" % server.server_address[1]
    server.shutdown()


@pytest.fixture
def http_server():
    server = serve()
    Handler.seen = []
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()


def pods(client):
    return client.resources.get(api_version="v1", kind="Pod")


def test_client_certificate_and_ca_given_as_data(https_server, pki):
    settings = dict(empty_settings(https_server), ca_data=(pki / "ca.crt").read_bytes(),
                    cert_data=(pki / "client.crt").read_bytes(), key_data=(pki / "client.key").read_bytes())
    client = KubeClient(settings)
    assert client.get(pods(client), name="p", namespace="ns")["metadata"]["name"] == "p"
    assert Handler.seen[-1]["client"] == "admin"


def test_client_certificate_and_ca_given_as_files(https_server, pki):
    settings = dict(empty_settings(https_server), ca_file=str(pki / "ca.crt"),
                    cert_file=str(pki / "client.crt"), key_file=str(pki / "client.key"))
    client = KubeClient(settings)
    client.get(pods(client), name="p", namespace="ns")
    assert Handler.seen[-1]["client"] == "admin"


def test_an_unknown_server_certificate_is_refused_unless_told_not_to_check(https_server, pki):
    settings = dict(empty_settings(https_server), cert_file=str(pki / "client.crt"), key_file=str(pki / "client.key"))
    client = KubeClient(settings)
    with pytest.raises(UnreachableError, match="CERTIFICATE_VERIFY_FAILED"):
        client.get(pods(client), name="p", namespace="ns")
    insecure = KubeClient(dict(settings, verify=False))
    assert insecure.get(pods(insecure), name="p", namespace="ns")["metadata"]["name"] == "p"


def test_verbs_paths_bodies_and_the_token(http_server):
    client = KubeClient(dict(empty_settings(http_server), token=TOKEN))
    resource = pods(client)
    client.get(resource, namespace="ns", label_selector="app=a,tier=b")
    client.create(resource, {"metadata": {"name": "n"}}, namespace="ns", field_manager="llm-operator")
    client.patch(resource, {"metadata": {"labels": {"a": "b"}}}, name="n", namespace="ns", field_manager="llm-operator")
    client.patch(resource.subresources["status"], {"status": {}}, name="n", namespace="ns")
    client.delete(resource, name="n", namespace="ns", body={"propagationPolicy": "Background"})
    assert [(s["method"], s["path"]) for s in Handler.seen] == [
        ("GET", "/api/v1/namespaces/ns/pods?labelSelector=app%3Da%2Ctier%3Db"),
        ("POST", "/api/v1/namespaces/ns/pods?fieldManager=llm-operator"),
        ("PATCH", "/api/v1/namespaces/ns/pods/n?fieldManager=llm-operator"),
        ("PATCH", "/api/v1/namespaces/ns/pods/n/status"),
        ("DELETE", "/api/v1/namespaces/ns/pods/n"),
    ]
    assert {s["authorization"] for s in Handler.seen} == {"Bearer " + TOKEN}
    assert Handler.seen[2]["content_type"] == "application/merge-patch+json"
    assert json.loads(Handler.seen[4]["body"]) == {"propagationPolicy": "Background"}


def test_errors_by_status_with_the_servers_message(http_server):
    client = KubeClient(dict(empty_settings(http_server), token=TOKEN))
    with pytest.raises(NotFoundError) as missing:
        client.get(pods(client), name="missing", namespace="ns")
    assert missing.value.status == 404 and missing.value.summary() == 'pods "missing" not found'
    with pytest.raises(ConflictError):
        client.patch(pods(client), {}, name="taken", namespace="ns")
    with pytest.raises(ApiError) as other:
        client.get(pods(client), name="proxy-error", namespace="ns")
    assert (other.value.status, other.value.summary()) == (502, "bad gateway")
    assert TOKEN not in repr(client) + str(missing.value) + str(other.value)


def test_a_connection_the_server_closed_is_opened_again(http_server):
    client = KubeClient(empty_settings(http_server))
    client.get(pods(client), name="close", namespace="ns")
    assert client.get(pods(client), name="after", namespace="ns")["metadata"]["name"] == "after"
    assert [s["path"].rsplit("/", 1)[-1] for s in Handler.seen] == ["close", "after"]


def test_an_unreachable_server_is_named_in_the_error(http_server):
    client = KubeClient(dict(empty_settings("http://127.0.0.1:9"), token=TOKEN))
    with pytest.raises(UnreachableError) as raised:
        client.get(pods(client), name="p", namespace="ns")
    assert "GET http://127.0.0.1:9/api/v1/namespaces/ns/pods/p" in str(raised.value)
    assert TOKEN not in str(raised.value)


def test_a_server_path_prefix_is_kept(http_server):
    client = KubeClient(empty_settings(http_server + "/k8s/clusters/c1/"))
    client.get(pods(client), name="p", namespace="ns")
    assert Handler.seen[-1]["path"] == "/k8s/clusters/c1/api/v1/namespaces/ns/pods/p"
