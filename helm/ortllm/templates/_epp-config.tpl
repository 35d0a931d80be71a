{{/*
The endpoint picker's EndpointPickerConfig (llm-d-router's llm-d.ai/v1alpha1). Its metrics
extractor gets an engine entry "ortllm" (the pods' llm-d.ai/engine-type label) naming the vLLM
metrics ortllm serves on /metrics; vllm:lora_requests_info only exists with --enable-lora.
With disaggregation: prefill and decode profiles, filtered on llm-d.ai/role, and the
disagg-profile-handler, which runs the prefill profile when the prefix decider finds enough
uncached tokens and names the prefill pod to the decode pod's sidecar.
*/}}
{{- define "ortllm.eppConfig" -}}
{{- $epp := .Values.inferencePool.endpointPicker -}}
{{- $w := $epp.scorerWeights -}}
{{- $lora := has "--enable-lora" .Values.server.extraArgs -}}
apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
  - type: metrics-data-source
    parameters:
      scheme: http
      path: /metrics
  - type: core-metrics-extractor
    parameters:
      engineLabelKey: llm-d.ai/engine-type
      defaultEngine: ortllm
      engineConfigs:
        - name: ortllm
          queuedRequestsSpec: "vllm:num_requests_waiting"
          runningRequestsSpec: "vllm:num_requests_running"
          kvUsageSpec: "vllm:kv_cache_usage_perc"
          loraSpec: {{ ternary "vllm:lora_requests_info" "" $lora | quote }}
          cacheInfoSpec: "vllm:cache_config_info"
  - type: queue-scorer
  - type: kv-cache-utilization-scorer
  - type: prefix-cache-scorer
  - type: max-score-picker
  {{- if .Values.disaggregation.enabled }}
  - type: prefill-filter
  - type: decode-filter
  - type: prefix-based-pd-decider
    parameters:
      nonCachedTokens: {{ .Values.disaggregation.nonCachedTokens }}
  - type: disagg-profile-handler
    parameters:
      deciders:
        prefill: prefix-based-pd-decider
  {{- else }}
  - type: single-profile-handler
  {{- end }}
dataLayer:
  sources:
    - pluginRef: metrics-data-source
      extractors:
        - pluginRef: core-metrics-extractor
schedulingProfiles:
  {{- $profiles := list "default" }}
  {{- if .Values.disaggregation.enabled }}{{ $profiles = list "prefill" "decode" }}{{ end }}
  {{- range $profiles }}
  - name: {{ . }}
    plugins:
      {{- if ne . "default" }}
      - pluginRef: {{ . }}-filter
      {{- end }}
      - pluginRef: queue-scorer
        weight: {{ $w.queue }}
      - pluginRef: kv-cache-utilization-scorer
        weight: {{ $w.kvCacheUtilization }}
      - pluginRef: prefix-cache-scorer
        weight: {{ $w.prefixCache }}
      - pluginRef: max-score-picker
  {{- end }}
{{- end -}}
