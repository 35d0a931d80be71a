// Validates rendered Kubernetes objects: core kinds against kubernetes-models' schemas, the
// Inference Extension, Gateway API and KEDA kinds against the JSON Schemas in
// test/fixtures/k8s-schemas/ (written from their published API types), and an
// EndpointPickerConfig carried in a ConfigMap's data against its schema too.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const Ajv = require('ajv');
const YAML = require('yaml');

const SCHEMA_DIR = path.join(__dirname, '..', 'test', 'fixtures', 'k8s-schemas');
const ajv = new Ajv({ allErrors: true, strict: false });

const models = {
  'apps/v1/Deployment': () => require('kubernetes-models/apps/v1').Deployment,
  'v1/Service': () => require('kubernetes-models/v1').Service,
  'v1/Secret': () => require('kubernetes-models/v1').Secret,
  'v1/ConfigMap': () => require('kubernetes-models/v1').ConfigMap,
  'v1/ServiceAccount': () => require('kubernetes-models/v1').ServiceAccount,
  'rbac.authorization.k8s.io/v1/Role': () => require('kubernetes-models/rbac.authorization.k8s.io/v1').Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': () => require('kubernetes-models/rbac.authorization.k8s.io/v1').RoleBinding,
  'autoscaling/v2/HorizontalPodAutoscaler': () => require('kubernetes-models/autoscaling/v2').HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': () => require('kubernetes-models/policy/v1').PodDisruptionBudget,
  // ESM-only package: loaded with import().
  'monitoring.coreos.com/v1/ServiceMonitor': async () =>
    (await import('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1')).ServiceMonitor,
  'monitoring.coreos.com/v1/PodMonitor': async () =>
    (await import('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1')).PodMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': async () =>
    (await import('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1')).PrometheusRule,
};

const schemaValidators = new Map();
/** The JSON Schema validator for apiVersion/kind, from `<group>_<version>_<Kind>.json`; null if none. */
function schemaFor(apiVersion, kind) {
  const file = path.join(SCHEMA_DIR, `${apiVersion.replace('/', '_')}_${kind}.json`);
  if (!schemaValidators.has(file)) {
    schemaValidators.set(file, fs.existsSync(file) ? ajv.compile(JSON.parse(fs.readFileSync(file, 'utf8'))) : null);
  }
  return schemaValidators.get(file);
}

function schemaErrors(validate, doc, label) {
  if (validate(doc)) return [];
  return validate.errors.map((e) => `${label}: ${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
}

/** Objects embedded in a ConfigMap's data that have a schema of their own (by apiVersion/kind). */
function embeddedErrors(doc) {
  const errors = [];
  for (const [key, text] of Object.entries(doc.data ?? {})) {
    let inner;
    try {
      inner = YAML.parse(text);
    } catch {
      continue;
    }
    if (!inner || typeof inner.apiVersion !== 'string' || typeof inner.kind !== 'string') continue;
    const validate = schemaFor(inner.apiVersion, inner.kind);
    if (!validate) errors.push(`ConfigMap ${doc.metadata.name} data.${key}: no schema for ${inner.apiVersion}/${inner.kind}`);
    else errors.push(...schemaErrors(validate, inner, `ConfigMap ${doc.metadata.name} data.${key}`));
  }
  return errors;
}

/** Every problem with one rendered object (empty when it is valid). */
async function validateObject(doc) {
  const key = `${doc.apiVersion}/${doc.kind}`;
  const label = `${key} ${doc.metadata?.name}`;
  const model = models[key];
  if (model) {
    try {
      const Model = await model();
      new Model(doc).validate();
    } catch (err) {
      return [`${label}: ${err.message}`];
    }
    return doc.kind === 'ConfigMap' ? embeddedErrors(doc) : [];
  }
  const validate = schemaFor(doc.apiVersion, doc.kind);
  if (!validate) return [`${label}: no schema for ${key}`];
  return schemaErrors(validate, doc, label);
}

/** The objects of a multi-document YAML stream (empty documents dropped). */
function parseManifests(text) {
  return YAML.parseAllDocuments(text)
    .map((d) => d.toJSON())
    .filter(Boolean);
}

module.exports = { validateObject, parseManifests };
