// `ortllm models DIR` on a folder holding the shared GGUF files, a Hugging Face directory written
// from stories260K (F16 safetensors) and a directory that is no servable model.

import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listModels } from '../../../src/cli/list-models';
import { sharedModel } from '../../helpers/model-files';
import { needs } from '../../helpers/needs';
import { writeHfDirFromGguf } from '../../helpers/write-hf-dir';

const stories = sharedModel('stories260K.gguf');
const q8 = sharedModel('stories260K-Q8_0.gguf');
const onModels = needs(stories, q8);

async function capture(fn: () => Promise<void>): Promise<{ stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((c: string) => ((stdout += c), true));
  process.stderr.write = ((c: string) => ((stderr += c), true));
  try {
    await fn();
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
  return { stdout, stderr };
}

onModels.describe('ortllm models', () => {
  it('lists GGUF files and HF directories with architecture, parameters, types, context, size and the serve line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ortllm-models-'));
    copyFileSync(stories, join(dir, 'stories260K.gguf'));
    copyFileSync(q8, join(dir, 'stories260K-Q8_0.gguf'));
    await writeHfDirFromGguf(stories, join(dir, 'stories-hf'), { dtype: 'F16' });
    mkdirSync(join(dir, 'not-a-model'));
    writeFileSync(join(dir, 'not-a-model', 'config.json'), JSON.stringify({ architectures: ['BertModel'], model_type: 'bert' }));
    writeFileSync(join(dir, 'notes.txt'), 'ignored');

    const { stdout, stderr } = await capture(() => listModels(dir));
    const rows = stdout.split('\n');
    expect(rows[0].split(/\s+/)).toEqual(['NAME', 'FORMAT', 'ARCH', 'PARAMS', 'QUANT', 'CONTEXT', 'SIZE']);
    // stories260K: 292,800 parameters including the embeddings, context 2048.
    expect(rows).toContainEqual(expect.stringMatching(/^stories-hf\s+hf-safetensors\s+llama\s+292\.8K\s+F16\s+2048\s+\d/));
    expect(rows).toContainEqual(expect.stringMatching(/^stories260K\s+gguf\s+llama\s+292\.8K\s+F32\s+2048\s+1\.1 MiB$/));
    expect(rows).toContainEqual(expect.stringMatching(/^stories260K-Q8_0\s+gguf\s+llama\s+292\.8K\s+Q8_0\s+2048\s+370\.3 KiB$/));
    expect(stdout).toContain(`ortllm serve ${join(dir, 'stories260K.gguf')} --served-model-name stories260K --max-model-len 2048`);
    expect(stdout).toContain(`ortllm serve ${join(dir, 'stories-hf')} --served-model-name stories-hf --max-model-len 2048`);
    expect(stdout).not.toContain('not-a-model');
    expect(stderr).toMatch(/skipped .*not-a-model: /);
  });

  it('fails with a message for a missing directory', async () => {
    await expect(listModels('/no/such/dir')).rejects.toThrow(/is not a directory/);
  });
});
