import { EXP_CUTOFF, expNonPositive } from '../../../src/engine/sampling/fast-exp';

describe('expNonPositive', () => {
  it('matches Math.exp within 2e-7 relative on (-EXP_CUTOFF, 0]', () => {
    let worst = 0;
    for (let i = 0; i <= 200000; i++) {
      const x = -(i / 200000) * (EXP_CUTOFF - 1e-9);
      worst = Math.max(worst, Math.abs(expNonPositive(x) / Math.exp(x) - 1));
    }
    expect(worst).toBeLessThan(2e-7);
    expect(expNonPositive(0)).toBe(1);
  });

  it('is 0 at and below the cutoff, for -Infinity and NaN', () => {
    expect(expNonPositive(-EXP_CUTOFF)).toBe(0);
    expect(expNonPositive(-1000)).toBe(0);
    expect(expNonPositive(-Infinity)).toBe(0);
    expect(expNonPositive(NaN)).toBe(0);
  });
});
