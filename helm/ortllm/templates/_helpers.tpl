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
