#!/usr/bin/env node
// Renders the chart (default values, every example, and the InferencePool / disaggregation /
// autoscaler variants) with `helm template`, or without helm with scripts/chart-render, checks the
// merged values against values.schema.json (helm does that itself), and validates every rendered
// object (scripts/k8s-validate.js). It skips only where neither renderer can run.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const Ajv = require('ajv');
const { findRenderer, renderChart, mergedValues } = require('./chart-renderer');
const { validateObject, parseManifests } = require('./k8s-validate');

const chartDir = path.join(__dirname, '..', 'helm', 'ortllm');
const schema = JSON.parse(fs.readFileSync(path.join(chartDir, 'values.schema.json'), 'utf8'));
const validateValues = new Ajv({ allErrors: true, strict: false }).compile(schema);

const examples = fs.readdirSync(path.join(chartDir, 'examples')).map((f) => ({ label: f, valuesFiles: [path.join(chartDir, 'examples', f)] }));
const variants = [
  { label: 'values.yaml' },
  ...examples,
  { label: 'inference pool + route', set: ['inferencePool.enabled=true', 'inferencePool.httpRoute.gatewayName=gw'] },
  { label: 'disaggregation', set: ['inferencePool.enabled=true', 'disaggregation.enabled=true'] },
  { label: 'hpa on the queue', set: ['autoscaling.enabled=true', 'autoscaling.targetRequestsWaiting=4', 'autoscaling.prometheusAdapterRules=true'] },
  {
    label: 'keda',
    set: ['autoscaling.enabled=true', 'autoscaling.engine=keda', 'autoscaling.targetRequestsWaiting=4', 'autoscaling.keda.prometheusAddress=http://prometheus:9090'],
  },
];

async function main() {
  const renderer = findRenderer();
  if (!renderer.name) {
    console.log(`helm:check SKIPPED: ${renderer.reason}.`);
    return;
  }
  console.log(`helm:check: rendering with ${renderer.name}`);
  let failures = 0;
  for (const variant of variants) {
    const values = mergedValues(renderer, 'test-release', chartDir, variant);
    if (values && !validateValues(values)) {
      console.error(`${variant.label}: values.schema.json: ${JSON.stringify(validateValues.errors)}`);
      failures++;
      continue;
    }
    const rendered = renderChart(renderer, 'test-release', chartDir, variant);
    if (!rendered.ok) {
      console.error(`${variant.label}: ${rendered.stderr.trim()}`);
      failures++;
      continue;
    }
    for (const doc of parseManifests(rendered.stdout)) {
      const errors = await validateObject(doc);
      for (const error of errors) console.error(`${variant.label}: INVALID ${error}`);
      if (errors.length === 0) console.log(`${variant.label}: ${doc.apiVersion}/${doc.kind} ${doc.metadata.name} ok`);
      failures += errors.length;
    }
  }
  if (failures) process.exit(1);
  console.log('helm:check passed');
}
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
