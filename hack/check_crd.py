#!/usr/bin/env python3
"""Static checks of the hand-written CRDs (make manifests-check).

The CRDs under config/crd/bases/ are the source of truth (an Ansible operator has no Go types to
generate them from), so this script guards what a generator would: every file parses, is an
apiextensions.k8s.io/v1 CustomResourceDefinition, every schema node (properties, array items and
map values) has a description, and every CEL rule carries a message for the user.
"""

import pathlib
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_GLOB = "config/crd/bases/*.yaml"


def walk(schema, path, problems):
    """Record problems of one schema node and recurse into its children."""
    for index, validation in enumerate(schema.get("x-kubernetes-validations", [])):
        if not validation.get("rule"):
            problems.append(f"{path}: x-kubernetes-validations[{index}] has no rule")
        if not (validation.get("message") or validation.get("messageExpression")):
            problems.append(f"{path}: x-kubernetes-validations[{index}] has no message")
    for name, child in schema.get("properties", {}).items():
        child_path = f"{path}.{name}"
        # The API server forbids anything but `type: object` on the root metadata.
        if path == "" and name == "metadata":
            continue
        if not str(child.get("description", "")).strip():
            problems.append(f"{child_path}: no description")
        walk(child, child_path, problems)
    for key, suffix in (("items", "[]"), ("additionalProperties", "{}")):
        child = schema.get(key)
        if isinstance(child, dict):
            if not str(child.get("description", "")).strip():
                problems.append(f"{path}{suffix}: no description")
            walk(child, f"{path}{suffix}", problems)


def check_file(path):
    """Return the problems found in one CRD file."""
    problems = []
    try:
        documents = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    except yaml.YAMLError as error:
        return [f"does not parse: {error}"]
    if len(documents) != 1:
        return [f"expected one document, found {len(documents)}"]
    crd = documents[0]
    if crd.get("apiVersion") != "apiextensions.k8s.io/v1" or crd.get("kind") != "CustomResourceDefinition":
        return ["not an apiextensions.k8s.io/v1 CustomResourceDefinition"]
    spec = crd["spec"]
    expected_name = f"{spec['names']['plural']}.{spec['group']}"
    if crd["metadata"]["name"] != expected_name:
        problems.append(f"metadata.name is {crd['metadata']['name']}, expected {expected_name}")
    if path.name != f"{spec['group']}_{spec['names']['plural']}.yaml":
        problems.append(f"file name should be {spec['group']}_{spec['names']['plural']}.yaml")
    storage_versions = [v["name"] for v in spec["versions"] if v.get("storage")]
    if len(storage_versions) != 1:
        problems.append(f"exactly one storage version expected, found {storage_versions}")
    for version in spec["versions"]:
        schema = version.get("schema", {}).get("openAPIV3Schema")
        if not schema:
            problems.append(f"{version['name']}: no openAPIV3Schema")
            continue
        if not str(schema.get("description", "")).strip():
            problems.append(f"{version['name']}: the root schema has no description")
        version_problems = []
        walk(schema, "", version_problems)
        problems.extend(f"{version['name']}: {problem}" for problem in version_problems)
    return problems


def main(argv):
    paths = [pathlib.Path(arg) for arg in argv[1:]] or sorted(ROOT.glob(DEFAULT_GLOB))
    if not paths:
        print(f"no CRD files found ({DEFAULT_GLOB})", file=sys.stderr)
        return 1
    failed = False
    for path in paths:
        problems = check_file(path)
        for problem in problems:
            print(f"{path}: {problem}", file=sys.stderr)
        failed = failed or bool(problems)
        if not problems:
            print(f"{path}: ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
