# The operator image: the ansible-operator base (ansible-operator, ansible-runner with its http event
# plugin, ansible-core, the kubernetes Python client) plus this project's collections, watches and
# roles. The base image pins v1.42.2: v1.42.3 is not available from every module proxy we build
# against, and the local runs use the same binary version.
FROM quay.io/operator-framework/ansible-operator:v1.42.2

COPY requirements.yml ${HOME}/requirements.yml
RUN ansible-galaxy collection install -r ${HOME}/requirements.yml \
 && chmod -R ug+rwx ${HOME}/.ansible

COPY watches.yaml ${HOME}/watches.yaml
COPY roles/ ${HOME}/roles/
COPY playbooks/ ${HOME}/playbooks/

# The base image's non-root user (uid 1001, group 0 so arbitrary-uid platforms work too).
USER 1001
