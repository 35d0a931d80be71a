/** Largest absolute difference between a and b, relative to b's largest magnitude. */
export function maxRelDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let diff = 0;
  let mag = 0;
  for (let i = 0; i < a.length; i++) {
    diff = Math.max(diff, Math.abs(a[i] - b[i]));
    mag = Math.max(mag, Math.abs(b[i]));
  }
  return diff / mag;
}
