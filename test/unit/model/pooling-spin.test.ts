/** @jest-environment ./test/helpers/ort-environment.js */
// The intra-op threads' spin setting: sessions sleep their idle threads at once unless a runner
// asks for a bounded spin, which the pooling runner does (POOLING_SPIN_MICROSECONDS); onnxruntime
// takes the setting and a spinning session still computes the same vectors.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel } from '../../../src/model/load-model';
import { createPoolingRunner, POOLING_SPIN_MICROSECONDS, poolingSessionSettings } from '../../../src/model/runner/pooling-runner';
import * as session from '../../../src/model/runner/session';
import { cosine, referenceEncoderStates, referencePool, writeEncoderDir, type WrittenEncoder } from '../../helpers/encoder-model';
import { loadOptions } from '../../helpers/model-files';

const intraOp = (settings: session.SessionSettings) => (session.sessionOptions(settings).extra as { session: { intra_op: Record<string, string> } }).session.intra_op;

describe('sessionOptions: intra-op spinning', () => {
  it('never spins unless asked', () => {
    expect(intraOp({ device: 'cpu' })).toEqual({ allow_spinning: '0' });
    expect(intraOp({ device: 'cpu', intraOpThreads: 2, spinMicroseconds: 0 })).toEqual({ allow_spinning: '0' });
  });

  it('a bounded spin sets allow_spinning and spin_duration_us', () => {
    expect(intraOp({ device: 'cpu', spinMicroseconds: 25 })).toEqual({ allow_spinning: '1', spin_duration_us: '25' });
  });

  it('refuses a spin that is not a whole number of microseconds', () => {
    expect(() => session.sessionOptions({ device: 'cpu', spinMicroseconds: -1 })).toThrow(/spinMicroseconds/);
    expect(() => session.sessionOptions({ device: 'cpu', spinMicroseconds: 2.5 })).toThrow(/spinMicroseconds/);
  });
});

describe('pooling runner sessions spin briefly', () => {
  let tmp: string;
  let written: WrittenEncoder;
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'ortllm-spin-'));
    written = writeEncoderDir(join(tmp, 'bert'), { family: 'bert', numLabels: null, hidden: 32, layers: 2, heads: 4, intermediate: 64, maxPositions: 64 }, 5, { pooling: 'mean', normalize: true });
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('asks for POOLING_SPIN_MICROSECONDS unless told otherwise', () => {
    expect(POOLING_SPIN_MICROSECONDS).toBeGreaterThan(0);
    expect(poolingSessionSettings({ device: 'cpu', intraOpThreads: 2 })).toEqual({ device: 'cpu', intraOpThreads: 2, spinMicroseconds: POOLING_SPIN_MICROSECONDS });
    expect(poolingSessionSettings({ device: 'cpu', spinMicroseconds: 0 })).toMatchObject({ spinMicroseconds: 0 });
  });

  it('spinning and sleeping sessions compute the same vectors', async () => {
    const model = await loadModel(loadOptions(written.dir));
    const tokens = [2, 9, 14, 7, 3];
    const expected = referencePool(referenceEncoderStates(written, tokens), 'MEAN');
    for (const spinMicroseconds of [undefined, 0, 1000]) {
      const runner = await createPoolingRunner(model, { device: 'cpu', intraOpThreads: 2, spinMicroseconds });
      try {
        const [vector] = await runner.encode([{ tokens }]);
        expect(cosine(vector, expected)).toBeGreaterThan(1 - 1e-4);
      } finally {
        await runner.dispose();
      }
    }
  });
});
