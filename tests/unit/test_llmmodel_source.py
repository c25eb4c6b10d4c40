"""The weights' identity and the URL people see (module_utils/llmmodel_source.py, filter_plugins/
llmmodel_source.py): no user info or query string of a URL ever shows, ids of plain URLs never change."""

from __future__ import annotations

import hashlib
import os
import re
from urllib.parse import unquote

import ansible_runner
import pytest
import unit_helpers  # noqa: F401  (puts the role's module_utils on ansible.module_utils' path)
from ansible.module_utils.llmmodel_source import QUERY_DIGEST_LENGTH, display_model, redact_url, source_id, split_url  # noqa: E402
from ansible.utils.unsafe_proxy import AnsibleUnsafeText
from hypothesis import given, settings
from hypothesis import strategies as st
from unit_helpers import ROLE, VENV_BIN, load_filter_plugin

SHA = "a" * 64
DIGEST = re.compile(r"\?query-sha256=[0-9a-f]{%d}$" % QUERY_DIGEST_LENGTH)


# --- identities that existing volumes carry must not change -------------------------------------

@pytest.mark.parametrize("source, expected", [
    ({"huggingFaceRepo": "acme/tiny-chat"}, "hf://acme/tiny-chat@main"),
    ({"huggingFaceRepo": "acme/tiny-chat", "revision": "v1.0"}, "hf://acme/tiny-chat@v1.0"),
    ({"huggingFaceRepo": "acme/tiny-chat", "revision": "refs/pr/1"}, "hf://acme/tiny-chat@refs/pr/1"),
    ({"url": "https://models.example.com/tiny/model.gguf"}, "https://models.example.com/tiny/model.gguf"),
    ({"url": "https://models.example.com/m.gguf", "sha256": SHA}, "https://models.example.com/m.gguf#sha256=" + SHA),
    ({"url": "http://127.0.0.1:8080/m.gguf"}, "http://127.0.0.1:8080/m.gguf"),
    ({"url": "https://[2001:db8::1]:8443/m.gguf"}, "https://[2001:db8::1]:8443/m.gguf"),
    ({"url": "https://Models.Example.COM/A%20B/m%2Fx.gguf"}, "https://Models.Example.COM/A%20B/m%2Fx.gguf"),
    ({"url": "https://bücher.example/modèle/ß.gguf"}, "https://bücher.example/modèle/ß.gguf"),
    ({"url": "https://host/a@b/c.gguf"}, "https://host/a@b/c.gguf"),
    ({"url": "https://host"}, "https://host"),
    ({"url": "https://host/"}, "https://host/"),
    ({"url": "https://host/m.gguf?"}, "https://host/m.gguf?"),
    ({"url": "s3://bucket/dir/m.gguf"}, "s3://bucket/dir/m.gguf"),
    ({"url": "s3://bucket/odd#key.gguf", "sha256": SHA}, "s3://bucket/odd#key.gguf#sha256=" + SHA),
    ({"url": "gs://bucket/m.gguf"}, "gs://bucket/m.gguf"),
])
def test_a_plain_source_keeps_its_identity(source, expected):
    assert source_id(source) == expected


def test_the_default_revision_is_a_parameter():
    assert source_id({"huggingFaceRepo": "acme/x"}, "dev") == "hf://acme/x@dev"
    assert source_id({}) == "" and source_id(None) == ""


# --- a URL kept in a Secret: the reference stands for it -----------------------------------------

def test_a_url_in_a_secret_is_known_by_its_reference_only():
    ref = {"name": "weights-link", "key": "url"}
    assert source_id({"urlSecret": ref}) == "secret://weights-link/url"
    assert source_id({"urlSecret": ref, "sha256": SHA}) == "secret://weights-link/url#sha256=" + SHA
    assert display_model({"urlSecret": ref, "sha256": SHA}) == "secret://weights-link/url"
    # Another Secret or key is another source; the Secret's value is not the operator's to read.
    assert source_id({"urlSecret": {"name": "weights-link", "key": "url2"}}) != source_id({"urlSecret": ref})
    assert source_id({"urlSecret": {"name": "other", "key": "url"}}) != source_id({"urlSecret": ref})


def test_the_model_shown_for_each_kind_of_source():
    assert display_model({"huggingFaceRepo": "acme/x", "revision": "v1"}) == "acme/x"
    assert display_model({"url": "https://u:SECRET@host/m.gguf?sig=SECRET"}) == "https://host/m.gguf?<redacted>"
    assert display_model({}) == "" and display_model(None) == ""


# --- credentials never show ---------------------------------------------------------------------

HOSTILE = [
    "https://bucket.s3.amazonaws.com/m.gguf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIASECRET%2F20260301"
    "&X-Amz-Signature=SECRETSIG",
    "https://storage.googleapis.com/b/m.gguf?X-Goog-Signature=SECRET&X-Goog-Expires=900",
    "https://acct.blob.core.windows.net/c/m.gguf?sv=2024&sig=SECRET%2Bx%3D",
    "https://user:SECRET@host/m.gguf",
    "https://SECRET@host/m.gguf",
    "https://user:pa@SECRET@host/m.gguf",
    "https://user%40corp:SE%43RET@host:8443/m.gguf",
    "https://user:SECRET@[2001:db8::1]:8443/m.gguf?token=SECRET",
    "http://[::1]/m.gguf?SECRET",
    "https://host?sig=SECRET",
    "https://host/a@b/m.gguf?sig=SECRET",
    "https://bücher.example/ß.gguf?tök=SECRET€",
    "https://host/m.gguf?sig=SECRET#frag",
    "https://host/m.gguf#access_token=SECRET",
    "https://host/m.gguf#a?SECRET",
    "https://host/m.gguf?a=1?b=SECRET",
    "https://user:SECRET@host",
    "s3://bucket/m.gguf?X-Amz-Signature=SECRET",
    "gs://user:SECRET@bucket/m.gguf",
]


@pytest.mark.parametrize("url", HOSTILE)
def test_no_credential_shows(url):
    for shown in (source_id({"url": url}), source_id({"url": url, "sha256": SHA}), redact_url(url)):
        for form in (shown, unquote(shown)):
            assert "SECRET" not in form and "SE%43RET" not in form, shown


@pytest.mark.parametrize("url, expected", [
    ("https://user:SECRET@host/m.gguf", "https://host/m.gguf"),
    ("https://user:SECRET@[2001:db8::1]:8443/m.gguf?token=SECRET", "https://[2001:db8::1]:8443/m.gguf?<redacted>"),
    ("https://host?sig=SECRET", "https://host?<redacted>"),
    ("https://host/a@b/m.gguf?sig=SECRET", "https://host/a@b/m.gguf?<redacted>"),
    ("https://host/m.gguf?sig=SECRET#frag", "https://host/m.gguf?<redacted>"),
    ("https://host/m.gguf#access_token=SECRET", "https://host/m.gguf"),
    ("https://host/m.gguf?", "https://host/m.gguf"),
    ("https://bücher.example:8080/ß.gguf", "https://bücher.example:8080/ß.gguf"),
    ("s3://bucket/odd#key.gguf?X-Amz-Signature=SECRET", "s3://bucket/odd#key.gguf?<redacted>"),
    ("https://host/m.gguf", "https://host/m.gguf"),
])
def test_what_a_person_sees(url, expected):
    assert redact_url(url) == expected


def test_a_query_becomes_a_digest_that_tells_queries_apart():
    one = source_id({"url": "https://host/m.gguf?X-Amz-Signature=SECRET1"})
    two = source_id({"url": "https://host/m.gguf?X-Amz-Signature=SECRET2"})
    assert DIGEST.search(one) and DIGEST.search(two) and one != two
    assert one.startswith("https://host/m.gguf?query-sha256=")
    assert source_id({"url": "https://host/m.gguf?X-Amz-Signature=SECRET1"}) == one  # stable across reconciles
    # The digest is of the query's exact text (no normalisation that could make two files one).
    digest = hashlib.sha256(b"X-Amz-Signature=SECRET1").hexdigest()[:QUERY_DIGEST_LENGTH]
    assert one == "https://host/m.gguf?query-sha256=" + digest
    assert source_id({"url": "https://host/m.gguf?a=1&b=2"}) != source_id({"url": "https://host/m.gguf?b=2&a=1"})


def test_user_info_and_fragment_do_not_make_another_source():
    plain = source_id({"url": "https://host/m.gguf", "sha256": SHA})
    assert source_id({"url": "https://user:SECRET@host/m.gguf", "sha256": SHA}) == plain
    assert source_id({"url": "https://host/m.gguf#x", "sha256": SHA}) == plain


def test_s3_and_gs_keys_keep_their_hash_characters():
    # Everything after the bucket is the object key the puller fetches: 'a#1' and 'a#2' are two files.
    assert source_id({"url": "s3://b/a#1"}) != source_id({"url": "s3://b/a#2"})
    assert source_id({"url": "s3://b/a?x=1"}) != source_id({"url": "s3://b/a?x=2"})


def test_split_url_gives_substrings():
    assert split_url("https://u:p@[::1]:8443/a/b?q=1#f") == ("https://", "u:p", "[::1]:8443", "/a/b", "q=1", "f")
    assert split_url("https://host") == ("https://", None, "host", "", None, None)
    assert split_url("s3://b/k#x?y") == ("s3://", None, "b", "/k#x", "y", None)


URL_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="?#/@"), max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    scheme=st.sampled_from(["http", "https", "s3", "gs"]),
    user=URL_TEXT,
    host=st.sampled_from(["host", "h.example:8443", "[::1]", "[2001:db8::1]:443", "bücher.example"]),
    path=st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="?#"), max_size=10), max_size=3),
    query=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20),
    sha=st.sampled_from([None, SHA]),
)
def test_generated_urls_never_show_their_credentials(scheme, user, host, path, query, sha):
    secret = "Zq9SECRETx"
    url = "%s://%s%s@%s/%s?%s%s" % (scheme, user, secret, host, "/".join(path), query, secret)
    source = {"url": url} if sha is None else {"url": url, "sha256": sha}
    for shown in (source_id(source), redact_url(url)):
        assert secret not in shown and secret not in unquote(shown)
    if not query.startswith("#") or scheme in ("s3", "gs"):  # else all of it is a fragment, dropped
        assert DIGEST.search(source_id({"url": url}))
    plain = "%s://%s/%s" % (scheme, host, "/".join(path))
    if "#" not in plain or scheme in ("s3", "gs"):
        assert source_id({"url": plain}) == plain


# --- the filters, as the role uses them ---------------------------------------------------------

def test_the_filters_return_unsafe_text():
    filters = load_filter_plugin("llmmodel_source").FilterModule().filters()
    found = filters["llmmodel_source_id"]({"url": "https://host/m.gguf?sig=SECRET"})
    shown = filters["llmmodel_redact_url"](AnsibleUnsafeText("https://u:SECRET@host/m.gguf"))
    assert isinstance(found, AnsibleUnsafeText) and isinstance(shown, AnsibleUnsafeText)
    assert shown == "https://host/m.gguf" and DIGEST.search(found)
    assert filters["llmmodel_source_id"]({"huggingFaceRepo": "a/b"}, "dev") == "hf://a/b@dev"
    model = filters["llmmodel_display_model"]({"urlSecret": {"name": "s", "key": "k"}})
    assert isinstance(model, AnsibleUnsafeText) and model == "secret://s/k"


PLAYBOOK = """\
- hosts: localhost
  gather_facts: false
  vars:
    source: {url: !unsafe "https://host/{{ 7 * 7 }}.gguf?sig=SECRET&x={{ 6 * 7 }}", sha256: "%s"}
  tasks:
    - name: Derive
      ansible.builtin.set_fact:
        id: "{{ source | llmmodel_source_id }}"
        shown: "{{ source.url | llmmodel_redact_url }}"
    - name: Show
      ansible.builtin.debug:
        msg: "{{ {'id': id, 'shown': shown} }}"
""" % SHA


def test_a_template_in_a_url_stays_text_through_a_real_playbook(tmp_path):
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    runner = ansible_runner.run(
        private_data_dir=str(tmp_path), playbook=str(tmp_path / "play.yml"), inventory="localhost ansible_connection=local",
        envvars={"PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", "ANSIBLE_FILTER_PLUGINS": str(ROLE / "filter_plugins"),
                 "ANSIBLE_PYTHON_INTERPRETER": str(VENV_BIN / "python"), "ANSIBLE_LOCALHOST_WARNING": "false"},
        quiet=True, timeout=300,
    )
    assert runner.rc == 0, runner.stdout.read()[-3000:]
    [shown] = [e["event_data"]["res"]["msg"] for e in runner.events
               if e["event"] == "runner_on_ok" and e["event_data"].get("task") == "Show"]
    assert shown["shown"] == "https://host/{{ 7 * 7 }}.gguf?<redacted>"
    assert shown["id"].startswith("https://host/{{ 7 * 7 }}.gguf?query-sha256=") and shown["id"].endswith("#sha256=" + SHA)
    assert "SECRET" not in runner.stdout.read()
