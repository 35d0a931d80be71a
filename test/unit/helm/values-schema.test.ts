// The chart's values.yaml and every example values file must satisfy values.schema.json
// (helm enforces the schema at install time; no helm binary exists on these machines).
import Ajv from 'ajv';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

const chartDir = join(__dirname, '..', '..', '..', 'helm', 'ortllm');
const schema = JSON.parse(readFileSync(join(chartDir, 'values.schema.json'), 'utf8'));
const defaults = parse(readFileSync(join(chartDir, 'values.yaml'), 'utf8'));
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

/** helm merges a user values file over values.yaml before validating. */
function merge(base: any, over: any): any {
  if (typeof base !== 'object' || base === null || Array.isArray(base)) return over;
  if (typeof over !== 'object' || over === null || Array.isArray(over)) return over;
  const out: any = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = k in base ? merge(base[k], v) : v;
  return out;
}

describe('helm values schema', () => {
  it('accepts values.yaml', () => {
    expect(validate(defaults)).toBe(true);
  });

  const examples = readdirSync(join(chartDir, 'examples'));
  it.each(examples)('accepts examples/%s', (file) => {
    const values = merge(defaults, parse(readFileSync(join(chartDir, 'examples', file), 'utf8')));
    const ok = validate(values);
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
  });

  it.each([
    ['the InferencePool with a route', { inferencePool: { enabled: true, httpRoute: { gatewayName: 'gw', requestTimeout: '1h30m' } } }],
    ['disaggregation', { inferencePool: { enabled: true }, disaggregation: { enabled: true, decode: { replicas: 2, enginePort: 8300 } } }],
    ['KEDA on the queue', { autoscaling: { enabled: true, engine: 'keda', targetRequestsWaiting: 2.5, keda: { prometheusAddress: 'http://prom:9090' } } }],
  ])('accepts %s', (_name, override) => {
    const values = merge(defaults, override);
    const ok = validate(values);
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
  });

  it.each([
    ['an unknown device', { device: 'tpu' }],
    ['an API key enabled with no value or secret', { apiKey: { enabled: true, value: '', existingSecret: '' } }],
    ['a port out of range', { server: { port: 70000 } }],
    ['a misspelled top-level key', { replicas: 2 }],
    ['a bad scrape interval', { serviceMonitor: { enabled: true, interval: 'often' } }],
    ['an unknown endpoint picker failure mode', { inferencePool: { enabled: true, endpointPicker: { failureMode: 'FailSoft' } } }],
    ['the endpoint picker with an API key', { inferencePool: { enabled: true }, apiKey: { enabled: true, value: 'k' } }],
    ['disaggregation without the InferencePool', { disaggregation: { enabled: true } }],
    ['a KV port out of range', { inferencePool: { enabled: true }, disaggregation: { enabled: true, kvPort: 0 } }],
    ['a misspelled disaggregation key', { disaggregation: { decode: { replica: 2 } } }],
    ['a route timeout that is not a Gateway API duration', { inferencePool: { httpRoute: { requestTimeout: '5 minutes' } } }],
    ['an unknown autoscaler', { autoscaling: { enabled: true, engine: 'vpa' } }],
    ['KEDA on the queue without a Prometheus address', { autoscaling: { enabled: true, engine: 'keda', targetRequestsWaiting: 4 } }],
    ['autoscaling with no signal', { autoscaling: { enabled: true, targetCPUUtilizationPercentage: null } }],
  ])('rejects %s', (_name, override) => {
    expect(validate(merge(defaults, override))).toBe(false);
  });
});
