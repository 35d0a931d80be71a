// routeRows: top-k by softmax probability with the lower index first on ties, renormalisation,
// and the rows grouped by expert.
import { routeRows } from '../../../src/model/moe/routing';

describe('routeRows', () => {
  it('groups rows by expert with their softmax weights', () => {
    // Row 0 prefers expert 2 then 0; row 1 prefers 1 then 2.
    const logits = Float32Array.from([1, 0, 2, -1, 0, 3, 1, -2]);
    const { starts, rows, weights } = routeRows(logits, 2, 4, 2, false);
    expect(Array.from(starts)).toEqual([0, 1, 2, 4, 4]);
    expect(Array.from(rows)).toEqual([0, 1, 0, 1]);
    const soft = (row: number[], e: number) => Math.exp(row[e]) / row.reduce((s, v) => s + Math.exp(v), 0);
    expect(weights[0]).toBeCloseTo(soft([1, 0, 2, -1], 0), 6);
    expect(weights[2]).toBeCloseTo(soft([1, 0, 2, -1], 2), 6);
    expect(weights[3]).toBeCloseTo(soft([0, 3, 1, -2], 2), 6);
  });

  it('renormalises the chosen weights to sum to 1 when asked', () => {
    const { rows, weights } = routeRows(Float32Array.from([1, 0, 2, -1]), 1, 4, 2, true);
    expect(Array.from(rows)).toEqual([0, 0]);
    expect(weights[0] + weights[1]).toBeCloseTo(1, 6);
    expect(weights[1] / weights[0]).toBeCloseTo(Math.E, 5);
  });

  it('takes the lower expert index first on a tie', () => {
    const { starts } = routeRows(Float32Array.from([0.5, 2, 0.5, 2, 0.5]), 1, 5, 3, true);
    // Experts 1 and 3 (the two best), then expert 0 of the three tied at 0.5.
    expect(Array.from(starts)).toEqual([0, 1, 2, 2, 3, 3]);
  });
});
