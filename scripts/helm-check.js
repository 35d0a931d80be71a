#!/usr/bin/env node
// Renders the chart with `helm template` (default values and every example) and validates each
// rendered object against the Kubernetes schemas shipped by kubernetes-models. helm cannot be
// installed from npm or Debian, so where it is not on PATH this says so and skips.
'use strict';
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const YAML = require('yaml');

const chartDir = path.join(__dirname, '..', 'helm', 'ortllm');
const which = spawnSync('sh', ['-c', 'command -v helm'], { encoding: 'utf8' });
if (which.status !== 0) {
  console.log('helm:check SKIPPED: no `helm` binary on PATH (install helm to render and validate the chart).');
  process.exit(0);
}

const validators = {
  'apps/v1/Deployment': () => require('kubernetes-models/apps/v1').Deployment,
  'v1/Service': () => require('kubernetes-models/v1').Service,
  'v1/Secret': () => require('kubernetes-models/v1').Secret,
  'v1/ConfigMap': () => require('kubernetes-models/v1').ConfigMap,
  'autoscaling/v2/HorizontalPodAutoscaler': () => require('kubernetes-models/autoscaling/v2').HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': () => require('kubernetes-models/policy/v1').PodDisruptionBudget,
  // ESM-only package: loaded with import().
  'monitoring.coreos.com/v1/ServiceMonitor': async () =>
    (await import('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1')).ServiceMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': async () =>
    (await import('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1')).PrometheusRule,
};

const valueFiles = [null, ...fs.readdirSync(path.join(chartDir, 'examples')).map((f) => path.join(chartDir, 'examples', f))];
async function main() {
let failures = 0;
for (const values of valueFiles) {
  const args = ['template', 'test-release', chartDir, ...(values ? ['-f', values] : [])];
  const label = values ? path.basename(values) : 'values.yaml';
  const rendered = execFileSync('helm', args, { encoding: 'utf8' });
  const docs = YAML.parseAllDocuments(rendered).map((d) => d.toJSON()).filter(Boolean);
  for (const doc of docs) {
    const key = `${doc.apiVersion}/${doc.kind}`;
    const model = validators[key];
    if (!model) {
      console.error(`${label}: no schema for ${key}`);
      failures++;
      continue;
    }
    try {
      const Model = await model();
      new Model(doc).validate();
      console.log(`${label}: ${key} ${doc.metadata.name} ok`);
    } catch (err) {
      console.error(`${label}: ${key} ${doc.metadata.name} INVALID: ${err.message}`);
      failures++;
    }
  }
}
if (failures) process.exit(1);
console.log('helm:check passed');
}
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
