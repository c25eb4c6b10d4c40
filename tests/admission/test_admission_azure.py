"""Admission of Azure Blob Storage sources: az://<container>/<blob or prefix/> and an account's blob
https URL are accepted; a malformed one is rejected with the rule's message (CRD CEL rules)."""

import copy

import pytest
from test_admission import SHA256, dry_run_create, rejection, with_source

AZ_SHAPE = "spec.source.url of Azure Blob Storage must be az://CONTAINER/BLOB or az://CONTAINER/PREFIX/"
BLOB_SHAPE = "spec.source.url of an Azure storage account must be https://ACCOUNT.blob.core.windows.net/CONTAINER/BLOB"

INVALID = {
    "az without a blob": (with_source(url="az://models"), AZ_SHAPE),
    "az with only a container": (with_source(url="az://models/"), AZ_SHAPE),
    "az container in capitals": (with_source(url="az://Models/m.gguf"), AZ_SHAPE),
    "az container too short": (with_source(url="az://ab/m.gguf"), AZ_SHAPE),
    "az container with a double hyphen": (with_source(url="az://my--models/m.gguf"), AZ_SHAPE),
    "az container ending in a hyphen": (with_source(url="az://models-/m.gguf"), AZ_SHAPE),
    "az blob starting with a slash": (with_source(url="az://models//m.gguf"), AZ_SHAPE),
    "blob url without a container": (with_source(url="https://acct01.blob.core.windows.net/m.gguf"), BLOB_SHAPE),
    "blob url with an account in capitals": (
        with_source(url="https://Acct01.blob.core.windows.net/models/m.gguf"), BLOB_SHAPE),
    "blob url with a bad container": (with_source(url="https://acct01.blob.core.windows.net/Models/m.gguf"), BLOB_SHAPE),
    "sha256 with an az folder": (
        with_source(url="az://models/llama-ft/", sha256=SHA256, credentialsSecret="weights-azure"),
        "spec.source.sha256 checks one file, and spec.source.url names a folder",
    ),
}


@pytest.mark.parametrize("body, message", INVALID.values(), ids=INVALID.keys())
def test_a_malformed_azure_source_is_rejected_with_its_rule_message(custom_objects, namespace, body, message):
    assert message in rejection(custom_objects, namespace, body)


VALID = {
    "az blob with a checksum": with_source(url="az://models/tiny/m.gguf", sha256=SHA256, credentialsSecret="weights-azure"),
    "az folder": with_source(url="az://llm-models-01/llama-ft/", credentialsSecret="weights-azure"),
    "blob url": with_source(url="https://acct01.blob.core.windows.net/models/m.gguf", credentialsSecret="weights-azure"),
    "blob url folder, sovereign cloud": with_source(url="https://acct01.blob.core.chinacloudapi.cn/models/llama/"),
    "another https host": with_source(url="https://models.example/acct01.blob.core.windows.net/m.gguf"),
}


@pytest.mark.parametrize("body", VALID.values(), ids=VALID.keys())
def test_an_azure_source_is_accepted(custom_objects, namespace, body):
    created = dry_run_create(custom_objects, namespace, copy.deepcopy(body))
    assert created["spec"]["source"] == body["spec"]["source"]
