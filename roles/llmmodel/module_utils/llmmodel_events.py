# -*- coding: utf-8 -*-
"""core/v1 Events as the API returns them, for the diagnosis (module_utils/llmmodel_diagnosis.py):
which events are about an object, which one is the newest, and the API's timestamps.

An Event names its object in ``involvedObject`` (``regarding`` in events.k8s.io/v1) by kind, name and
uid. Its time is the last time it was seen: ``series.lastObservedTime``, ``lastTimestamp``,
``eventTime`` (a MicroTime), then ``firstTimestamp`` and the object's ``creationTimestamp``.
"""

from __future__ import annotations

from datetime import datetime, timezone

_TIME_FORMATS = ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text):
    """A datetime (UTC) of an API timestamp (seconds or MicroTime), or None."""
    if not text or not isinstance(text, str):
        return None
    for time_format in _TIME_FORMATS:
        try:
            return datetime.strptime(text, time_format).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    return None


def event_time(event):
    """When ``event`` was last seen, or None."""
    series = event.get("series") or {}
    for text in (series.get("lastObservedTime"), event.get("lastTimestamp"), event.get("eventTime"),
                 event.get("firstTimestamp"), (event.get("metadata") or {}).get("creationTimestamp")):
        found = parse_time(text)
        if found:
            return found
    return None


def _subject(event):
    return event.get("involvedObject") or event.get("regarding") or {}


def events_of(events, kind, name, uid=None):
    """The events about the object ``kind``/``name`` (and ``uid`` when both sides know it), newest first."""
    found = []
    for event in events or []:
        subject = _subject(event)
        if subject.get("kind") != kind or subject.get("name") != name:
            continue
        if uid and subject.get("uid") and subject.get("uid") != uid:
            continue  # an object of the same name before this one
        found.append(event)
    oldest = datetime.min.replace(tzinfo=timezone.utc)
    return sorted(found, key=lambda e: event_time(e) or oldest, reverse=True)


def field_selector(kind, name):
    """The field selector that lists the events of one object."""
    return "involvedObject.kind=%s,involvedObject.name=%s" % (kind, name)
