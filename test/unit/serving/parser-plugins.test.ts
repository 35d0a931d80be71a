// --tool-parser-plugin / --reasoning-parser-plugin files: CommonJS, ES module and TypeScript
// plugins register their parsers; names are checked once plugins are loaded.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadParserPlugin, setUpOutputParsers } from '../../../src/serving/parser-plugins';
import { REASONING_PARSERS } from '../../../src/serving/reasoning';
import { TOOL_PARSERS } from '../../../src/serving/tool-parsers';
import { ensureBuilt, REPO_ROOT } from '../../helpers/server';
import { extracted, splits, streamPieces, withoutIds } from './parser-harness';

const dir = mkdtempSync(join(tmpdir(), 'ortllm-plugins-'));
const write = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

const NONE = { toolParserPlugin: null, reasoningParserPlugin: null, toolCallParser: null, reasoningParser: null };

describe('parser plugins', () => {
  it('a CommonJS file exporting a name -> class table', async () => {
    const path = write('calls.js', `
      class CallLineParser {
        constructor(ctx) { this.tools = ctx.tools; this.text = ''; }
        extract(text) {
          const m = /^CALL (\\w+) (.*)$/.exec(text);
          return m ? { toolCalls: [{ id: 'x', type: 'function', function: { name: m[1], arguments: m[2] } }], content: null } : { toolCalls: [], content: text };
        }
        extractDelta(delta, finished) { this.text += delta; return finished ? { content: this.text } : null; }
      }
      module.exports = { toolParsers: { call_line: CallLineParser } };
    `);
    await setUpOutputParsers({ ...NONE, toolParserPlugin: path, toolCallParser: 'call_line' });
    const parser = new (TOOL_PARSERS.get('call_line'))({ tools: [] });
    expect(parser.extract('CALL f {"a": 1}').toolCalls[0].function).toEqual({ name: 'f', arguments: '{"a": 1}' });
  });

  it('a TypeScript file whose register() extends the base classes', async () => {
    const path = write('thoughts.ts', `
      import type { PluginApi } from './unused-types';
      export function register(ortllm: PluginApi): void {
        class BracketThoughts extends ortllm.ThinkTagReasoningParser {
          protected readonly startTag: string = '[[';
          protected readonly endTag: string = ']]';
        }
        ortllm.reasoningParsers.register('brackets', BracketThoughts);
      }
    `);
    await loadParserPlugin(path);
    const parser = new (REASONING_PARSERS.get('brackets'))({ chatTemplateKwargs: {} });
    expect(parser.extract('[[hmm]]yes')).toEqual({ reasoning: 'hmm', content: 'yes' });
  });

  it('an ES module (.mjs), loaded by the built server code (jest cannot import() ES modules)', async () => {
    await ensureBuilt();
    const path = write('esm.mjs', `
      export function register(ortllm) {
        ortllm.toolParsers.register(['esm_calls'], class extends ortllm.ScanningToolParser {
          scan(text) { return { content: text, calls: [], malformed: false }; }
        });
      }
    `);
    const script = `
      const { setUpOutputParsers } = require('./dist/src/serving/parser-plugins');
      const { TOOL_PARSERS } = require('./dist/src/serving/tool-parsers');
      setUpOutputParsers({ toolParserPlugin: ${JSON.stringify(path)}, reasoningParserPlugin: null, toolCallParser: 'esm_calls', reasoningParser: null })
        .then(() => console.log(JSON.stringify(new (TOOL_PARSERS.get('esm_calls'))({ tools: [] }).extract('hi'))));
    `;
    const run = spawnSync(process.execPath, ['-e', script], { cwd: REPO_ROOT, encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ toolCalls: [], content: 'hi' });
  }, 120_000);

  it("docs/tool-calling.md's example plugin works as it says", async () => {
    const page = readFileSync(join(REPO_ROOT, 'docs/tool-calling.md'), 'utf8');
    const code = /```js\n(\/\/ my-parser\.js[\s\S]*?)```/.exec(page)?.[1];
    expect(code).toBeDefined();
    await loadParserPlugin(write('my-parser.js', code as string));
    const make = () => new (TOOL_PARSERS.get('call_line'))({ tools: [] });
    const text = 'Checking.\nCALL get_weather {"city": "Paris"}\nCALL get_time {}';
    const expected = { content: 'Checking.\n', calls: [{ name: 'get_weather', arguments: '{"city": "Paris"}' }, { name: 'get_time', arguments: '{}' }] };
    expect(withoutIds(extracted(make(), text))).toEqual(expected);
    for (const pieces of splits(text)) expect(withoutIds(streamPieces(make(), pieces))).toEqual(expected);
    expect(withoutIds(extracted(make(), 'CALL f {oops'))).toEqual({ content: 'CALL f {oops', calls: [] });
  });

  it('unknown names, missing files and bad tables fail start-up with a clear message', async () => {
    await expect(setUpOutputParsers({ ...NONE, toolCallParser: 'nope' })).rejects.toThrow(/^invalid tool call parser: nope \(chose from \{ .*hermes.* \}\)$/);
    await expect(setUpOutputParsers({ ...NONE, reasoningParser: 'nope' })).rejects.toThrow(/^invalid reasoning parser: nope \(chose from \{ .*deepseek_r1.*qwen3.* \}\)$/);
    await expect(loadParserPlugin(join(dir, 'missing.js'))).rejects.toThrow(/cannot load parser plugin .*missing\.js/);
    const bad = write('bad.js', 'module.exports = { toolParsers: { broken: 42 } };');
    await expect(loadParserPlugin(bad)).rejects.toThrow(/tool call parser 'broken' is not a class/);
  });
});
