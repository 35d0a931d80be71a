// Writes a Whisper model in whisper.cpp's ggml file format (the one its convert-pt-to-ggml.py
// writes), from the same weights ortllm serves, so `npm run bench:audio` can run whisper.cpp on
// identical numbers:
//   u32 magic 'ggml' | i32 hparams ×11 (n_vocab, n_audio_ctx, n_audio_state, n_audio_head,
//   n_audio_layer, n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, ftype)
//   | i32 n_mel, i32 n_fft, f32 mel filters | i32 n_tokens, (u32 len, bytes)×n | tensors:
//   i32 n_dims, i32 name length, i32 type (0 = f32), i32 ne[n_dims] (innermost first), name, data.
// Tensor names are openai-whisper's (encoder.blocks.0.attn.query.weight, …); torch's row-major
// data is ggml's layout with the dimensions listed in reverse. The vocabulary is left out:
// whisper.cpp names the tokens itself (only text output differs), special-token ids follow
// n_vocab (51865: multilingual).

import { closeSync, openSync, writeSync } from 'node:fs';
import { slaneyMelFilters } from '../src/model/audio/mel-filters';
import type { ModelArchConfig, ModelWeights } from '../src/model/types';

const GGML_MAGIC = 0x67676d6c;

/** openai-whisper name of a Hugging Face Whisper tensor. */
export function openaiWhisperName(hf: string): string {
  const renames: Array<[RegExp, string]> = [
    [/^model\.encoder\.embed_positions\.weight$/, 'encoder.positional_embedding'],
    [/^model\.decoder\.embed_positions\.weight$/, 'decoder.positional_embedding'],
    [/^model\.decoder\.embed_tokens\.weight$/, 'decoder.token_embedding.weight'],
    [/^model\.encoder\.layer_norm\./, 'encoder.ln_post.'],
    [/^model\.decoder\.layer_norm\./, 'decoder.ln.'],
    [/^model\.(encoder|decoder)\.layers\./, '$1.blocks.'],
    [/^model\.encoder\.conv/, 'encoder.conv'],
    [/\.self_attn_layer_norm\./, '.attn_ln.'],
    [/\.encoder_attn_layer_norm\./, '.cross_attn_ln.'],
    [/\.final_layer_norm\./, '.mlp_ln.'],
    [/\.self_attn\./, '.attn.'],
    [/\.encoder_attn\./, '.cross_attn.'],
    [/\.q_proj\./, '.query.'],
    [/\.k_proj\./, '.key.'],
    [/\.v_proj\./, '.value.'],
    [/\.out_proj\./, '.out.'],
    [/\.fc1\./, '.mlp.0.'],
    [/\.fc2\./, '.mlp.2.'],
  ];
  return renames.reduce((name, [pattern, replacement]) => name.replace(pattern, replacement), hf);
}

export function writeWhisperGgml(path: string, config: ModelArchConfig, weights: ModelWeights): void {
  const enc = config.encoder;
  if (!enc) throw new Error('writeWhisperGgml needs a Whisper config');
  const d = config.hiddenSize;
  if (enc.ffnDim !== 4 * d || enc.decoderFfnDim !== 4 * d) throw new Error('whisper.cpp assumes feed-forward size 4 x d_model');
  const fd = openSync(path, 'w');
  const ints = (...values: number[]) => writeSync(fd, Buffer.from(Int32Array.from(values).buffer));
  try {
    writeSync(fd, Buffer.from(Uint32Array.from([GGML_MAGIC]).buffer));
    ints(config.vocabSize, enc.numPositions, d, enc.numHeads, enc.numLayers, config.maxPositionEmbeddings, d, config.numHeads, config.numLayers, enc.numMelBins, 0);
    const bins = Math.floor(enc.features.nFft / 2) + 1;
    ints(enc.numMelBins, bins);
    const filters = slaneyMelFilters({ numFrequencyBins: bins, numMelFilters: enc.numMelBins, samplingRate: enc.features.samplingRate });
    writeSync(fd, Buffer.from(Float32Array.from(filters).buffer));
    ints(0); // no vocabulary strings
    for (const hfName of weights.names()) {
      const tensor = weights.get(hfName);
      if (tensor.kind !== 'f32') throw new Error(`${hfName}: only f32 weights are written`);
      const name = openaiWhisperName(hfName);
      // Conv biases are [n_state, 1] in openai-whisper's checkpoint layout.
      const shape = /^encoder\.conv\d\.bias$/.test(name) ? [tensor.shape[0], 1] : tensor.shape;
      const nameBytes = Buffer.from(name, 'utf8');
      ints(shape.length, nameBytes.length, 0, ...[...shape].reverse());
      writeSync(fd, nameBytes);
      writeSync(fd, Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength));
    }
  } finally {
    closeSync(fd);
  }
}
