# -*- coding: utf-8 -*-
"""The weights' identity and a URL as people may see it: never a credential a URL carries.

A signed link (S3 ``X-Amz-Signature``, GCS ``X-Goog-Signature``, Azure SAS ``sig``...) carries its
credential in the query string; ``https://user:password@host/...`` carries it in the user info. The
full URL only reaches the pull Job's environment (``MODEL_URL``), which needs it. Everything shown or
stored elsewhere (status.model, status.weights.source, conditions, Events, the PVC's and Job's
annotations) comes from here:

- ``source_id``: what the volume must hold, compared with the PVC's annotation to decide on a pull.
  For the Hub ``hf://<repo>@<revision>``. For a URL the URL as written, minus its user info and its
  fragment, its query replaced by ``?query-sha256=<16 hex>`` (a digest of the query: two different
  queries stay two sources, so weights are never reused for another file, yet no signature can be
  read back), then ``#sha256=<digest>`` when a checksum is given. A URL without user info, query or
  fragment keeps exactly its old identity, so existing volumes keep their weights.
- ``redact_url``: what a person sees: user info removed, query replaced by ``?<redacted>``, fragment
  dropped.
- A URL kept in a Secret (``urlSecret: {name, key}``) is never read by the operator: its identity
  is ``secret://<name>/<key>`` (then ``#sha256=<digest>`` when a checksum is given), stable while
  the Secret's value changes (a rotated signature pulls nothing again) and free of any credential.

The URL is cut up as text, never parsed and rebuilt, so nothing else about it changes (case,
percent-encoding, IPv6 brackets, ports). For s3:// and gs:// everything after the bucket is the
object key, where a ``#`` is an ordinary character (the puller fetches it): a ``#`` there is kept, and
only a ``?`` and what follows it count as the hidden part.
"""

from __future__ import annotations

import hashlib

QUERY_DIGEST_MARKER = "query-sha256="
QUERY_DIGEST_LENGTH = 16
REDACTED_QUERY = "?<redacted>"
# Schemes whose part after the bucket is a raw object key (the puller's reading of s3:// and gs://).
KEY_SCHEMES = ("s3", "gs", "az")


def split_url(url):
    """(prefix, userinfo, host, path, query, fragment) of ``url``, as substrings of it.

    ``prefix`` is ``scheme://`` (empty when the URL has none), ``userinfo`` None when there is no
    ``@`` in the authority, ``query`` and ``fragment`` None when absent (``""`` when present but empty).
    """
    url = str(url)
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    prefix = scheme + sep
    # The authority ends at the first '/', '?' or '#'; user info ends at its last '@'.
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    userinfo, at, host = authority.rpartition("@")
    if not at:
        userinfo = None
    if scheme.lower() in KEY_SCHEMES:
        path, fragment = tail, None
    else:
        path, fragment = _after(tail, "#")
    path, query = _after(path, "?")
    return prefix, userinfo, host, path, query, fragment


def _after(text, separator):
    """(text before the first ``separator``, text after it or None when there is none)."""
    before, found, after = text.partition(separator)
    return before, (after if found else None)


def query_digest(query):
    """The first hex digits of the sha256 of ``query`` (its exact text, UTF-8)."""
    return hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest()[:QUERY_DIGEST_LENGTH]


def url_identity(url):
    """``url`` without user info and fragment, its query replaced by a digest of it."""
    prefix, _userinfo, host, path, query, _fragment = split_url(url)
    hidden = "?" + QUERY_DIGEST_MARKER + query_digest(query) if query else ("?" if query == "" else "")
    return prefix + host + path + hidden


def redact_url(url):
    """``url`` as a person may see it: no user info, the query replaced by ``?<redacted>``, no fragment."""
    prefix, _userinfo, host, path, query, _fragment = split_url(url)
    return prefix + host + path + (REDACTED_QUERY if query else "")


SECRET_PREFIX = "secret://"


def secret_reference(ref):
    """``secret://<name>/<key>`` of a ``urlSecret`` reference: what is shown and recorded for it."""
    ref = ref or {}
    return "%s%s/%s" % (SECRET_PREFIX, ref.get("name", ""), ref.get("key", ""))


def display_model(source):
    """The source as status.model shows it: the repository id, the redacted URL or the Secret reference."""
    source = source or {}
    if source.get("huggingFaceRepo") is not None:
        return str(source["huggingFaceRepo"])
    if source.get("urlSecret") is not None:
        return secret_reference(source["urlSecret"])
    return redact_url(source.get("url") or "")


def source_id(source, default_revision="main"):
    """The identity of the weights ``source`` (spec.source) names; '' when it names none."""
    source = source or {}
    if source.get("huggingFaceRepo") is not None:
        revision = source.get("revision")
        return "hf://%s@%s" % (source["huggingFaceRepo"], default_revision if revision is None else revision)
    checksum = source.get("sha256")
    suffix = "" if checksum is None else "#sha256=%s" % checksum
    if source.get("urlSecret") is not None:
        return secret_reference(source["urlSecret"]) + suffix
    url = source.get("url")
    if not url:
        return ""
    return url_identity(url) + suffix
