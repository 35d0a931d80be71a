// vLLM's filesystem LoRA resolver: a name is a subdirectory of the cache directory holding a PEFT
// LoRA for this base model; absolute names, `..` and symlinks out of the directory are never
// looked up, and another base model's or another PEFT type's adapter is not this server's.

import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FilesystemResolver } from '../../../../src/serving/lora/lora-resolvers';

const BASE = '/models/tiny.gguf';
const root = mkdtempSync(join(tmpdir(), 'ortllm-resolver-'));
const cache = join(root, 'cache');
const outside = join(root, 'outside');

function adapter(dir: string, config: Record<string, unknown>): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'adapter_config.json'), JSON.stringify(config));
}

beforeAll(() => {
  adapter(join(cache, 'sql'), { peft_type: 'LORA', base_model_name_or_path: BASE, r: 8 });
  adapter(join(cache, 'team', 'chat'), { peft_type: 'LORA', base_model_name_or_path: BASE, r: 8 });
  adapter(join(cache, 'other-base'), { peft_type: 'LORA', base_model_name_or_path: '/models/other.gguf', r: 8 });
  adapter(join(cache, 'prefix'), { peft_type: 'PREFIX_TUNING', base_model_name_or_path: BASE });
  mkdirSync(join(cache, 'broken'));
  writeFileSync(join(cache, 'broken', 'adapter_config.json'), '{"peft_type": ');
  adapter(outside, { peft_type: 'LORA', base_model_name_or_path: BASE, r: 8 });
  symlinkSync(outside, join(cache, 'escape'));
});

describe('FilesystemResolver', () => {
  it('finds a LoRA of this base model by its subdirectory name (nested names too)', () => {
    const resolver = new FilesystemResolver(cache);
    expect(resolver.resolve(BASE, 'sql')).toBe(join(cache, 'sql'));
    expect(resolver.resolve(BASE, 'team/chat')).toBe(join(cache, 'team', 'chat'));
  });

  it.each([
    ['a name with ..', () => '../outside'],
    ['an absolute path', () => outside],
    ['a symlink out of the directory', () => 'escape'],
    ['a missing subdirectory', () => 'missing'],
    ["another base model's adapter", () => 'other-base'],
    ['another PEFT type', () => 'prefix'],
    ['an unreadable adapter_config.json', () => 'broken'],
  ])('does not resolve %s', (_label, name) => {
    expect(new FilesystemResolver(cache).resolve(BASE, name())).toBeNull();
  });
});
