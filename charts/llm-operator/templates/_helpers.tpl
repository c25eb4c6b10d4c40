{{/*
Names and labels. Every name of the chart is "<fullname>-<what>", as config/default names them with
its "llm-operator-" prefix: the release "llm-operator" gets exactly the names of `make deploy`.
*/}}

{{/*
The prefix of every name. At most 28 characters: the longest name built on it,
"<fullname>-controller-manager-metrics-service", must stay a valid Service name (63).
*/}}
{{- define "llm-operator.fullname" -}}
{{- $name := "" }}
{{- if .Values.fullnameOverride }}
{{- $name = .Values.fullnameOverride }}
{{- else if contains .Chart.Name .Release.Name }}
{{- $name = .Release.Name }}
{{- else }}
{{- $name = printf "%s-%s" .Release.Name .Chart.Name }}
{{- end }}
{{- if gt (len $name) 28 }}
{{- fail (printf "the names of this release would start with %q (%d characters), longer than 28: choose a shorter release name or set fullnameOverride" $name (len $name)) }}
{{- end }}
{{- $name }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "llm-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "llm-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Labels that pick this release's manager pods (with control-plane: controller-manager of config/).
The name is always the chart's: the install guard (guard.yaml) finds every llm-operator by it.
*/}}
{{- define "llm-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The operator image: image.repository, and image.tag or else the chart's appVersion. */}}
{{- define "llm-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
