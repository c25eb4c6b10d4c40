# The operator image: the ansible-operator base (ansible-operator, ansible-runner with its http event
# plugin, ansible-core, the kubernetes Python client) plus this project's collections, watches and
# roles. The base image pins v1.42.2: v1.42.3 is not available from every module proxy we build
# against, and the local runs use the same binary version.
#   docker build -t ghcr.io/llm-operator/llm-operator:0.1.0 .
# Build arguments (the defaults are what a Docker user with a registry gets):
#   BASE_IMAGE   the base; `make images` passes a locally made stand-in of the same contents
#                (images/operator-base/, images/README.md) where the public one cannot be pulled.
#   COLLECTIONS  a directory in the build context with Galaxy artifacts (*.tar.gz) to install instead
#                of asking Galaxy for requirements.yml, e.g. .cache/collections from `make collections`.
ARG BASE_IMAGE=quay.io/operator-framework/ansible-operator:v1.42.2
FROM ${BASE_IMAGE}

ARG COLLECTIONS=
COPY requirements.yml ${HOME}/requirements.yml
RUN --mount=type=bind,target=/tmp/build-context \
    if [ -n "${COLLECTIONS}" ]; then \
      ansible-galaxy collection install --offline /tmp/build-context/${COLLECTIONS}/*.tar.gz; \
    else \
      ansible-galaxy collection install -r ${HOME}/requirements.yml; \
    fi \
 && chmod -R ug+rwx ${HOME}/.ansible

COPY watches.yaml ${HOME}/watches.yaml
COPY roles/ ${HOME}/roles/
COPY playbooks/ ${HOME}/playbooks/

# The base image's non-root user (uid 1001, group 0 so arbitrary-uid platforms work too).
USER 1001
