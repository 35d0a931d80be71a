// sentence-transformers files beside a Hugging Face checkpoint: modules.json (the module list),
// the Pooling module's config (1_Pooling/config.json) and sentence_bert_config.json
// (max_seq_length, do_lower_case). vLLM reads the same files for embedding models.
import { join } from 'node:path';
import type { PoolingType } from '../types';
import { readJsonFile } from './hf-tokenizer-files';

export interface SentenceTransformersConfig {
  /** From the Pooling module; null when the model has none. */
  pooling: PoolingType | null;
  /** A Normalize module follows the pooling. */
  normalize: boolean;
  maxSeqLength: number | null;
  doLowerCase: boolean;
}

interface ModuleEntry {
  path?: string;
  type?: string;
}

const POOLING_MODE_KEYS: ReadonlyArray<readonly [key: string, pooling: PoolingType]> = [
  ['pooling_mode_cls_token', 'CLS'],
  ['pooling_mode_mean_tokens', 'MEAN'],
  ['pooling_mode_lasttoken', 'LAST'],
];

/** Module types that do not change the pooled vector's values beyond pooling and normalising. */
const UNDERSTOOD = /\.(Transformer|Pooling|Normalize)$/;

/** null when the directory is not a sentence-transformers model (no modules.json). */
export function readSentenceTransformersConfig(dir: string): SentenceTransformersConfig | null {
  const modules = readJsonFile(join(dir, 'modules.json')) as unknown;
  if (!Array.isArray(modules)) return null;
  const entries = modules as ModuleEntry[];
  const unsupported = entries.find((m) => typeof m.type === 'string' && !UNDERSTOOD.test(m.type));
  if (unsupported) {
    throw new Error(`${dir}: sentence-transformers module ${unsupported.type} is not supported (only Transformer, Pooling and Normalize)`);
  }
  const poolingModule = entries.find((m) => m.type?.endsWith('.Pooling'));
  const bertConfig = readJsonFile(join(dir, 'sentence_bert_config.json'));
  return {
    pooling: poolingModule ? poolingMode(join(dir, poolingModule.path ?? '1_Pooling', 'config.json')) : null,
    normalize: entries.some((m) => m.type?.endsWith('.Normalize')),
    maxSeqLength: typeof bertConfig?.max_seq_length === 'number' ? bertConfig.max_seq_length : null,
    doLowerCase: bertConfig?.do_lower_case === true,
  };
}

function poolingMode(path: string): PoolingType {
  const config = readJsonFile(path);
  if (!config) throw new Error(`${path}: the Pooling module's config is missing`);
  const modes = Object.entries(config).filter(([key, on]) => key.startsWith('pooling_mode_') && on === true).map(([key]) => key);
  const known = modes.map((mode) => POOLING_MODE_KEYS.find(([key]) => key === mode));
  if (modes.length !== 1 || !known[0]) {
    throw new Error(`${path}: pooling ${modes.join(' + ') || 'none'} is not supported (one of ${POOLING_MODE_KEYS.map(([k]) => k).join(', ')})`);
  }
  return known[0][1];
}
