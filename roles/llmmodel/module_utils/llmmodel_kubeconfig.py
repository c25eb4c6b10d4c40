# -*- coding: utf-8 -*-
"""Where the API server is and how to authenticate: a kubeconfig's context, or the pod's service account.

Returns plain settings for module_utils/llmmodel_kube.py's client. Standard library and PyYAML only
(ansible-core's own dependency): no Kubernetes client, whose import costs a reconcile about 0.4
CPU-seconds (bench/RESULTS.md).

A kubeconfig as kubectl reads it: KUBECONFIG may list several files (the first file that names a
cluster, user or context wins, as in kubectl); file paths in a file are relative to that file.
Clusters: server, certificate-authority(-data), insecure-skip-tls-verify. Users: token, tokenFile,
client-certificate(-data) with client-key(-data), username and password (ansible-operator's kubeconfig
for a run names the object being reconciled in its user name, which its proxy reads from the basic
authorization header to set the owner reference of what the run creates). exec and auth-provider
plugins and tls-server-name are refused with a message saying so: ansible-operator's runs talk to
its local proxy, which needs none of them.
"""

from __future__ import annotations

import base64
import os

import yaml

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class ConfigError(ValueError):
    """The configuration cannot be used; the message says why (never a credential's value)."""


def empty_settings(server):
    return {
        "server": server,
        "token": None,
        "username": None,
        "password": None,
        "ca_file": None,
        "ca_data": None,
        "cert_file": None,
        "cert_data": None,
        "key_file": None,
        "key_data": None,
        "verify": True,
    }


def _load_yaml(path):
    try:
        with open(path, encoding="utf-8") as handle:
            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            return yaml.load(handle, Loader=loader) or {}  # noqa: S506 - a safe loader
    except OSError as exc:
        raise ConfigError("cannot read kubeconfig %s: %s" % (path, exc.strerror or exc))
    except yaml.YAMLError as exc:
        raise ConfigError("kubeconfig %s is not valid YAML: %s" % (path, exc))


def _named(config, section, base):
    """{name: (entry, directory of its file)} of one section of one file."""
    entries = {}
    for item in config.get(section) or []:
        if isinstance(item, dict) and item.get("name") not in (None, ""):
            entries[item["name"]] = (item.get(section[:-1]) or {}, base)
    return entries


def merged_kubeconfig(paths):
    """The sections of the kubeconfig files, merged as kubectl merges them."""
    merged = {"clusters": {}, "users": {}, "contexts": {}, "current-context": None}
    for path in paths:
        config = _load_yaml(path)
        if not isinstance(config, dict):
            raise ConfigError("kubeconfig %s is not a mapping" % path)
        base = os.path.dirname(os.path.abspath(path))
        for section in ("clusters", "users", "contexts"):
            for name, entry in _named(config, section, base).items():
                merged[section].setdefault(name, entry)
        if not merged["current-context"] and config.get("current-context"):
            merged["current-context"] = config["current-context"]
    return merged


def _file(value, base):
    return value if os.path.isabs(value) else os.path.join(base, value)


def _data(value, what):
    try:
        return base64.b64decode(value, validate=True)
    except (TypeError, ValueError):
        raise ConfigError("%s is not valid base64" % what)


def from_kubeconfig(path, context=None):
    """The settings of ``context`` (default: the current context) of the kubeconfig file(s) ``path``
    (os.pathsep-separated like KUBECONFIG)."""
    paths = [p for p in path.split(os.pathsep) if p]
    if not paths:
        raise ConfigError("no kubeconfig file given")
    merged = merged_kubeconfig(paths)
    name = context or merged["current-context"]
    if not name:
        raise ConfigError("kubeconfig %s has no current-context and no context was given" % path)
    if name not in merged["contexts"]:
        raise ConfigError("kubeconfig %s has no context %r" % (path, name))
    ctx, _ = merged["contexts"][name]
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    if cluster_name not in merged["clusters"]:
        raise ConfigError("context %r names cluster %r, which kubeconfig %s does not hold" % (name, cluster_name, path))
    cluster, cluster_base = merged["clusters"][cluster_name]
    if not cluster.get("server"):
        raise ConfigError("cluster %r of kubeconfig %s has no server" % (cluster_name, path))
    if cluster.get("tls-server-name"):
        raise ConfigError("cluster %r sets tls-server-name, which the role's client does not support" % cluster_name)
    settings = empty_settings(cluster["server"])
    settings["verify"] = not cluster.get("insecure-skip-tls-verify", False)
    if cluster.get("certificate-authority-data"):
        settings["ca_data"] = _data(cluster["certificate-authority-data"], "certificate-authority-data of cluster %r" % cluster_name)
    elif cluster.get("certificate-authority"):
        settings["ca_file"] = _file(cluster["certificate-authority"], cluster_base)

    if user_name is None or user_name == "":
        return settings
    if user_name not in merged["users"]:
        raise ConfigError("context %r names user %r, which kubeconfig %s does not hold" % (name, user_name, path))
    user, user_base = merged["users"][user_name]
    for plugin in ("exec", "auth-provider"):
        if user.get(plugin):
            raise ConfigError("user %r authenticates through %s, which the role's client does not support: "
                              "give it a token or a client certificate" % (user_name, plugin))
    if user.get("token"):
        settings["token"] = user["token"]
    elif user.get("tokenFile"):
        settings["token"] = _read_token(_file(user["tokenFile"], user_base))
    if user.get("client-certificate-data"):
        settings["cert_data"] = _data(user["client-certificate-data"], "client-certificate-data of user %r" % user_name)
    elif user.get("client-certificate"):
        settings["cert_file"] = _file(user["client-certificate"], user_base)
    if user.get("client-key-data"):
        settings["key_data"] = _data(user["client-key-data"], "client-key-data of user %r" % user_name)
    elif user.get("client-key"):
        settings["key_file"] = _file(user["client-key"], user_base)
    if user.get("username"):
        settings["username"], settings["password"] = user["username"], user.get("password") or ""
    return settings


def _read_token(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError as exc:
        raise ConfigError("cannot read token file %s: %s" % (path, exc.strerror or exc))


def in_cluster(environ=None, directory=SERVICE_ACCOUNT_DIR):
    """The settings of the pod's service account, or None outside a pod."""
    environ = os.environ if environ is None else environ
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    token_path = os.path.join(directory, "token")
    if not host or not port or not os.path.isfile(token_path):
        return None
    settings = empty_settings("https://%s:%s" % ("[%s]" % host if ":" in host else host, port))
    settings["token"] = _read_token(token_path)
    settings["ca_file"] = os.path.join(directory, "ca.crt")
    return settings
