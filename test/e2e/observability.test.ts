// The Grafana dashboard and the PrometheusRule shipped in the Helm chart query only metrics a
// running ortllm exports: every PromQL expression is parsed (the Prometheus project's lezer
// grammar) and each metric it selects must appear in the real /metrics of a server that served
// some requests.

import { parser } from '@prometheus-io/lezer-promql';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { REPO_ROOT } from '../helpers/server';
import { needs } from '../helpers/needs';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, startServing, type Serving } from './completions-helpers';

const onModel = needs(defaultTestModel());
const chart = join(REPO_ROOT, 'helm', 'ortllm');

/** Every PromQL expression of the dashboard (panel targets, variable queries) and of the alert rules. */
function expressions(): Array<{ where: string; expr: string }> {
  const dashboard = JSON.parse(readFileSync(join(chart, 'dashboards', 'ortllm.json'), 'utf8'));
  const out: Array<{ where: string; expr: string }> = [];
  for (const panel of dashboard.panels) for (const t of panel.targets) out.push({ where: `panel "${panel.title}"`, expr: t.expr });
  for (const v of dashboard.templating.list) {
    const m = /^label_values\((.*),\s*\w+\)$/.exec(v.query?.query ?? '');
    if (m) out.push({ where: `variable ${v.name}`, expr: m[1] });
  }
  const rules = parseYaml(readFileSync(join(chart, 'rules', 'ortllm-alerts.yaml'), 'utf8'));
  for (const group of rules.groups) for (const rule of group.rules) out.push({ where: `alert ${rule.alert}`, expr: rule.expr });
  return out;
}

/** Metric names a PromQL expression selects (Grafana's variables replaced by values first). */
function selectedMetrics(expr: string): string[] {
  const text = expr.replace(/\$__rate_interval|\$__interval/g, '5m').replace(/\$\{?(\w+)\}?/g, 'x');
  const tree = parser.parse(text);
  const names: string[] = [];
  let errors = 0;
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors++;
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector') names.push(text.slice(node.from, node.to));
    },
  });
  if (errors > 0) throw new Error(`not valid PromQL: ${expr}`);
  return names;
}

/** The series names /metrics exposes (histograms as _bucket/_sum/_count, summaries as _sum/_count). */
function exported(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    names.add(line.split(/[{ ]/)[0]);
  }
  return names;
}

onModel.describe('Grafana dashboard and PrometheusRule', () => {
  let s: Serving;
  beforeAll(async () => {
    s = await startServing(['--max-model-len', '256']);
    await s.post('/v1/completions', { prompt: 'Once upon a time', max_tokens: 4 });
    await s.post('/v1/chat/completions', { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 });
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => s?.server.stop());

  it('every expression parses and selects only metrics the server exports', async () => {
    const metrics = exported(await (await fetch(`${s.server.baseUrl}/metrics`)).text());
    const all = expressions();
    expect(all.length).toBeGreaterThan(30);
    const missing: string[] = [];
    for (const { where, expr } of all) {
      const names = selectedMetrics(expr);
      expect([where, names.length > 0]).toEqual([where, true]);
      for (const name of names) if (!metrics.has(name)) missing.push(`${where}: ${name}`);
    }
    expect(missing).toEqual([]);
  });

  it('the alerts cover a growing queue, a full KV cache, the error rate and a dead engine', () => {
    const rules = parseYaml(readFileSync(join(chart, 'rules', 'ortllm-alerts.yaml'), 'utf8')).groups[0].rules;
    expect(rules.map((r: { alert: string }) => r.alert)).toEqual(
      expect.arrayContaining(['OrtllmQueueGrowing', 'OrtllmKvCacheUsageHigh', 'OrtllmHighErrorRate', 'OrtllmEngineDead']),
    );
  });
});
