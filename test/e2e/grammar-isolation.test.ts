// Hostile structured-output specs on a real server (stories260K): a spec that traps xgrammar,
// one that is over the limits, a tool list too large to compile, and a flood of distinct
// schemas. Each keeps /health under 200 ms while it runs, and the next constrained request
// still works (the grammar cases five times in the same server process).

import { defaultTestModel, SERVER_START_TIMEOUT_MS, expectApiError, startServing, type Serving } from './completions-helpers';
import { HealthProbe } from '../helpers/health-probe';
import { needs } from '../helpers/needs';
import { deepArraySchema, enumsSchema, objectChoicesSchema, refChainSchema } from '../helpers/hostile-schemas';

const onModel = needs(defaultTestModel());

/** What a client must never read: xgrammar's internal failures and source locations. */
const INTERNALS = /memory access|Aborted|\.cc:|Check failed|RuntimeError|null function|signature mismatch/;
const HEALTHY_MS = 200;
const TIMES = 5;

onModel.describe('grammar engine isolation (stories260K)', () => {
  let s: Serving;
  let probe: HealthProbe;

  beforeAll(async () => {
    // Depth limits raised so that deep specs reach xgrammar (in a compile worker) and trap there.
    s = await startServing([
      '--structured-outputs-config', '{"disable_any_whitespace": true}',
      '--structured-outputs-limits', '{"max_nesting_depth": 2000, "max_ref_depth": 2000}',
    ]);
    probe = new HealthProbe(s.server.baseUrl);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    probe?.close();
    await s?.server.stop();
  });

  const completion = (extra: Record<string, unknown>, maxTokens = 8) =>
    s.client.completions.create({ model: s.model, prompt: 'Lily said', max_tokens: maxTokens, temperature: 0.8, seed: 3, ...extra } as never);

  /** Runs the hostile request while probing /health: a 400 with `param`, nothing internal in it, /health fast. */
  async function refusedWhileHealthy(call: () => Promise<unknown>, param: string, message: RegExp): Promise<void> {
    const { result: err, report } = await probe.during(expectApiError(call(), 400, param));
    expect(err.message).toMatch(message);
    expect(err.message).not.toMatch(INTERNALS);
    expect(report.max).toBeLessThan(HEALTHY_MS);
  }

  it('a 1,000-deep $ref chain traps xgrammar: a 400, and a regex right after still works', async () => {
    for (let i = 0; i < TIMES; i++) {
      const format = { type: 'json_schema', json_schema: { name: `chain${i}`, schema: refChainSchema(1000 + i) } };
      await refusedWhileHealthy(() => completion({ response_format: format }), 'response_format', /could not be compiled/);
      const text = (await completion({ structured_outputs: { regex: '[b-z]{2}' } })).choices[0].text;
      expect(text).toMatch(/^[b-z]{2}$/);
    }
  }, 120_000);

  it('a 100-deep schema does not poison later schemas or tool_choice "required"', async () => {
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 6 } }, required: ['city'] } } }];
    for (let i = 0; i < TIMES; i++) {
      await refusedWhileHealthy(() => completion({ structured_outputs: { json: deepArraySchema(100 + i) } }), 'structured_outputs', /could not be compiled/);
      const fresh = { type: 'object', properties: { [`n${i}`]: { type: 'integer', minimum: 0, maximum: 9 } }, required: [`n${i}`], additionalProperties: false };
      const text = (await completion({ structured_outputs: { json: fresh } }, 20)).choices[0].text;
      expect(JSON.parse(text)).toEqual({ [`n${i}`]: expect.any(Number) });
      const chat = await s.client.chat.completions.create({
        model: s.model, messages: [{ role: 'user', content: 'weather?' }], tools, tool_choice: 'required', parallel_tool_calls: false, max_tokens: 150, temperature: 0.8, seed: i,
      });
      expect(chat.choices[0].finish_reason).toBe('tool_calls');
      const call = chat.choices[0].message.tool_calls?.[0];
      expect(call?.type === 'function' && call.function.name).toBe('get_weather');
    }
  }, 120_000);

  // 600 (over max_tools 512) rather than the 10,000 that once ran 5 minutes: reading and checking the
  // body of 2,000 tools alone holds the HTTP thread ~0.13 s, before any grammar work.
  it('600 tools with tool_choice "required" are refused at once; a choice beside them is answered', async () => {
    const tools = Array.from({ length: 600 }, (_, i) => ({ type: 'function' as const, function: { name: `tool_${i}`, description: 'x'.repeat(40), parameters: { type: 'object', properties: { a: { type: 'string' } } } } }));
    for (let i = 0; i < TIMES; i++) {
      const neighbour = completion({ structured_outputs: { choice: ['yes', 'no'] } });
      const call = () => s.client.chat.completions.create({ model: s.model, messages: [{ role: 'user', content: 'x' }], tools, tool_choice: 'required', max_tokens: 8 });
      await refusedWhileHealthy(call, 'tools', /max_tools/);
      expect(['yes', 'no']).toContain((await neighbour).choices[0].text);
    }
  }, 120_000);

  it('a client that leaves stops its compile: the next spec does not wait for it', async () => {
    for (let i = 0; i < TIMES; i++) {
      const controller = new AbortController();
      const slow = s.client.completions
        .create({ model: s.model, prompt: 'Hi', max_tokens: 4, structured_outputs: { json: objectChoicesSchema(2000, `left${i}`) } } as never, { signal: controller.signal })
        .catch((err: unknown) => err);
      await new Promise((r) => setTimeout(r, 300));
      controller.abort();
      await slow;
      const started = performance.now();
      const { result, report } = await probe.during(completion({ structured_outputs: { regex: `[b-z]{${i + 2}}` } }));
      const waited = performance.now() - started;
      expect(result.choices[0].text).toMatch(new RegExp(`^[b-z]{${i + 2}}$`));
      expect(report.max).toBeLessThan(HEALTHY_MS);
      // The abandoned compile alone takes ~4 s in the single compile worker (twice that with the matcher's).
      expect(waited).toBeLessThan(2500);
    }
  }, 120_000);

  it('over-limit specs are refused before compiling, naming the field the client sent', async () => {
    const huge = { type: 'object', properties: { a: { enum: Array.from({ length: 3000 }, (_, v) => `v${v}`) } } };
    await refusedWhileHealthy(() => completion({ guided_json: huge }), 'guided_json', /max_alternatives/);
    await refusedWhileHealthy(() => completion({ structured_outputs: { regex: 'a'.repeat(5000) } }), 'structured_outputs', /max_pattern_length/);
    expect((await completion({ structured_outputs: { choice: ['ok'] } })).choices[0].text).toBe('ok');
  }, 60_000);

  it('a flood of distinct schemas does not stall an unconstrained stream', async () => {
    const streamGaps = async (): Promise<number[]> => {
      const stream = await s.client.completions.create({ model: s.model, prompt: 'Once upon a time', max_tokens: 120, ignore_eos: true, temperature: 0, stream: true } as never);
      const gaps: number[] = [];
      let last = performance.now();
      for await (const _chunk of stream as unknown as AsyncIterable<unknown>) {
        const now = performance.now();
        gaps.push(now - last);
        last = now;
      }
      return gaps.slice(1); // the first includes the prefill
    };
    const baseline = Math.max(...(await streamGaps()));
    // A constrained request running through the flood: its steps sit out while its mask is late, and its text still obeys the regex.
    const constrained = completion({ structured_outputs: { regex: '[a-z ]{150}' } }, 160);
    let flooding = true;
    const flood = Promise.all(Array.from({ length: 20 }, (_, i) => completion({ structured_outputs: { json: enumsSchema(10, 300, `flood${i}`) } }, 4))).finally(() => (flooding = false));
    // Streams one after another for as long as the flood lasts.
    const gaps: number[] = [];
    while (flooding) gaps.push(...(await streamGaps()));
    expect(await flood).toHaveLength(20);
    expect((await constrained).choices[0].text).toMatch(/^[a-z ]{150}$/);
    const worst = Math.max(...gaps);
    const sorted = [...gaps].sort((a, b) => a - b);
    console.info(`[grammar-isolation] longest inter-token gap: alone ${baseline.toFixed(1)} ms, during 20 distinct schemas ${worst.toFixed(1)} ms (p50 ${sorted[sorted.length >> 1].toFixed(1)}, p99 ${sorted[Math.floor(sorted.length * 0.99)].toFixed(1)}, ${gaps.length} gaps)`);
    // One matcher-side compile (about 0.1-0.3 s here) is the most a step waits; before, steps queued behind every compile.
    expect(worst).toBeLessThan(Math.max(1000, 4 * baseline));
  }, 120_000);
});
