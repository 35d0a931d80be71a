// Static checks of the Dockerfiles against package.json and the Helm chart, so a version bump or
// an entrypoint change cannot leave the image and the chart disagreeing. Building and running
// the image is `npm run test:container` (root, podman; not part of npm test).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

const root = join(__dirname, '..', '..', '..');
const read = (file: string): string => readFileSync(join(root, file), 'utf8');
const version = JSON.parse(read('package.json')).version as string;
const chart = parse(read('helm/ortllm/Chart.yaml')) as { appVersion: string };

/** The last value of a Dockerfile instruction (the final stage's, for ones that repeat). */
function lastInstruction(dockerfile: string, name: string): string | undefined {
  const lines = dockerfile.replace(/\\\n\s*/g, ' ').split('\n');
  const hits = lines.filter((l) => l.startsWith(`${name} `)).map((l) => l.slice(name.length + 1).trim());
  return hits.at(-1);
}

describe.each(['Dockerfile', 'Dockerfile.cuda'])('%s', (file) => {
  const dockerfile = read(file);

  it('starts `ortllm serve` as the entrypoint, so container args are serve arguments', () => {
    expect(JSON.parse(lastInstruction(dockerfile, 'ENTRYPOINT')!)).toEqual(['node', 'dist/src/main.js', 'serve']);
  });

  // Should a dependency's install script become allowed, the Dockerfiles must run it explicitly,
  // as Dockerfile.cuda runs onnxruntime-node's.
  it('installs with --ignore-scripts, which is package.json allowScripts policy (deny all) on any npm', () => {
    const pkg = JSON.parse(read('package.json')) as { allowScripts: Record<string, boolean> };
    expect(Object.values(pkg.allowScripts).every((allowed) => allowed === false)).toBe(true);
    expect(dockerfile.match(/npm ci /g)?.length).toBe(2);
    expect(dockerfile.match(/npm ci [^\n]*--ignore-scripts/g)?.length).toBe(2);
  });

  // Without the addon the image would silently run the in-graph attention, 2-2.5x slower at depth.
  it('builds the native attention addon strictly in the build stage and copies only its output', () => {
    const stages = dockerfile.split(/^FROM /m);
    const build = stages.find((stage) => / AS build\n/.test(stage))!;
    expect(build).toMatch(/apt-get install[^\n]*g\+\+ make python3/);
    expect(build).toContain('RUN node scripts/build-native.js --strict');
    const runtime = stages.at(-1)!;
    expect(runtime).toContain('COPY --from=build /app/native/build/Release ./native/build/Release');
    expect(runtime).not.toMatch(/g\+\+/);
  });

  it('labels the image with package.json version by default', () => {
    expect(dockerfile).toContain(`ARG VERSION=${version}\n`);
    expect(dockerfile).toContain('org.opencontainers.image.version="${VERSION}"');
  });

  it('runs as a numeric non-root user, exposes 8000 and checks /health', () => {
    expect(lastInstruction(dockerfile, 'USER')).toMatch(/^[1-9][0-9]*:[0-9]+$/);
    expect(lastInstruction(dockerfile, 'EXPOSE')).toBe('8000');
    expect(lastInstruction(dockerfile, 'HEALTHCHECK')).toContain('http://127.0.0.1:8000/health');
  });
});

describe('Helm chart and image', () => {
  it('has appVersion = package.json version (the default image tag derives from it)', () => {
    expect(chart.appVersion).toBe(version);
  });

  it('passes serve arguments only (the entrypoint already says serve)', () => {
    const deployment = read('helm/ortllm/templates/deployment.yaml');
    const args = deployment.slice(deployment.indexOf('args:'), deployment.indexOf('ports:'));
    expect(args).not.toMatch(/^\s*- serve\s*$/m);
  });
});
