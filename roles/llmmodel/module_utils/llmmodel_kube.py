# -*- coding: utf-8 -*-
"""The role's own Kubernetes REST client: JSON over HTTP(S), the resources it names, errors by status.

Why not the Kubernetes Python client: importing it costs about 0.4 CPU-seconds (its package imports
every model class), and every reconcile's ansible-playbook paid it; the role needs four verbs on a
dozen kinds (bench/RESULTS.md, docs/design.md). The calls read like the dynamic client's:
``client.resources.get(api_version=..., kind=...)``, then ``get``, ``create``, ``patch``, ``delete``
with the resource; objects are plain dicts.

Built-in kinds the role manages are resolved from a table (their plural names are part of the
Kubernetes API and never change); any other kind, such as LLMModel, by one discovery request per
group-version and client.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import shutil
import ssl
import tempfile
import urllib.parse

from ansible.module_utils.llmmodel_discovery import recall, remember

MERGE_PATCH = "application/merge-patch+json"
TIMEOUT_SECONDS = 60

# (apiVersion, kind) -> (resource name, namespaced, subresources)
BUILT_IN = {
    ("v1", "Namespace"): ("namespaces", False, ("status",)),
    ("v1", "Pod"): ("pods", True, ("status",)),
    ("v1", "Secret"): ("secrets", True, ()),
    ("v1", "Service"): ("services", True, ("status",)),
    ("v1", "ServiceAccount"): ("serviceaccounts", True, ()),
    ("v1", "PersistentVolumeClaim"): ("persistentvolumeclaims", True, ("status",)),
    ("v1", "Event"): ("events", True, ()),
    ("apps/v1", "Deployment"): ("deployments", True, ("status", "scale")),
    ("batch/v1", "Job"): ("jobs", True, ("status",)),
    ("autoscaling/v2", "HorizontalPodAutoscaler"): ("horizontalpodautoscalers", True, ("status",)),
    ("policy/v1", "PodDisruptionBudget"): ("poddisruptionbudgets", True, ("status",)),
    ("rbac.authorization.k8s.io/v1", "Role"): ("roles", True, ()),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ("rolebindings", True, ()),
}


class ApiError(Exception):
    """The API server refused a request. ``summary()`` is its own message (never a credential)."""

    def __init__(self, status, reason, body=""):
        self.status, self.reason, self.body = status, reason, body
        super().__init__(self.summary())

    def summary(self):
        try:
            message = (json.loads(self.body) or {}).get("message")
        except (TypeError, ValueError, AttributeError):
            message = None
        if message:
            return message
        return self.body.strip() if self.body and self.body.strip() else "%s %s" % (self.status, self.reason)


class ForbiddenError(ApiError):
    pass


class NotFoundError(ApiError):
    pass


class ConflictError(ApiError):
    pass


ERRORS = {403: ForbiddenError, 404: NotFoundError, 409: ConflictError}


class UnreachableError(OSError):
    """No answer from the API server: the message names the server and the request."""


class ResourceNotFoundError(LookupError):
    pass


class ResourceNotUniqueError(LookupError):
    pass


class Resource:
    """A kind the API server serves: where its objects live."""

    def __init__(self, api_version, kind, name, namespaced, subresources=(), subresource=None):
        self.api_version, self.kind, self.name, self.namespaced = api_version, kind, name, namespaced
        self.subresource = subresource
        self.subresources = {} if subresource else {
            sub: Resource(api_version, kind, name, namespaced, subresource=sub) for sub in subresources
        }

    def path(self, name=None, namespace=None):
        parts = ["/api/v1" if self.api_version == "v1" else "/apis/" + self.api_version]
        if self.namespaced and namespace:
            parts += ["namespaces", urllib.parse.quote(namespace, safe="")]
        parts.append(self.name)
        if name:
            parts.append(urllib.parse.quote(name, safe=""))
            if self.subresource:
                parts.append(self.subresource)
        return "/".join(parts)


class Resources:
    """``get(api_version=, kind=)``: the table for built-in kinds, discovery for the others."""

    def __init__(self, client):
        self._client = client
        self._listings = {}

    def get(self, api_version, kind, remembered=False):
        """``remembered``: an optional kind's group-version, whose answer may come from an earlier run
        (module_utils/llmmodel_discovery.py)."""
        known = BUILT_IN.get((api_version, kind))
        if known:
            return Resource(api_version, kind, *known)
        if api_version not in self._listings:
            listing = recall(self._client.base_url, api_version) if remembered else None
            if listing is None:
                path = "/api/v1" if api_version == "v1" else "/apis/" + api_version
                try:
                    listing = self._client.request("GET", path).get("resources") or []
                except NotFoundError:
                    listing = []
                if remembered:
                    remember(self._client.base_url, api_version, listing)
            self._listings[api_version] = listing
        listing = self._listings[api_version]
        matches = [entry for entry in listing if entry.get("kind") == kind and "/" not in entry.get("name", "/")]
        if not matches:
            raise ResourceNotFoundError("the API server does not serve kind %s in %s" % (kind, api_version))
        if len(matches) > 1:
            raise ResourceNotUniqueError("kind %s in %s names more than one resource" % (kind, api_version))
        name = matches[0]["name"]
        subresources = [entry["name"].split("/", 1)[1] for entry in listing if entry.get("name", "").startswith(name + "/")]
        return Resource(api_version, kind, name, bool(matches[0].get("namespaced")), subresources)


def _ssl_context(settings):
    context = ssl.create_default_context(
        cafile=settings["ca_file"],
        cadata=settings["ca_data"].decode("ascii") if settings["ca_data"] else None,
    )
    if not settings["verify"]:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    cert, key = settings["cert_file"], settings["key_file"]
    if settings["cert_data"] or settings["key_data"]:
        # ssl loads a client certificate from files only: write them to a private directory, load, remove.
        directory = tempfile.mkdtemp(prefix="llmmodel-tls-")
        try:
            if settings["cert_data"]:
                cert = os.path.join(directory, "cert.pem")
                with open(cert, "wb") as handle:
                    handle.write(settings["cert_data"])
            if settings["key_data"]:
                key = os.path.join(directory, "key.pem")
                with open(key, "wb") as handle:
                    handle.write(settings["key_data"])
            context.load_cert_chain(cert, key)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    elif cert:
        context.load_cert_chain(cert, key)
    return context


class KubeClient:
    """One API server, one kept-alive connection. Not thread-safe (a task worker uses it alone)."""

    def __init__(self, settings, timeout=TIMEOUT_SECONDS):
        url = urllib.parse.urlsplit(settings["server"])
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError("the API server's address %r is not an http(s) URL" % settings["server"])
        self._https = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port or (443 if self._https else 80)
        self._prefix = url.path.rstrip("/")
        port = ":%d" % url.port if url.port else ""
        self.base_url = "%s://%s%s%s" % (url.scheme, url.hostname if ":" not in url.hostname else "[%s]" % url.hostname, port, self._prefix)
        self._ssl = _ssl_context(settings) if self._https else None
        self._timeout = timeout
        self._headers = {"Accept": "application/json", "User-Agent": "llm-operator-role"}
        if settings["token"]:
            self._headers["Authorization"] = "Bearer " + settings["token"]
        elif settings["username"]:
            pair = ("%s:%s" % (settings["username"], settings["password"])).encode("utf-8")
            self._headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        self._connection = None
        self.resources = Resources(self)

    def __repr__(self):  # never the token
        return "KubeClient(%s)" % self.base_url

    def close(self):
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _connect(self):
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout, context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)

    def _exchange(self, method, target, payload, headers):
        # A kept-alive connection the server closed meanwhile fails before any answer: once, on a fresh one.
        for attempt in (1, 2):
            reused = self._connection is not None
            if not reused:
                self._connection = self._connect()
            try:
                self._connection.request(method, target, body=payload, headers=headers)
                response = self._connection.getresponse()
                data = response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                if not reused or attempt == 2:
                    raise
                continue
            except Exception:
                self.close()
                raise
            if response.will_close:
                self.close()
            return response.status, response.reason, data
        raise AssertionError("unreachable")

    def request(self, method, path, query=None, body=None, content_type="application/json"):
        """Send one request; return the decoded JSON answer, or raise ApiError (by status)."""
        target = self._prefix + path
        query = {key: value for key, value in (query or {}).items() if value is not None}
        if query:
            target += "?" + urllib.parse.urlencode(query)
        headers = dict(self._headers)
        payload = None
        if body is not None:
            payload = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = content_type
        try:
            status, reason, data = self._exchange(method, target, payload, headers)
        except (http.client.HTTPException, OSError) as exc:
            raise UnreachableError("%s %s%s: %s" % (method, self.base_url, path, exc)) from exc
        text = data.decode("utf-8", "replace")
        if status >= 400:
            raise ERRORS.get(status, ApiError)(status, reason, text)
        return json.loads(text) if text.strip() else {}

    def get(self, resource, name=None, namespace=None, label_selector=None, field_selector=None):
        """One object by name, or the list (``items``) of the namespace (or cluster), label- or field-selected."""
        return self.request("GET", resource.path(name, namespace), {"labelSelector": label_selector, "fieldSelector": field_selector})

    def create(self, resource, body, namespace=None, field_manager=None):
        return self.request("POST", resource.path(None, namespace), {"fieldManager": field_manager}, body)

    def patch(self, resource, body, name, namespace=None, content_type=MERGE_PATCH, field_manager=None):
        return self.request("PATCH", resource.path(name, namespace), {"fieldManager": field_manager}, body, content_type)

    def delete(self, resource, name, namespace=None, body=None):
        return self.request("DELETE", resource.path(name, namespace), None, body)
