"""The role (module_utils/llmmodel_source.py) and the puller (puller/src/llm_model_puller/sources.py)
each cut a URL into what may be shown and what identifies it: they ship in two images and cannot
share the code, so this test holds them to the same answers. A URL shown in the status must read as
in the puller's log, and both must hide exactly the same parts."""

from __future__ import annotations

import sys

import unit_helpers  # noqa: F401  (puts the role's module_utils on ansible.module_utils' path)
from ansible.module_utils.llmmodel_source import redact_url, url_identity  # noqa: E402
from hypothesis import given, settings
from hypothesis import strategies as st
from unit_helpers import REPO

sys.path.insert(0, str(REPO / "puller" / "src"))
from llm_model_puller import sources as puller  # noqa: E402

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=16)
PIECES = st.sampled_from(["", "/", "?", "#", "@", ":", "//", "?#", "#?", "u:p@", "[::1]:8443", "%40", "query-sha256="])


@settings(max_examples=500, deadline=None)
@given(scheme=st.sampled_from(["http://", "https://", "HTTPS://", "s3://", "gs://", "GS://", "az://", "file:", ""]),
       parts=st.lists(st.one_of(TEXT, PIECES), max_size=8))
def test_the_role_and_the_puller_cut_every_url_alike(scheme, parts):
    url = scheme + "".join(parts)
    assert redact_url(url) == puller.redact_url(url)
    assert url_identity(url) == puller.source_identity(url)
