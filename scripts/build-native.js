#!/usr/bin/env node
// Builds the optional native addons (native/ -> native/build/Release/ortllm_native.node: paged attention
// and the Q8_0 / bfloat16 kernels; ortllm_f32.node: the small float32 decoder; ortllm_json.node;
// ortllm_malloc.node)
// with node-gyp. Runs from `npm install` / `npm ci` (the package's install script) and never fails
// the install: without a C++ toolchain, Python or Node's headers the runner keeps its in-graph
// attention and says why at start-up. `node scripts/build-native.js --strict` exits 1 on failure.
'use strict';
const { spawnSync } = require('node:child_process');
const { existsSync } = require('node:fs');
const { homedir } = require('node:os');
const { dirname, join } = require('node:path');

const root = join(__dirname, '..');
const strict = process.argv.includes('--strict');

/** npm hands its bundled node-gyp to lifecycle scripts; outside npm, look beside npm itself. */
function nodeGyp() {
  const candidates = [
    process.env.npm_config_node_gyp,
    join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
    join(root, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
  ];
  return candidates.find((p) => p && existsSync(p)) ?? null;
}

/** Node's own headers (Debian/NodeSource/nvm installs put them under the prefix): no download needed. */
function localHeaders() {
  const prefix = join(dirname(process.execPath), '..');
  return existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? prefix : null;
}

/** Headers node-gyp fetched on an earlier install (its cache), which it reuses without a download. */
function cachedHeaders() {
  const devDir = process.env.npm_config_devdir || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'node-gyp');
  return existsSync(join(devDir, process.versions.node, 'include', 'node', 'node_api.h'));
}

function main() {
  if (process.env.ORTLLM_SKIP_NATIVE === '1') return console.log('build-native: skipped (ORTLLM_SKIP_NATIVE=1)');
  const gyp = nodeGyp();
  if (!gyp) return give('node-gyp was not found (it ships with npm)');
  const args = [gyp, 'rebuild', '--directory', join(root, 'native')];
  const headers = localHeaders();
  if (headers) args.push(`--nodedir=${headers}`);
  // Never let node-gyp download Node's headers from nodejs.org (installs may only reach the npm registry).
  else if (!cachedHeaders()) return give(`Node's headers are neither under ${join(dirname(process.execPath), '..', 'include', 'node')} nor in node-gyp's cache`);
  const run = spawnSync(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  if (run.status !== 0) return give(`node-gyp failed (exit ${run.status}):\n${(run.stderr || run.stdout || '').split('\n').slice(-15).join('\n')}`);
  try {
    const addon = require(join(root, 'native', 'build', 'Release', 'ortllm_native.node'));
    // setSimd clamps to the best kernel this CPU runs (portable, avx2 or avx512) and names it.
    console.log(`build-native: native attention built (${addon.setSimd('avx512')} kernel)`);
  } catch (err) {
    give(`the built addon does not load: ${err.message}`);
  }
}

function give(reason) {
  console.warn(`build-native: the native attention addon was not built: ${reason}\n` + 'build-native: ortllm still runs, with attention inside the ONNX graph (slower at long contexts).');
  if (strict) process.exit(1);
}

main();
