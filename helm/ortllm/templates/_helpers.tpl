{{- define "ortllm.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ortllm.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "ortllm.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Name of the Secret holding VLLM_API_KEY: the user's, or the one this chart creates. */}}
{{- define "ortllm.apiKeySecret" -}}
{{- default (printf "%s-api-key" (include "ortllm.fullname" .)) .Values.apiKey.existingSecret -}}
{{- end -}}

{{/* The image: an empty tag means the chart's appVersion, the -cuda build when device is cuda. */}}
{{- define "ortllm.image" -}}
{{- $tag := .Values.image.tag | default (printf "%s%s" .Chart.AppVersion (ternary "-cuda" "" (eq .Values.device "cuda"))) -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}

{{/* The endpoint picker's name (its Deployment, Service, ServiceAccount and ConfigMap). */}}
{{- define "ortllm.eppName" -}}
{{- printf "%s-epp" (include "ortllm.fullname" . | trunc 59 | trimSuffix "-") -}}
{{- end -}}

{{/* Labels of the endpoint picker's pods, apart from the model servers the pool selects. */}}
{{- define "ortllm.eppSelectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}-epp
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
The model-server Deployments: one (role "") or, with disaggregation, prefill and decode. A YAML map
{items: [{name, role}]} for `include ... | fromYaml`, so every per-Deployment object ranges over it.
*/}}
{{- define "ortllm.workloads" -}}
items:
{{- if .Values.disaggregation.enabled }}
  - { name: {{ printf "%s-prefill" (include "ortllm.fullname" . | trunc 55 | trimSuffix "-") }}, role: prefill }
  - { name: {{ printf "%s-decode" (include "ortllm.fullname" . | trunc 56 | trimSuffix "-") }}, role: decode }
{{- else }}
  - { name: {{ include "ortllm.fullname" . }}, role: "" }
{{- end }}
{{- end -}}

{{/* Combinations the chart refuses, with the reason (rendered first by deployment.yaml). */}}
{{- define "ortllm.validate" -}}
{{- if and .Values.inferencePool.enabled .Values.apiKey.enabled -}}
{{- fail "inferencePool.enabled with apiKey.enabled: the endpoint picker scrapes /metrics without a key and ortllm asks for one there; turn apiKey off behind the Gateway or inferencePool off" -}}
{{- end -}}
{{- if and .Values.disaggregation.enabled (not .Values.inferencePool.enabled) -}}
{{- fail "disaggregation.enabled needs inferencePool.enabled: the endpoint picker chooses each request's prefill pod" -}}
{{- end -}}
{{- if and .Values.disaggregation.enabled (eq (int .Values.disaggregation.decode.enginePort) (int .Values.server.port)) -}}
{{- fail "disaggregation.decode.enginePort must differ from server.port: the routing sidecar listens on server.port in decode pods" -}}
{{- end -}}
{{- end -}}
