# ortllm, CPU image. `docker run IMAGE MODEL [flags]` reads like `vllm serve MODEL [flags]`.
#   docker build --build-arg VERSION=$(node -p "require('./package.json').version") -t ortllm:0.1.0 .
#   docker run -p 8000:8000 -v /srv/models:/models:ro ortllm:0.1.0 /models/model.gguf
# BASE_IMAGE must be Debian-like with node (>= 20) and npm on PATH; scripts/container-check.sh
# swaps in one made offline.
ARG BASE_IMAGE=node:20-bookworm-slim

# Production dependencies only. package.json's allowScripts denies every dependency install
# script (onnxruntime-node's would download the CUDA providers); --ignore-scripts applies the same
# policy with npm 10, which ignores allowScripts (the node:20 images ship it). onnxruntime-node
# ships binaries for every OS and CPU: keep this platform's, which saves over 200 MB.
FROM ${BASE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && bin=node_modules/onnxruntime-node/bin/napi-v6 \
 && find "$bin" -mindepth 2 -maxdepth 2 -type d ! -path "$bin/linux/$(node -p process.arch)" -exec rm -rf {} + \
 && find "$bin" -mindepth 1 -maxdepth 1 -type d -empty -delete \
 && test -f "$bin/linux/$(node -p process.arch)/onnxruntime_binding.node"

FROM ${BASE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build
# The native paged-attention addon (the install script --ignore-scripts skipped), with Debian's
# toolchain in this stage only: the runtime stage copies the built .node file, not the compiler.
# --strict: an image without the addon would run attention inside the ONNX graph, 2-2.5x slower
# at depth, so a failed build fails the image instead of shipping the slow path silently.
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends g++ make python3 \
 && rm -rf /var/lib/apt/lists/*
COPY native ./native
COPY scripts/build-native.js ./scripts/
RUN node scripts/build-native.js --strict

FROM ${BASE_IMAGE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="ortllm" \
      org.opencontainers.image.description="OpenAI-compatible LLM inference server (vLLM's API) on onnxruntime-node, CPU" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="MIT"
# A fixed numeric uid, so Kubernetes' runAsNonRoot can check it. The app files stay root-owned:
# the server only reads them.
RUN groupadd --system --gid 10001 ortllm \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin ortllm
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/native/build/Release ./native/build/Release
COPY package.json ./
USER 10001:10001
EXPOSE 8000
# /health answers without the API key. Port 8000 is the default; a different --port needs its
# own check (Kubernetes probes come from the chart, not from this).
HEALTHCHECK --interval=30s --timeout=5s --start-period=300s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8000/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1: the server installs its own SIGTERM/SIGINT handlers (drain, then exit 0), and
# it starts no child processes, so no init is needed to forward signals or reap.
ENTRYPOINT ["node", "dist/src/main.js", "serve"]
