// Top-k routing of a pass's rows, grouped by expert (the native backends' MoE block): softmax
// over each row's router logits, the k most probable experts (ties: the lower index first, as
// ONNX TopK; llama.cpp's std::sort leaves ties unordered), their probabilities renormalised to
// sum to 1 when the config says so, then every (row, weight) pair listed under its expert so each
// expert runs once over all the rows that chose it.

/** The rows routed to each expert: expert e's are rows[starts[e] .. starts[e + 1]) with weights at the same places. */
export interface ExpertGroups {
  starts: Int32Array;
  rows: Int32Array;
  weights: Float32Array;
}

/** Groups `n` rows by expert from their router logits [n, experts]. */
export function routeRows(logits: Float32Array, n: number, experts: number, k: number, renormalise: boolean): ExpertGroups {
  const chosen = new Int32Array(n * k);
  const chosenWeights = new Float32Array(n * k);
  const probs = new Float64Array(experts);
  const taken = new Uint8Array(experts);
  const counts = new Int32Array(experts);
  for (let r = 0; r < n; r++) {
    const row = logits.subarray(r * experts, (r + 1) * experts);
    let max = -Infinity;
    for (let e = 0; e < experts; e++) max = Math.max(max, row[e]);
    let total = 0;
    for (let e = 0; e < experts; e++) total += probs[e] = Math.exp(row[e] - max);
    taken.fill(0);
    let sum = 0;
    for (let j = 0; j < k; j++) {
      let best = -1;
      // Strictly greater: on a tie the lower index, found first, stays.
      for (let e = 0; e < experts; e++) if (!taken[e] && (best < 0 || probs[e] > probs[best])) best = e;
      taken[best] = 1;
      chosen[r * k + j] = best;
      sum += chosenWeights[r * k + j] = probs[best] / total;
      counts[best]++;
    }
    if (renormalise) for (let j = 0; j < k; j++) chosenWeights[r * k + j] /= sum;
  }
  const starts = new Int32Array(experts + 1);
  for (let e = 0; e < experts; e++) starts[e + 1] = starts[e] + counts[e];
  const at = starts.slice(0, experts);
  const rows = new Int32Array(n * k);
  const weights = new Float32Array(n * k);
  for (let i = 0; i < n * k; i++) {
    const e = chosen[i];
    rows[at[e]] = Math.floor(i / k);
    weights[at[e]++] = chosenWeights[i];
  }
  return { starts, rows, weights };
}
