"""module_utils/llmmodel_kubeconfig: what the role's client reads from a kubeconfig or a pod, without an API server."""

from __future__ import annotations

import base64

import pytest
import yaml

import unit_helpers  # noqa: F401  (makes ansible.module_utils.llmmodel_* importable)
from ansible.module_utils.llmmodel_kubeconfig import ConfigError, from_kubeconfig, in_cluster

SECRET = "s3cr3t-value"


def write(path, clusters=(), users=(), contexts=(), current=None):
    config = {"apiVersion": "v1", "kind": "Config",
              "clusters": [{"name": n, "cluster": c} for n, c in clusters],
              "users": [{"name": n, "user": u} for n, u in users],
              "contexts": [{"name": n, "context": c} for n, c in contexts]}
    if current:
        config["current-context"] = current
    path.write_text(yaml.safe_dump(config))
    return str(path)


def single(tmp_path, cluster, user, name="kubeconfig"):
    return write(tmp_path / name, [("c", cluster)], [("u", user)], [("x", {"cluster": "c", "user": "u"})], "x")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_token_and_ca_data(tmp_path):
    settings = from_kubeconfig(single(tmp_path, {"server": "https://api:6443", "certificate-authority-data": b64(b"CA PEM")},
                                      {"token": SECRET}))
    assert settings["server"] == "https://api:6443"
    assert settings["token"] == SECRET
    assert settings["ca_data"] == b"CA PEM" and settings["ca_file"] is None
    assert settings["verify"] is True


def test_files_are_relative_to_their_kubeconfig(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "token").write_text(SECRET + "\n")
    path = single(tmp_path / "conf", {"server": "https://api", "certificate-authority": "pki/ca.crt"},
                  {"tokenFile": "token", "client-certificate": "pki/admin.crt", "client-key": "/abs/admin.key"})
    settings = from_kubeconfig(path)
    assert settings["ca_file"] == str(tmp_path / "conf" / "pki" / "ca.crt")
    assert settings["cert_file"] == str(tmp_path / "conf" / "pki" / "admin.crt")
    assert settings["key_file"] == "/abs/admin.key"
    assert settings["token"] == SECRET


def test_client_certificate_data_insecure_and_basic_auth(tmp_path):
    settings = from_kubeconfig(single(tmp_path, {"server": "https://api", "insecure-skip-tls-verify": True},
                                      {"client-certificate-data": b64(b"CERT"), "client-key-data": b64(b"KEY"),
                                       "username": "admin", "password": SECRET}))
    assert (settings["cert_data"], settings["key_data"]) == (b"CERT", b"KEY")
    assert settings["verify"] is False
    assert (settings["username"], settings["password"]) == ("admin", SECRET)


@pytest.mark.parametrize("plugin", ["exec", "auth-provider"])
def test_credential_plugins_are_refused_by_name_without_their_secrets(tmp_path, plugin):
    path = single(tmp_path, {"server": "https://api"}, {plugin: {"command": "get-token", "env": [{"name": "K", "value": SECRET}]}})
    with pytest.raises(ConfigError) as raised:
        from_kubeconfig(path)
    assert plugin in str(raised.value) and "'u'" in str(raised.value)
    assert SECRET not in str(raised.value)


def test_several_files_merge_as_kubectl_merges_them(tmp_path):
    first = write(tmp_path / "a", [("c", {"server": "https://first"})], [("u", {"token": "first-token"})],
                  [("x", {"cluster": "c", "user": "u"})])
    second = write(tmp_path / "b", [("c", {"server": "https://second"}), ("d", {"server": "https://d"})],
                   [("u", {"token": "second-token"})], [("x", {"cluster": "d", "user": "u"}), ("y", {"cluster": "d"})], "x")
    settings = from_kubeconfig(first + ":" + second)
    # The first file's context x wins (cluster c), and c and u come from the first file too;
    # the current context comes from the only file that sets one.
    assert (settings["server"], settings["token"]) == ("https://first", "first-token")
    assert from_kubeconfig(first + ":" + second, context="y")["server"] == "https://d"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"context": "nope"}, "has no context 'nope'"),
        ({"cluster": "missing"}, "names cluster 'missing'"),
        ({"user": "missing"}, "names user 'missing'"),
    ],
)
def test_a_broken_reference_says_which(tmp_path, change, message):
    context = {"cluster": change.get("cluster", "c"), "user": change.get("user", "u")}
    path = write(tmp_path / "k", [("c", {"server": "https://api"})], [("u", {"token": SECRET})], [("x", context)], "x")
    with pytest.raises(ConfigError, match=message):
        from_kubeconfig(path, change.get("context"))


def test_unreadable_or_invalid_files_fail_with_the_path(tmp_path):
    with pytest.raises(ConfigError, match="cannot read kubeconfig"):
        from_kubeconfig(str(tmp_path / "absent"))
    (tmp_path / "bad").write_text("clusters: [")
    with pytest.raises(ConfigError, match="not valid YAML"):
        from_kubeconfig(str(tmp_path / "bad"))
    with pytest.raises(ConfigError, match="not valid base64"):
        from_kubeconfig(single(tmp_path, {"server": "https://api", "certificate-authority-data": "%%%"}, {}))


def test_in_cluster_reads_the_service_account(tmp_path):
    (tmp_path / "token").write_text(SECRET)
    (tmp_path / "ca.crt").write_text("CA")
    settings = in_cluster({"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}, str(tmp_path))
    assert (settings["server"], settings["token"], settings["ca_file"]) == ("https://10.96.0.1:443", SECRET, str(tmp_path / "ca.crt"))
    ipv6 = in_cluster({"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}, str(tmp_path))
    assert ipv6["server"] == "https://[fd00::1]:443"
    assert in_cluster({}, str(tmp_path)) is None
    no_token = in_cluster({"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}, str(tmp_path / "none"))
    assert no_token is None
