"""The role's modules document what they accept: each DOCUMENTATION parses (with the role's doc fragments,
as ansible-doc reads it) and lists exactly the options of the module's argument spec."""

from __future__ import annotations

import pytest

from ansible.plugins.loader import fragment_loader, init_plugin_loader
from ansible.utils.plugin_docs import get_docstring
from unit_helpers import LIBRARY, ROLE, load_library_module

# Every module of the role's library, so a new one is checked without being named here.
MODULES = sorted(path.stem for path in LIBRARY.glob("*.py"))


@pytest.fixture(scope="module")
def role_fragments():
    """The fragment loader as ansible-playbook sets it up for the role (its doc_fragments/ directory)."""
    init_plugin_loader()
    fragment_loader.add_directory(str(ROLE / "doc_fragments"))
    return fragment_loader


def summary(options: dict, nested: str) -> dict:
    """What a caller needs to know of each option, read from a module's documentation (suboptions
    under ``nested="suboptions"``) or from its argument spec (``nested="options"``)."""
    return {
        name: {
            "type": option.get("type", "str"),
            "required": option.get("required", False),
            "default": option.get("default"),
            "choices": option.get("choices"),
            "aliases": option.get("aliases"),
            "options": summary(option[nested], nested) if nested in option else None,
        }
        for name, option in options.items()
    }


@pytest.mark.parametrize("name", MODULES)
def test_documentation_lists_the_argument_spec(role_fragments, name):
    doc = get_docstring(str(LIBRARY / (name + ".py")), role_fragments, is_module=True)[0]
    assert doc, "%s: DOCUMENTATION did not parse" % name
    assert summary(doc["options"], "suboptions") == summary(load_library_module(name).ARGUMENT_SPEC, "options")
