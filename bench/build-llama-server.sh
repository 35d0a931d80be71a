#!/usr/bin/env bash
# Builds llama.cpp's llama-server (the peer of `npm run bench -- --peer llama-server PATH`) from
# the source that ships inside the npm package node-llama-cpp (llama/gitRelease.bundle), into
# .bench-cache/llama.cpp/ (or $1). Never run by CI or npm install: ~15 minutes on 2 cores.
# GGML_NATIVE stays OFF: a native build includes AMX kernels that die with SIGILL on CPUs
# that report AMX but do not let the process use it; the instruction sets are chosen below instead.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${1:-$ROOT/.bench-cache/llama.cpp}"
VERSION="${NODE_LLAMA_CPP_VERSION:-3.22.1}"
mkdir -p "$DEST"
cd "$DEST"
if [ ! -d src/.git ]; then
  npm pack "node-llama-cpp@$VERSION" --silent >/dev/null
  tar -xzf "node-llama-cpp-$VERSION.tgz" package/llama/gitRelease.bundle
  git clone --quiet package/llama/gitRelease.bundle src
fi
# Each instruction set is switched on only where this CPU reports it: a build with AVX-512 on an
# AVX2-only CPU dies with SIGILL at its first quantized dot product.
cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { [[ "$cpu_flags" == *" $1 "* ]] && echo ON || echo OFF; }
cmake -S src -B build -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF \
  -DGGML_AVX2="$(has avx2)" -DGGML_FMA="$(has fma)" -DGGML_F16C="$(has f16c)" \
  -DGGML_AVX512="$(has avx512f)" -DGGML_AVX512_VNNI="$(has avx512_vnni)" -DGGML_AVX512_BF16="$(has avx512_bf16)"
cmake --build build --target llama-server llama-bench -j "$(nproc)"
echo "$DEST/build/bin/llama-server"
