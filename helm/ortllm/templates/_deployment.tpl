{{/*
One model-server Deployment. Called with (dict "root" $ "name" <name> "role" ""|"prefill"|"decode").
Prefill and decode pods carry llm-d.ai/role, which the endpoint picker's prefill/decode filters read;
decode pods put llm-d's routing sidecar on server.port (the pool's port): it runs the prefill on the
pod the picker named in x-prefiller-host-port, then the decode on the local ortllm (enginePort).
*/}}
{{- define "ortllm.deployment" -}}
{{- $ := .root -}}
{{- $v := $.Values -}}
{{- $role := .role -}}
{{- $roleValues := dict -}}
{{- if $role }}{{ $roleValues = index $v.disaggregation $role }}{{ end -}}
{{- $enginePort := $v.server.port -}}
{{- if eq $role "decode" }}{{ $enginePort = $v.disaggregation.decode.enginePort }}{{ end -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .name }}
  labels:
    {{- include "ortllm.labels" $ | nindent 4 }}
    {{- with $role }}
    llm-d.ai/role: {{ . }}
    {{- end }}
spec:
  {{- if not $v.autoscaling.enabled }}
  replicas: {{ ternary $roleValues.replicas $v.replicaCount (ne $role "") }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "ortllm.selectorLabels" $ | nindent 6 }}
      {{- with $role }}
      llm-d.ai/role: {{ . }}
      {{- end }}
  template:
    metadata:
      labels:
        {{- include "ortllm.selectorLabels" $ | nindent 8 }}
        {{- with $role }}
        llm-d.ai/role: {{ . }}
        {{- end }}
        {{- if $v.inferencePool.enabled }}
        # The endpoint picker's metrics extractor reads ortllm's metric names from this engine entry.
        llm-d.ai/engine-type: ortllm
        {{- end }}
      {{- with $v.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      {{- with $v.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      # ortllm stops accepting on SIGTERM and lets in-flight requests finish within this time.
      terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
      containers:
        - name: ortllm
          image: {{ include "ortllm.image" $ | quote }}
          imagePullPolicy: {{ $v.image.pullPolicy }}
          # The image's entrypoint is `node dist/src/main.js serve`: these are serve's arguments.
          args:
            {{- if $v.model.path }}
            - {{ printf "%s/%s" $v.model.mountPath $v.model.path | quote }}
            {{- else }}
            - --load-format
            - dummy
            {{- end }}
            - --host
            - "0.0.0.0"
            - --port
            - {{ $enginePort | quote }}
            - --device
            - {{ $v.device }}
            {{- with $v.model.servedModelName }}
            - --served-model-name
            - {{ . | quote }}
            {{- end }}
            {{- with $v.server.maxModelLen }}
            - --max-model-len
            - {{ . | quote }}
            {{- end }}
            {{- with $v.server.maxNumSeqs }}
            - --max-num-seqs
            - {{ . | quote }}
            {{- end }}
            {{- with $v.server.maxNumBatchedTokens }}
            - --max-num-batched-tokens
            - {{ . | quote }}
            {{- end }}
            {{- if $role }}
            # The pod's own IP as the KV host: the decode side pulls the prompt's blocks from there.
            - --kv-transfer-config
            - {{ dict "kv_connector" "TcpConnector" "kv_role" "kv_both" "kv_port" (int $v.disaggregation.kvPort) "kv_ip" "$(POD_IP)" | toJson | quote }}
            {{- end }}
            {{- range $v.server.extraArgs }}
            - {{ . | quote }}
            {{- end }}
            {{- range $roleValues.extraArgs }}
            - {{ . | quote }}
            {{- end }}
          {{- if or $v.apiKey.enabled $role }}
          env:
            {{- if $v.apiKey.enabled }}
            - name: VLLM_API_KEY
              valueFrom:
                secretKeyRef:
                  name: {{ include "ortllm.apiKeySecret" $ }}
                  key: {{ $v.apiKey.key }}
            {{- end }}
            {{- if $role }}
            - name: POD_IP
              valueFrom:
                fieldRef:
                  fieldPath: status.podIP
            {{- end }}
          {{- end }}
          ports:
            - name: http
              containerPort: {{ $enginePort }}
              protocol: TCP
            {{- if $role }}
            - name: kv
              containerPort: {{ $v.disaggregation.kvPort }}
              protocol: TCP
            {{- end }}
          # /health is open without the API key and answers 503 when the engine is dead.
          startupProbe:
            httpGet: { path: /health, port: http }
            periodSeconds: {{ $v.probes.startup.periodSeconds }}
            failureThreshold: {{ $v.probes.startup.failureThreshold }}
          livenessProbe:
            httpGet: { path: /health, port: http }
            periodSeconds: {{ $v.probes.liveness.periodSeconds }}
            failureThreshold: {{ $v.probes.liveness.failureThreshold }}
          readinessProbe:
            httpGet: { path: /health, port: http }
            periodSeconds: {{ $v.probes.readiness.periodSeconds }}
            failureThreshold: {{ $v.probes.readiness.failureThreshold }}
          {{- $resources := $roleValues.resources | default $v.resources }}
          resources:
            {{- with $resources.requests }}
            requests:
              {{- toYaml . | nindent 14 }}
            {{- end }}
            limits:
              {{- with $resources.limits }}
              {{- toYaml . | nindent 14 }}
              {{- end }}
              {{- if eq $v.device "cuda" }}
              nvidia.com/gpu: {{ $v.gpu.count }}
              {{- end }}
          {{- if or $v.model.existingClaim $v.model.hostPath }}
          volumeMounts:
            - name: models
              mountPath: {{ $v.model.mountPath }}
              readOnly: true
          {{- end }}
        {{- if eq $role "decode" }}
        {{- $sidecar := $v.disaggregation.decode.routingSidecar }}
        - name: routing-sidecar
          image: {{ printf "%s:%s" $sidecar.image.repository $sidecar.image.tag | quote }}
          imagePullPolicy: {{ $sidecar.image.pullPolicy }}
          args:
            - {{ printf "--port=%v" $v.server.port | quote }}
            - {{ printf "--vllm-port=%v" $enginePort | quote }}
            # vLLM's kv_transfer_params flow (NixlConnector), which ortllm's TcpConnector speaks.
            - --kv-connector=nixlv2
            - --secure-proxy=false
            {{- range $sidecar.extraArgs }}
            - {{ . | quote }}
            {{- end }}
          ports:
            - name: sidecar-http
              containerPort: {{ $v.server.port }}
              protocol: TCP
          {{- with $sidecar.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
        {{- end }}
      {{- if or $v.model.existingClaim $v.model.hostPath }}
      volumes:
        - name: models
          {{- if $v.model.existingClaim }}
          persistentVolumeClaim:
            claimName: {{ $v.model.existingClaim }}
            readOnly: true
          {{- else }}
          hostPath:
            path: {{ $v.model.hostPath }}
            type: Directory
          {{- end }}
      {{- end }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}
