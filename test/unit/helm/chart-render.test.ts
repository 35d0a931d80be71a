// chart-render against helm's semantics, on a small chart written here: what `helm template`
// prints for the same templates (whitespace chomping, include + nindent, default, required's
// message, --set typing, null removing a default, tpl, .Files, .Capabilities, partials, NOTES).
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mergedValues, renderChart, type RenderOptions } from '../../../scripts/chart-renderer';
import { chartRenderer } from '../../helpers/chart';

const { renderer, describe: describeRendering } = chartRenderer();

const CHART: Record<string, string> = {
  'Chart.yaml': 'apiVersion: v2\nname: demo\nversion: 1.2.3\nappVersion: "4.5"\n',
  'values.yaml': 'name: web\nport: 8080\nlabels: { team: a }\nlist: [x, y]\nkeep: yes-default\nmissing: null\n',
  'files/greeting.txt': 'hello\nworld',
  'templates/_helpers.tpl': '{{- define "demo.labels" -}}\napp: {{ .Values.name }}\nchart: {{ .Chart.Name }}-{{ .Chart.Version }}\n{{- end -}}\n',
  'templates/NOTES.txt': 'notes are not manifests {{ .Release.Name }}\n',
  'templates/a.yaml': [
    'kind: ConfigMap',
    'metadata:',
    '  name: {{ .Release.Name }}-a',
    '  labels:',
    '    {{- include "demo.labels" . | nindent 4 }}',
    'data:',
    '  port: {{ .Values.port | quote }}',
    '  kind: {{ kindOf .Values.port }}',
    '  fallback: {{ .Values.absent | default "dflt" }}',
    '  keep: {{ .Values.keep | default "gone" }}',
    '  chomped: [   {{- "x" -}}   ]',
    '  {{- if .Values.list }}',
    '  list: {{ join "," .Values.list }}',
    '  {{- end }}',
    '  yaml: |',
    '    {{- toYaml .Values.labels | nindent 4 }}',
    '  tpl: {{ tpl "{{ .Values.name }}-x" . }}',
    '  file: {{ .Files.Get "files/greeting.txt" | replace "\\n" " " }}',
    '  hasDeploy: {{ .Capabilities.APIVersions.Has "apps/v1/Deployment" | quote }}',
    '  hasPool: {{ .Capabilities.APIVersions.Has "inference.networking.k8s.io/v1" | quote }}',
    '  ns: {{ .Release.Namespace }}',
    '  nothing: "{{ .Values.nope }}"',
  ].join('\n'),
  'templates/b.yaml': '{{- if .Values.second }}\nkind: Service\nmetadata:\n  name: b\n{{- end }}\n',
  'templates/c.yaml': 'kind: Secret\nmetadata:\n  name: {{ required "name.of.secret is required" .Values.secret }}\n',
};

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'chart-render-'));
  for (const [file, text] of Object.entries(CHART)) {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function render(options: RenderOptions = {}): { ok: boolean; stdout: string; stderr: string } {
  return renderChart(renderer!, 'rel', dir, { set: ['secret=s'], ...options, showOnly: options.showOnly ?? ['templates/a.yaml'] });
}

describeRendering('chart-render renders as helm template does', () => {
  it('prints the document under its source, with include + nindent, default, quote and chomping', () => {
    const out = render();
    expect(out.stderr).toBe('');
    expect(out.stdout).toBe(
      [
        '---',
        '# Source: demo/templates/a.yaml',
        'kind: ConfigMap',
        'metadata:',
        '  name: rel-a',
        '  labels:',
        '    app: web',
        '    chart: demo-1.2.3',
        'data:',
        '  port: "8080"',
        '  kind: float64',
        '  fallback: dflt',
        '  keep: yes-default',
        '  chomped: [x]',
        '  list: x,y',
        '  yaml: |',
        '    team: a',
        '  tpl: web-x',
        '  file: hello world',
        '  hasDeploy: "true"',
        '  hasPool: "false"',
        '  ns: default',
        '  nothing: ""',
        '',
      ].join('\n'),
    );
  });

  it('types --set values as helm does and lets a null remove a default', () => {
    const out = render({ set: ['secret=s', 'port=9000', 'keep=null', 'list={p,q,r}', 'name=a\\,b'], namespace: 'prod' });
    expect(out.stdout).toContain('  kind: int64\n');
    expect(out.stdout).toContain('  keep: gone\n');
    expect(out.stdout).toContain('  list: p,q,r\n');
    expect(out.stdout).toContain('    app: a,b\n');
    expect(out.stdout).toContain('  ns: prod\n');
  });

  it('merges -f files over values.yaml, later files winning', () => {
    writeFileSync(join(dir, '..', `${'demo'}-one.yaml`), 'labels: { team: b, extra: "1" }\nport: 1\n');
    writeFileSync(join(dir, '..', `${'demo'}-two.yaml`), 'port: 2\n');
    const files = [join(dir, '..', 'demo-one.yaml'), join(dir, '..', 'demo-two.yaml')];
    const out = render({ valuesFiles: files });
    expect(out.stdout).toContain('  port: "2"\n');
    expect(out.stdout).toContain('    extra: "1"\n    team: b\n');
    const values = mergedValues(renderer!, 'rel', dir, { valuesFiles: files });
    if (values) expect(values).toMatchObject({ name: 'web', port: 2, labels: { team: 'b', extra: '1' } });
    for (const f of files) rmSync(f);
  });

  it('fails with required\'s message and the template position', () => {
    const out = render({ set: [], showOnly: ['templates/c.yaml'] });
    expect(out.ok).toBe(false);
    expect(out.stderr).toMatch(/^Error: execution error at \(demo\/templates\/c\.yaml:3:11\): name\.of\.secret is required/);
  });

  it('leaves out partials, NOTES.txt and empty documents; --api-versions adds to Capabilities', () => {
    const out = renderChart(renderer!, 'rel', dir, { set: ['secret=s'], apiVersions: ['inference.networking.k8s.io/v1'] });
    expect(out.ok).toBe(true);
    expect(out.stdout.match(/^# Source: .*$/gm)).toEqual(['# Source: demo/templates/c.yaml', '# Source: demo/templates/a.yaml']);
    expect(out.stdout).toContain('  hasPool: "true"\n');
    expect(out.stdout).not.toContain('notes are not manifests');
  });
});
