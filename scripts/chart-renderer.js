// Renders a chart as `helm template` does: with `helm` when it is on PATH, otherwise with
// scripts/chart-render (a Go program over text/template + sprig, the engine helm uses), built on
// first use from Debian's packages into .cache/chart-render/. Used by helm-check.js and the tests.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { GOPATH, goBuild } = require('./go-build');

const ROOT = path.join(__dirname, '..');
const SOURCE_DIR = path.join(__dirname, 'chart-render');
const CACHE_DIR = path.join(ROOT, '.cache', 'chart-render');
const BINARY = path.join(CACHE_DIR, 'chart-render');
/** What building chart-render needs: Debian's golang-go and the Go packages it imports. */
const GO_NEEDS = [
  ['golang-go', null],
  ['golang-github-masterminds-sprig-dev', `${GOPATH}/src/github.com/Masterminds/sprig`],
  ['golang-gopkg-yaml.v3-dev', `${GOPATH}/src/gopkg.in/yaml.v3`],
  ['golang-gopkg-yaml.v2-dev', `${GOPATH}/src/gopkg.in/yaml.v2`],
];

function onPath(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).status === 0;
}

/** The Debian packages chart-render still lacks (empty when it can be built). */
function missingGoPackages() {
  return GO_NEEDS.filter(([, dir]) => (dir ? !fs.existsSync(dir) : !onPath('go'))).map(([pkg]) => pkg);
}

function buildChartRender() {
  return goBuild(SOURCE_DIR, BINARY);
}

/**
 * The renderer to use: { name: 'helm' | 'chart-render', binary } or { name: null, reason }.
 * ORTLLM_CHART_RENDERER=chart-render picks chart-render even where helm exists.
 */
function findRenderer() {
  if (process.env.ORTLLM_CHART_RENDERER !== 'chart-render' && onPath('helm')) return { name: 'helm', binary: 'helm' };
  const missing = missingGoPackages();
  if (missing.length) return { name: null, reason: `no helm on PATH, and building scripts/chart-render needs ${missing.join(' ')} (apt)` };
  return { name: 'chart-render', binary: buildChartRender() };
}

function flagArgs({ valuesFiles = [], set = [], namespace, apiVersions = [], showOnly = [] }) {
  return [
    ...valuesFiles.flatMap((f) => ['-f', f]),
    ...set.flatMap((s) => ['--set', s]),
    ...(namespace ? ['--namespace', namespace] : []),
    ...apiVersions.flatMap((a) => ['--api-versions', a]),
    ...showOnly.flatMap((s) => ['--show-only', s]),
  ];
}

/** `template RELEASE CHART [flags]`: { ok, stdout, stderr }. */
function renderChart(renderer, release, chartDir, options = {}) {
  const run = spawnSync(renderer.binary, ['template', release, chartDir, ...flagArgs(options)], { encoding: 'utf8' });
  return { ok: run.status === 0, stdout: run.stdout, stderr: run.stderr };
}

/**
 * The merged .Values (chart defaults, -f files, --set), for checking against values.schema.json.
 * helm checks the schema itself while rendering and has no command for this: null there.
 */
function mergedValues(renderer, release, chartDir, options = {}) {
  if (renderer.name !== 'chart-render') return null;
  const run = spawnSync(renderer.binary, ['values', release, chartDir, ...flagArgs(options)], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(run.stderr);
  return JSON.parse(run.stdout);
}

module.exports = { findRenderer, renderChart, mergedValues, missingGoPackages };
