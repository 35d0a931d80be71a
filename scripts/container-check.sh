#!/usr/bin/env bash
# npm run test:container — builds the CPU image (Dockerfile) with podman and checks it:
#   1. a local base image made offline: a Debian rootfs from debootstrap plus this host's node and
#      npm (base images cannot be pulled here), cached as $BASE_IMAGE for later runs;
#   2. `podman build` of the Dockerfile on that base;
#   3. the image's config (entrypoint, non-root user, port, health check, OCI labels) and its
#      filesystem: entry files present, production dependencies exactly, no dev dependencies,
#      tests, bench code, models or foreign onnxruntime binaries;
#   4. the server started from the image's root filesystem as the image says (user, workdir, env,
#      entrypoint) in a chroot, as PID 1 of its own PID and network namespaces (so the default
#      port 8000 is free), with a model mounted read-only at /models: /health, the image's own
#      HEALTHCHECK, a completion, then SIGTERM during a stream: new requests get 503, the stream
#      finishes, exit 0.
# Containers cannot be run in this sandbox (crun is refused), hence the chroot. Needs root, podman,
# debootstrap, util-linux, iproute2 and curl; not part of `npm test` (minutes, root).
# Env: DEBIAN_MIRROR, DEBIAN_SUITE, KEEP_IMAGE=1 (keep the built image), REBUILD_BASE=1.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

SUITE=${DEBIAN_SUITE:-bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
VERSION=$(node -p "require('./package.json').version")
NODE_VERSION=$(node -p 'process.version.slice(1)')
# -h: the layout with Node's headers (an older cached base without them cannot build the addon).
BASE_IMAGE=localhost/ortllm-check-base:${SUITE}-node${NODE_VERSION}-h
IMAGE=localhost/ortllm:${VERSION}-check
MODEL=${REPO}/../shared/models/stories260K.gguf
# 64 streams of 1000 tokens outlast the 503 probe by seconds even on a fast machine (one stream of
# 400 tokens ended before a loaded machine's first probe).
STREAM_TOKENS=1000
STREAM_N=64

pm() { podman --storage-driver vfs "$@"; }
step() { printf '\n== %s\n' "$*"; }
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "run as root (podman with the vfs driver, debootstrap, chroot)"
missing=()
for tool in podman debootstrap unshare nsenter chroot ip curl; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing with apt: podman debootstrap iproute2 curl (missing: ${missing[*]})"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman debootstrap iproute2 curl
fi

work=$(mktemp -d /tmp/ortllm-container-check.XXXXXX)
container=""
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  if [ -n "$container" ]; then pm rm -f "$container" >/dev/null 2>&1 || true; fi
  if [ "${KEEP_IMAGE:-}" != 1 ]; then pm rmi -f "$IMAGE" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# ---------------------------------------------------------------------------------------------
step "base image $BASE_IMAGE"
if [ "${REBUILD_BASE:-}" != 1 ] && pm image exists "$BASE_IMAGE"; then
  ok "cached (REBUILD_BASE=1 makes it again)"
else
  rootfs=$work/rootfs
  echo "debootstrap --variant=minbase $SUITE from $MIRROR"
  debootstrap --variant=minbase "$SUITE" "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log"; fail "debootstrap"; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  # The layout of the official node images: node and npm under /usr/local.
  install -D -m 0755 "$(readlink -f "$(command -v node)")" "$rootfs/usr/local/bin/node"
  mkdir -p "$rootfs/usr/local/lib/node_modules"
  cp -a "$(cd / && npm root -g)/npm" "$rootfs/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  # Node's headers, which the official images ship (the native addon builds against them offline).
  headers=$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")/include/node
  [ -f "$headers/node_api.h" ] || fail "Node's headers are not at $headers"
  mkdir -p "$rootfs/usr/local/include" && cp -a "$headers" "$rootfs/usr/local/include/node"
  # npm in the build trusts what this host's npm trusts (a TLS-inspecting proxy's CA, say).
  cafile=$(cd / && npm config get cafile 2>/dev/null || true)
  if [ -n "$cafile" ] && [ "$cafile" != null ] && [ -f "$cafile" ]; then
    install -D -m 0644 "$cafile" "$rootfs/usr/local/etc/npm-ca.crt"
    echo "cafile=/usr/local/etc/npm-ca.crt" >"$rootfs/usr/local/etc/npmrc"
  fi
  tar -C "$rootfs" -c . | pm import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["node"]' - "$BASE_IMAGE" >/dev/null
  rm -rf "$rootfs"
  ok "made from debootstrap + node v$NODE_VERSION"
fi

# ---------------------------------------------------------------------------------------------
step "podman build -f Dockerfile (BASE_IMAGE=$BASE_IMAGE)"
# chroot isolation: RUN steps without an OCI runtime. Docker format keeps HEALTHCHECK (OCI drops it).
started=$(date +%s)
pm build --isolation chroot --format docker --layers=false \
  --build-arg "BASE_IMAGE=$BASE_IMAGE" --build-arg "VERSION=$VERSION" \
  -f Dockerfile -t "$IMAGE" . >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log"; fail "podman build"; }
ok "built $IMAGE in $(($(date +%s) - started)) s"
pm image inspect "$IMAGE" >"$work/inspect.json"
pm image inspect "$BASE_IMAGE" >"$work/base-inspect.json"

# ---------------------------------------------------------------------------------------------
step "image config"
node - "$work/inspect.json" "$work/base-inspect.json" "$VERSION" <<'EOF'
const fs = require('fs');
const [inspectFile, baseFile, version] = process.argv.slice(2);
const image = JSON.parse(fs.readFileSync(inspectFile, 'utf8'))[0];
const base = JSON.parse(fs.readFileSync(baseFile, 'utf8'))[0];
const c = image.Config;
const errors = [];
const expect = (cond, what) => { if (cond) console.log(`ok: ${what}`); else errors.push(what); };
const mb = (n) => `${(n / 1e6).toFixed(0)} MB`;
expect(JSON.stringify(c.Entrypoint) === '["node","dist/src/main.js","serve"]', `entrypoint ${JSON.stringify(c.Entrypoint)}`);
expect(/^[1-9][0-9]*(:[0-9]+)?$/.test(c.User ?? ''), `user "${c.User}" is a numeric non-root uid`);
expect(c.WorkingDir === '/app', `workdir ${c.WorkingDir}`);
expect(Object.keys(c.ExposedPorts ?? {}).includes('8000/tcp'), 'exposes 8000/tcp');
const test = image.Healthcheck?.Test ?? c.Healthcheck?.Test ?? [];
expect(test[0] === 'CMD' && test.join(' ').includes('/health'), `healthcheck ${JSON.stringify(test.slice(0, 3))}…`);
expect(image.Labels?.['org.opencontainers.image.version'] === version, `label org.opencontainers.image.version=${image.Labels?.['org.opencontainers.image.version']} (package.json ${version})`);
expect(image.Labels?.['org.opencontainers.image.title'] === 'ortllm', 'label org.opencontainers.image.title=ortllm');
console.log(`size: image ${mb(image.Size)}, of which the base ${mb(base.Size)} and ortllm ${mb(image.Size - base.Size)}`);
if (errors.length) { for (const e of errors) console.error(`FAIL: ${e}`); process.exit(1); }
EOF
node -e '
const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[0].Config;
console.log(`USER_SPEC=${c.User.includes(":") ? c.User : c.User + ":" + c.User}`);
console.log(`WORKDIR=${c.WorkingDir}`);
' "$work/inspect.json" >"$work/config.env"
# shellcheck disable=SC1091
. "$work/config.env"
mapfile -t IMAGE_ENV < <(node -e 'for (const e of JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[0].Config.Env ?? []) console.log(e)' "$work/inspect.json")
mapfile -t ENTRYPOINT < <(node -e 'for (const a of JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[0].Config.Entrypoint) console.log(a)' "$work/inspect.json")
mapfile -t HEALTHCHECK < <(node -e '
const i = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[0];
for (const a of (i.Healthcheck ?? i.Config.Healthcheck).Test.slice(1)) console.log(a)' "$work/inspect.json")

# ---------------------------------------------------------------------------------------------
step "image filesystem"
# A container that is created, never started: its mount is the image's filesystem plus a
# writable layer, as a running container would see it.
container=$(pm create "$IMAGE")
root=$(pm mount "$container")
app=$root/app
for f in dist/src/main.js dist/src/engine/worker/engine-worker.js package.json \
  native/build/Release/ortllm_native.node \
  "node_modules/onnxruntime-node/bin/napi-v6/linux/$(node -p process.arch)/onnxruntime_binding.node"; do
  [ -f "$app/$f" ] || fail "missing /app/$f"
done
ok "entry files present (dist/src/main.js, the engine worker, package.json, the native attention addon, onnxruntime's binding)"
chroot "$root" /usr/local/bin/node -e "require('/app/native/build/Release/ortllm_native.node')" ||
  fail "the native attention addon does not load in the image"
ok "the native attention addon loads with the image's node"
for d in src test bench dist/bench dist/test openapi helm scripts .git .ci coverage .bench-cache; do
  [ ! -e "$app/$d" ] || fail "/app/$d is in the image"
done
ok "no sources, tests, bench code or peers, chart, scripts"
models=$(find "$app" -type f \( -name '*.gguf' -o -name '*.onnx' -o -name '*.safetensors' \) | head -5)
[ -z "$models" ] || fail "model files in the image: $models"
ok "no model files (test fixtures) under /app"
platforms=$(cd "$app/node_modules/onnxruntime-node/bin/napi-v6" && find . -mindepth 2 -maxdepth 2 -type d | sort | tr '\n' ' ')
[ "$platforms" = "./linux/$(node -p process.arch) " ] || fail "onnxruntime-node binaries for: $platforms"
ok "onnxruntime-node binaries for linux/$(node -p process.arch) only"
node - "$REPO/package-lock.json" "$app" <<'EOF'
// Against the lock file: every dev-only package absent, every production package present,
// nothing installed that the lock does not name.
const fs = require('fs');
const path = require('path');
const [lockFile, app] = process.argv.slice(2);
const packages = JSON.parse(fs.readFileSync(lockFile, 'utf8')).packages;
const errors = [];
let dev = 0, prod = 0;
for (const [where, meta] of Object.entries(packages)) {
  if (!where) continue;
  const present = fs.existsSync(path.join(app, where, 'package.json'));
  if (meta.dev) { dev++; if (present) errors.push(`dev dependency in the image: ${where}`); }
  else if (!meta.optional && !meta.devOptional) { prod++; if (!present) errors.push(`production dependency missing: ${where}`); }
}
const top = path.join(app, 'node_modules');
for (const name of fs.readdirSync(top)) {
  if (name.startsWith('.')) continue;
  const names = name.startsWith('@') ? fs.readdirSync(path.join(top, name)).map((n) => `${name}/${n}`) : [name];
  for (const n of names) if (!packages[`node_modules/${n}`]) errors.push(`not in package-lock.json: node_modules/${n}`);
}
if (errors.length) { for (const e of errors.slice(0, 20)) console.error(`FAIL: ${e}`); process.exit(1); }
console.log(`ok: ${prod} production packages present, none of the ${dev} dev-only packages`);
EOF
echo "size: /app $(du -sh "$app" | cut -f1) (node_modules $(du -sh "$app/node_modules" | cut -f1), dist $(du -sh "$app/dist" | cut -f1))"
uid=${USER_SPEC%%:*}
passwd_line=$(awk -F: -v uid="$uid" '$3 == uid' "$root/etc/passwd")
[ -n "$passwd_line" ] || fail "uid $uid has no /etc/passwd entry in the image"
ok "uid $uid is ${passwd_line%%:*} in the image's /etc/passwd"
if chroot --userspec="$USER_SPEC" "$root" /usr/bin/test -w /app/dist/src/main.js; then fail "the app files are writable by uid $uid"; fi
ok "the app files are read-only for uid $uid"

# ---------------------------------------------------------------------------------------------
step "server from the image's filesystem (chroot, own PID + network namespace)"
if [ -f "$MODEL" ]; then
  mkdir -p "$root/models"
  : >"$root/models/stories260K.gguf"
  model_args=(/models/stories260K.gguf)
  model_mount="mount --bind -o ro '$MODEL' '$root/models/stories260K.gguf'"
  echo "model: $MODEL, mounted read-only at /models/stories260K.gguf"
else
  model_args=(--load-format dummy)
  model_mount=":"
  echo "model: $MODEL not found, serving the dummy model (--load-format dummy)"
fi
# What `docker run IMAGE /models/...` does, minus cgroups: enter.sh mounts /proc, /dev and the
# model into the image's filesystem, then execs chroot with the image's user, env and workdir.
# Run under `unshare --pid --fork`, the shell unshare forks execs chroot, env, then node: node is
# PID 1 of its namespace, as in a container.
enter=$work/enter.sh
cat >"$enter" <<EOF
#!/usr/bin/env bash
set -e
ip link set lo up
mount -t proc proc '$root/proc'
mount --rbind /dev '$root/dev'
$model_mount
exec chroot --userspec='$USER_SPEC' '$root' /usr/bin/env -i -C '$WORKDIR' $(printf '%q ' "${IMAGE_ENV[@]}") "\$@"
EOF
chmod +x "$enter"
server_log=$work/server.log
unshare --pid --fork --net --mount --propagation private -- "$enter" "${ENTRYPOINT[@]}" "${model_args[@]}" >"$server_log" 2>&1 &
unshare_pid=$!
for _ in $(seq 1 50); do
  server_pid=$(ps -o pid= --ppid "$unshare_pid" | tr -d ' ' || true)
  [ -n "$server_pid" ] && break
  sleep 0.1
done
[ -n "$server_pid" ] || fail "the server process did not start"
in_netns() { nsenter --net="/proc/$server_pid/ns/net" "$@"; }
for _ in $(seq 1 600); do
  grep -q 'ortllm serving' "$server_log" && break
  kill -0 "$unshare_pid" 2>/dev/null || { cat "$server_log"; fail "the server exited during start-up"; }
  sleep 0.5
done
grep 'ortllm serving' "$server_log" || { cat "$server_log"; fail "no ready line after 300 s"; }
ns_pid=$(awk '/^NSpid:/ {print $NF}' "/proc/$server_pid/status")
comm=$(cat "/proc/$server_pid/comm")
[ "$ns_pid" = 1 ] && [ "$comm" = node ] || fail "PID 1 of the namespace is '$comm' (pid $ns_pid), not node"
ok "node is PID 1, running as uid $(awk '/^Uid:/ {print $2}' "/proc/$server_pid/status")"

health=$(in_netns curl -sS -o /dev/null -w '%{http_code}' http://127.0.0.1:8000/health || true)
[ "$health" = 200 ] || fail "/health answered $health"
ok "GET /health on the default port 8000: 200"
in_netns unshare --mount --propagation private -- "$enter" "${HEALTHCHECK[@]}" ||
  fail "the image's HEALTHCHECK command failed against the running server"
ok "the image's HEALTHCHECK command passes"
completion=$(in_netns curl -sS -H 'content-type: application/json' \
  -d '{"prompt": "Once upon a time", "max_tokens": 8}' http://127.0.0.1:8000/v1/completions)
echo "$completion" | grep -q '"finish_reason"' || fail "completion: $completion"
ok "POST /v1/completions: $(echo "$completion" | node -e 'const r = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log(JSON.stringify(r.choices[0].text), r.usage.completion_tokens, "tokens")')"

# SIGTERM as `docker stop` / the kubelet sends it: to PID 1, from outside, mid-stream.
stream=$work/stream.txt
in_netns curl -sSN --max-time 300 -H 'content-type: application/json' \
  -d "{\"prompt\": \"Once upon a time\", \"max_tokens\": $STREAM_TOKENS, \"ignore_eos\": true, \"n\": $STREAM_N, \"stream\": true}" \
  http://127.0.0.1:8000/v1/completions >"$stream" 2>&1 &
curl_pid=$!
for _ in $(seq 1 200); do grep -q '^data: ' "$stream" && break; sleep 0.05; done
grep -q '^data: ' "$stream" || fail "the stream did not start"
grep -q 'data: \[DONE\]' "$stream" && fail "the stream had finished before SIGTERM: raise STREAM_TOKENS"
kill -TERM "$server_pid"
ok "SIGTERM sent to PID 1 while the stream was open"
draining=""
for _ in $(seq 1 100); do
  status=$(in_netns curl -s -o /dev/null -w '%{http_code}' --max-time 2 http://127.0.0.1:8000/health 2>/dev/null || true)
  if [ "$status" = 503 ]; then draining=yes; break; fi
  sleep 0.05
done
[ -n "$draining" ] || fail "new requests were not answered 503 while draining after SIGTERM"
ok "new requests answered 503 while the stream drains"
wait "$curl_pid" || true
set +e
wait "$unshare_pid"
code=$?
set -e
server_pid=""
grep -q 'data: \[DONE\]' "$stream" && grep -q '"finish_reason":"length"' "$stream" ||
  { tail -c 600 "$stream"; fail "the in-flight stream did not finish"; }
ok "the in-flight stream finished ($(grep -c '^data: ' "$stream") frames, finish_reason length, [DONE])"
[ "$code" = 0 ] || { tail -20 "$server_log"; fail "the server exited $code after SIGTERM"; }
grep -q 'SIGTERM: draining' "$server_log" || { tail -20 "$server_log"; fail "the server did not log its SIGTERM drain"; }
grep -E 'SIGTERM|stopped' "$server_log" | sed 's/^/  log: /'
ok "exit code 0 after draining"

unshare --net --mount --propagation private -- "$enter" "${HEALTHCHECK[@]}" &&
  fail "the HEALTHCHECK command passes with no server"
ok "the HEALTHCHECK command fails with no server listening"

step "container check passed: $IMAGE ($(node -e 'console.log((JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[0].Size / 1e6).toFixed(0))' "$work/inspect.json") MB)"
