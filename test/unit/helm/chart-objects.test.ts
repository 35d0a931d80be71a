// The chart rendered as an InferencePool backend, with prefill/decode disaggregation and with each
// autoscaler: every object valid against its schema, the pool selecting the pods it should, the
// endpoint picker configured with metrics ortllm serves, and the refused combinations refused.
import Ajv from 'ajv';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { mergedValues, renderChart, type RenderOptions } from '../../../scripts/chart-renderer';
import { parseManifests, validateObject, type K8sObject } from '../../../scripts/k8s-validate';
import { chartRenderer } from '../../helpers/chart';

const { renderer, describe: describeRendering } = chartRenderer();
const ROOT = join(__dirname, '..', '..', '..');
const CHART = join(ROOT, 'helm', 'ortllm');
const validateValues = new Ajv({ allErrors: true, strict: false }).compile(JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')));

const POOL = ['inferencePool.enabled=true'];
const PD = [...POOL, 'disaggregation.enabled=true'];

function render(options: RenderOptions): K8sObject[] {
  const values = mergedValues(renderer!, 'rel', CHART, options);
  if (values) expect(validateValues(values) ? [] : validateValues.errors).toEqual([]);
  const out = renderChart(renderer!, 'rel', CHART, options);
  expect(out.stderr).toBe('');
  return parseManifests(out.stdout);
}

const kinds = (docs: K8sObject[]) => docs.map((d) => `${d.kind}/${d.metadata.name}`).sort();
const find = (docs: K8sObject[], kind: string, name: string) => docs.find((d) => d.kind === kind && d.metadata.name === name)!;

async function expectAllValid(docs: K8sObject[]): Promise<void> {
  const errors = (await Promise.all(docs.map(validateObject))).flat();
  expect(errors).toEqual([]);
}

/** Label selection as Kubernetes does it: every matchLabels entry present on the pod. */
const selects = (matchLabels: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(matchLabels).every(([k, v]) => labels[k] === v);

const podLabels = (deployment: K8sObject): Record<string, string> => deployment.spec.template.metadata.labels;
const args = (deployment: K8sObject, container: string): string[] =>
  deployment.spec.template.spec.containers.find((c: { name: string }) => c.name === container).args;

/** The vllm: metric names src/modules/metrics registers. */
function servedMetricNames(): Set<string> {
  const dir = join(ROOT, 'src', 'modules', 'metrics');
  const names = new Set<string>();
  for (const file of readdirSync(dir)) {
    for (const m of readFileSync(join(dir, file), 'utf8').matchAll(/name: '(vllm:[a-z_]+)'|\(\s*'(vllm:[a-z_]+)'/g)) names.add(m[1] ?? m[2]);
  }
  return names;
}

describeRendering('helm chart objects', () => {
  it('renders no InferencePool objects by default, and every object is valid', async () => {
    const docs = render({});
    expect(kinds(docs)).toEqual(['Deployment/rel-ortllm', 'Service/rel-ortllm']);
    await expectAllValid(docs);
  });

  it('catches an invalid object (the validators are not blind)', async () => {
    const [pool] = render({ set: POOL, showOnly: ['templates/inferencepool.yaml'] });
    expect(await validateObject({ ...pool, spec: { ...pool.spec, targetPorts: [] } })).not.toEqual([]);
    const [deployment] = render({ showOnly: ['templates/deployment.yaml'] });
    expect(await validateObject({ ...deployment, spec: { ...deployment.spec, replicas: 'two' } })).not.toEqual([]);
  });

  it('with inferencePool.enabled: the pool, its endpoint picker (Deployment, Service, RBAC, config) and a route', async () => {
    const docs = render({ set: [...POOL, 'inferencePool.httpRoute.gatewayName=gw'] });
    expect(kinds(docs)).toEqual([
      'ConfigMap/rel-ortllm-epp',
      'Deployment/rel-ortllm',
      'Deployment/rel-ortllm-epp',
      'HTTPRoute/rel-ortllm',
      'InferencePool/rel-ortllm',
      'Role/rel-ortllm-epp',
      'RoleBinding/rel-ortllm-epp',
      'Service/rel-ortllm',
      'Service/rel-ortllm-epp',
      'ServiceAccount/rel-ortllm-epp',
    ]);
    await expectAllValid(docs);

    const pool = find(docs, 'InferencePool', 'rel-ortllm');
    expect(selects(pool.spec.selector.matchLabels, podLabels(find(docs, 'Deployment', 'rel-ortllm')))).toBe(true);
    expect(selects(pool.spec.selector.matchLabels, podLabels(find(docs, 'Deployment', 'rel-ortllm-epp')))).toBe(false);
    expect(pool.spec.targetPorts).toEqual([{ number: 8000 }]);
    expect(pool.spec.endpointPickerRef).toEqual({ kind: 'Service', name: 'rel-ortllm-epp', port: { number: 9002 }, failureMode: 'FailOpen' });

    const eppService = find(docs, 'Service', 'rel-ortllm-epp');
    expect(eppService.spec.ports.map((p: { port: number }) => p.port)).toEqual([9002, 9090]);
    expect(selects(eppService.spec.selector, podLabels(find(docs, 'Deployment', 'rel-ortllm-epp')))).toBe(true);
    const epp = find(docs, 'Deployment', 'rel-ortllm-epp');
    expect(args(epp, 'epp')).toEqual(expect.arrayContaining(['--pool-name', 'rel-ortllm', '--config-file', '/config/epp-config.yaml', '--grpc-port=9002', '--grpc-health-port=9003']));
    expect(epp.spec.template.spec.serviceAccountName).toBe('rel-ortllm-epp');
    const role = find(docs, 'Role', 'rel-ortllm-epp');
    expect(role.rules).toEqual(
      expect.arrayContaining([
        { apiGroups: [''], resources: ['pods'], verbs: ['get', 'watch', 'list'] },
        { apiGroups: ['inference.networking.k8s.io'], resources: ['inferencepools'], verbs: ['get', 'watch', 'list'] },
      ]),
    );

    const route = find(docs, 'HTTPRoute', 'rel-ortllm');
    expect(route.spec.parentRefs).toEqual([{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw' }]);
    expect(route.spec.rules[0].backendRefs).toEqual([{ group: 'inference.networking.k8s.io', kind: 'InferencePool', name: 'rel-ortllm' }]);
  });

  it('gives the endpoint picker the metric names ortllm serves, and the LoRA metric only with --enable-lora', () => {
    const configOf = (docs: K8sObject[]) => parse(find(docs, 'ConfigMap', 'rel-ortllm-epp').data['epp-config.yaml']);
    const config = configOf(render({ set: POOL }));
    const extractor = config.plugins.find((p: { type: string }) => p.type === 'core-metrics-extractor');
    const engine = extractor.parameters.engineConfigs.find((e: { name: string }) => e.name === extractor.parameters.defaultEngine);
    const specs = [engine.queuedRequestsSpec, engine.runningRequestsSpec, engine.kvUsageSpec, engine.cacheInfoSpec];
    expect(specs).toEqual(['vllm:num_requests_waiting', 'vllm:num_requests_running', 'vllm:kv_cache_usage_perc', 'vllm:cache_config_info']);
    const served = servedMetricNames();
    for (const spec of specs) expect(served).toContain(spec);
    expect(engine.loraSpec).toBe('');
    const lora = configOf(render({ set: [...POOL, 'server.extraArgs={--enable-lora}'] }));
    const loraSpec = lora.plugins.find((p: { type: string }) => p.type === 'core-metrics-extractor').parameters.engineConfigs[0].loraSpec;
    expect(loraSpec).toBe('vllm:lora_requests_info');
    expect(served).toContain(loraSpec);
    expect(config.schedulingProfiles.map((p: { name: string }) => p.name)).toEqual(['default']);
    expect(config.plugins.map((p: { type: string }) => p.type)).toEqual(expect.arrayContaining(['queue-scorer', 'kv-cache-utilization-scorer', 'prefix-cache-scorer', 'max-score-picker', 'single-profile-handler']));
  });

  it('with disaggregation: prefill and decode Deployments, both in the pool, with the KV connector and llm-d roles', async () => {
    const docs = render({ set: [...PD, 'serviceMonitor.enabled=true', 'disaggregation.kvPort=5601', 'disaggregation.prefill.replicas=2', 'disaggregation.decode.replicas=3'] });
    await expectAllValid(docs);
    expect(docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'rel-ortllm')).toBeUndefined();
    const prefill = find(docs, 'Deployment', 'rel-ortllm-prefill');
    const decode = find(docs, 'Deployment', 'rel-ortllm-decode');
    const pool = find(docs, 'InferencePool', 'rel-ortllm');
    for (const [deployment, role, replicas] of [[prefill, 'prefill', 2], [decode, 'decode', 3]] as const) {
      expect(podLabels(deployment)['llm-d.ai/role']).toBe(role);
      expect(selects(pool.spec.selector.matchLabels, podLabels(deployment))).toBe(true);
      expect(selects(deployment.spec.selector.matchLabels, podLabels(deployment))).toBe(true);
      expect(deployment.spec.replicas).toBe(replicas);
      const ortllm = args(deployment, 'ortllm');
      const config = JSON.parse(ortllm[ortllm.indexOf('--kv-transfer-config') + 1]);
      expect(config).toEqual({ kv_connector: 'TcpConnector', kv_role: 'kv_both', kv_port: 5601, kv_ip: '$(POD_IP)' });
      const ports = deployment.spec.template.spec.containers.find((c: { name: string }) => c.name === 'ortllm').ports;
      expect(ports).toContainEqual({ name: 'kv', containerPort: 5601, protocol: 'TCP' });
    }
    // Prefill pods serve the pool's port themselves; decode pods through the routing sidecar.
    expect(args(prefill, 'ortllm')).toEqual(expect.arrayContaining(['--port', '8000']));
    expect(args(decode, 'ortllm')).toEqual(expect.arrayContaining(['--port', '8200']));
    expect(args(decode, 'routing-sidecar')).toEqual(['--port=8000', '--vllm-port=8200', '--kv-connector=nixlv2', '--secure-proxy=false']);
    expect(prefill.spec.template.spec.containers).toHaveLength(1);
    // The plain Service reaches decode pods only, through their sidecar; the PodMonitor every ortllm.
    const service = find(docs, 'Service', 'rel-ortllm');
    expect(selects(service.spec.selector, podLabels(decode))).toBe(true);
    expect(selects(service.spec.selector, podLabels(prefill))).toBe(false);
    const portNamed = (deployment: K8sObject, name: string) =>
      deployment.spec.template.spec.containers.flatMap((c: { name: string; ports: { name: string }[] }) => c.ports.map((p) => ({ container: c.name, ...p }))).find((p: { name: string }) => p.name === name);
    expect(portNamed(decode, service.spec.ports[0].targetPort)).toMatchObject({ container: 'routing-sidecar', containerPort: 8000 });
    const monitor = find(docs, 'PodMonitor', 'rel-ortllm');
    expect(docs.some((d) => d.kind === 'ServiceMonitor')).toBe(false);
    for (const deployment of [prefill, decode]) {
      expect(selects(monitor.spec.selector.matchLabels, podLabels(deployment))).toBe(true);
      expect(portNamed(deployment, monitor.spec.podMetricsEndpoints[0].port)).toMatchObject({ container: 'ortllm' });
    }

    const config = parse(find(docs, 'ConfigMap', 'rel-ortllm-epp').data['epp-config.yaml']);
    const types = config.plugins.map((p: { type: string }) => p.type);
    expect(types).toEqual(expect.arrayContaining(['prefill-filter', 'decode-filter', 'prefix-based-pd-decider', 'disagg-profile-handler']));
    expect(types).not.toContain('single-profile-handler');
    const handler = config.plugins.find((p: { type: string }) => p.type === 'disagg-profile-handler');
    expect(handler.parameters).toEqual({ deciders: { prefill: 'prefix-based-pd-decider' } });
    const profiles = Object.fromEntries(config.schedulingProfiles.map((p: { name: string; plugins: { pluginRef: string }[] }) => [p.name, p.plugins.map((x) => x.pluginRef)]));
    expect(Object.keys(profiles)).toEqual(['prefill', 'decode']);
    expect(profiles.prefill[0]).toBe('prefill-filter');
    expect(profiles.decode[0]).toBe('decode-filter');
    // Every reference names a plugin (the picker refuses the config otherwise).
    const names = new Set(config.plugins.map((p: { type: string; name?: string }) => p.name ?? p.type));
    for (const refs of Object.values(profiles) as string[][]) for (const ref of refs) expect(names).toContain(ref);
    for (const source of config.dataLayer.sources) {
      for (const ref of [source.pluginRef, ...source.extractors.map((e: { pluginRef: string }) => e.pluginRef)]) expect(names).toContain(ref);
    }
    expect(names).toContain(handler.parameters.deciders.prefill);
  });

  it('autoscales on the queue with an HPA (Pods metric from the Prometheus adapter), one per Deployment', async () => {
    const docs = render({ set: [...PD, 'autoscaling.enabled=true', 'autoscaling.targetRequestsWaiting=4', 'autoscaling.prometheusAdapterRules=true'] });
    await expectAllValid(docs);
    for (const name of ['rel-ortllm-prefill', 'rel-ortllm-decode']) {
      const hpa = find(docs, 'HorizontalPodAutoscaler', name);
      expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name });
      expect(hpa.spec.metrics).toContainEqual({ type: 'Pods', pods: { metric: { name: 'vllm_num_requests_waiting' }, target: { type: 'AverageValue', averageValue: '4' } } });
      expect(find(docs, 'Deployment', name).spec.replicas).toBeUndefined();
    }
    const rules = parse(find(docs, 'ConfigMap', 'rel-ortllm-prometheus-adapter-rules').data['config.yaml']).rules;
    expect(rules[0].seriesQuery).toMatch(/^vllm:num_requests_waiting\{/);
    expect(rules[0].name.as).toBe('vllm_num_requests_waiting');
    expect(docs.some((d) => d.kind === 'ScaledObject')).toBe(false);
  });

  it('autoscales with KEDA: a ScaledObject whose prometheus trigger sums the Deployment\'s queue', async () => {
    const docs = render({
      set: ['autoscaling.enabled=true', 'autoscaling.engine=keda', 'autoscaling.targetRequestsWaiting=3', 'autoscaling.targetCPUUtilizationPercentage=null', 'autoscaling.keda.prometheusAddress=http://prom:9090'],
      namespace: 'llm',
    });
    await expectAllValid(docs);
    expect(docs.some((d) => d.kind === 'HorizontalPodAutoscaler')).toBe(false);
    const scaled = find(docs, 'ScaledObject', 'rel-ortllm');
    expect(scaled.spec.scaleTargetRef.name).toBe('rel-ortllm');
    expect(scaled.spec.triggers).toEqual([
      {
        type: 'prometheus',
        metricType: 'AverageValue',
        metadata: { serverAddress: 'http://prom:9090', query: 'sum(vllm:num_requests_waiting{namespace="llm",pod=~"rel-ortllm-[a-z0-9]+-[a-z0-9]+"})', threshold: '3' },
      },
    ]);
  });

  it.each([
    ['an API key with the endpoint picker (it scrapes /metrics without one)', [...POOL, 'apiKey.enabled=true', 'apiKey.value=k'], /endpoint picker scrapes \/metrics without a key/],
    ['disaggregation without the InferencePool', ['disaggregation.enabled=true'], /disaggregation.enabled needs inferencePool.enabled/],
    ['KEDA on the queue without a Prometheus address', ['autoscaling.enabled=true', 'autoscaling.engine=keda', 'autoscaling.targetRequestsWaiting=3'], /autoscaling.keda.prometheusAddress is required/],
    ['autoscaling with no signal', ['autoscaling.enabled=true', 'autoscaling.targetCPUUtilizationPercentage=null'], /needs targetCPUUtilizationPercentage or targetRequestsWaiting/],
  ])('refuses %s, saying why', (_name, set, message) => {
    const values = mergedValues(renderer!, 'rel', CHART, { set });
    if (values) expect(validateValues(values)).toBe(false);
    const out = renderChart(renderer!, 'rel', CHART, { set });
    expect(out.ok).toBe(false);
    expect(out.stderr).toMatch(message);
  });

  it.each(readdirSync(join(CHART, 'examples')))('renders examples/%s into valid objects', async (file) => {
    await expectAllValid(render({ valuesFiles: [join(CHART, 'examples', file)] }));
  });
});
