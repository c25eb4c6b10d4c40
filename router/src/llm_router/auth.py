"""API keys: bearer tokens read from a file (a mounted Secret), each allowed namespaces or models.

The file is JSON: [{"name": "team-a", "key": "<token>", "namespaces": ["team-a"], "models": ["ns/name"]}].
"*" in namespaces allows every model. A key is kept only as its SHA-256, looked up by digest, so no
comparison runs over the token itself; only a key's `name` is ever logged. The file is re-read when it
changes (a Secret's mount is swapped in place); a file that cannot be read leaves the keys as they
were, and with no file read yet every request is refused (fail closed).
"""

import asyncio
import hashlib
import json
import logging
import os

from .errors import RouterError

LOG = logging.getLogger("llm_router.auth")


class Grant:
    __slots__ = ("name", "namespaces", "models")

    def __init__(self, name: str, namespaces, models):
        self.name = name
        self.namespaces = frozenset(namespaces)
        self.models = frozenset(models)

    def __call__(self, model) -> bool:
        return "*" in self.namespaces or model.namespace in self.namespaces or model.full_name in self.models


def allow_all(model) -> bool:
    return True


class KeyStore:
    def __init__(self, path: str | None, interval: float = 5.0):
        self.path = path
        self.interval = interval
        self._grants: dict[bytes, Grant] = {}
        self._stamp = None

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def load(self) -> None:
        stamp = os.stat(self.path).st_mtime_ns
        if stamp == self._stamp:
            return
        with open(self.path, encoding="utf-8") as handle:
            entries = json.load(handle)
        grants = {}
        for entry in entries:
            key = entry["key"]
            if not isinstance(key, str) or len(key) < 16:
                raise ValueError(f"key {entry.get('name', '?')!r} is shorter than 16 characters")
            grants[hashlib.sha256(key.encode()).digest()] = Grant(
                str(entry.get("name", "unnamed")), entry.get("namespaces", ()), entry.get("models", ())
            )
        self._grants, self._stamp = grants, stamp
        LOG.info("API keys loaded: %d", len(grants))

    async def run(self) -> None:
        while True:
            try:
                self.load()
            except (OSError, ValueError, KeyError, TypeError) as exc:
                LOG.warning("API keys file not loaded (keys unchanged): %s", exc)
            await asyncio.sleep(self.interval)

    def authorize(self, header: bytes | None):
        """The caller's grant (a predicate over models) from its Authorization header."""
        if self.path is None:
            return allow_all
        if not header:
            raise RouterError(401, "missing_api_key", "Send an API key as 'Authorization: Bearer <key>'.")
        scheme, _, token = header.partition(b" ")
        grant = None
        if scheme.lower() == b"bearer" and token:
            grant = self._grants.get(hashlib.sha256(token.strip()).digest())
        if grant is None:
            raise RouterError(401, "invalid_api_key", "The API key is not valid.")
        return grant
