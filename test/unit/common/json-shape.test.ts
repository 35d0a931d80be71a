// JsonShapeScanner: the request-body shape limits, checked chunk by chunk before JSON.parse.

import { checkJsonShape, JsonShapeScanner, type JsonLimits } from '../../../src/common/body/json-shape';

const LIMITS: JsonLimits = { maxDepth: 4, maxObjectKeys: 3, maxArrayLength: 5, maxStringLength: 10 };

const keys = (n: number): string => `{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',')}}`;
const array = (n: number): string => `[${Array.from({ length: n }, (_, i) => i).join(', ')}]`;
const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

describe('JsonShapeScanner', () => {
  it('accepts every limit exactly and refuses one past it, naming the flag', () => {
    expect(() => checkJsonShape(keys(3), LIMITS)).not.toThrow();
    expect(() => checkJsonShape(keys(4), LIMITS)).toThrow(/more than 3 keys \(--max-json-object-keys\)/);
    expect(() => checkJsonShape(array(5), LIMITS)).not.toThrow();
    expect(() => checkJsonShape(array(6), LIMITS)).toThrow(/more than 5 items \(--max-json-array-length\)/);
    expect(() => checkJsonShape(nested(4), LIMITS)).not.toThrow();
    expect(() => checkJsonShape(nested(5), LIMITS)).toThrow(/deeper than 4 levels \(--max-json-depth\)/);
    expect(() => checkJsonShape('"0123456789"', LIMITS)).not.toThrow();
    expect(() => checkJsonShape('"0123456789a"', LIMITS)).toThrow(/longer than 10 characters \(--max-json-string-length\)/);
    expect(() => checkJsonShape('{"0123456789a":1}', LIMITS)).toThrow(/--max-json-string-length/);
  });

  it('counts per container: siblings and nested containers have their own counts', () => {
    expect(() => checkJsonShape('{"a":{"x":1,"y":2,"z":3},"b":[1,2,3,4,5],"c":{"x":[1,2,3,4,5]}}', LIMITS)).not.toThrow();
    expect(() => checkJsonShape('[[1,2,3,4,5],[1,2,3,4,5],[],{},"s"]', LIMITS)).not.toThrow();
    expect(() => checkJsonShape('[[1,2,3,4,5],[1,2,3,4,5,6]]', LIMITS)).toThrow(/items/);
  });

  it('ignores brackets, commas, quotes and backslashes inside strings', () => {
    const text = '["[[[[[,,,,,", "{{{{{", "\\"\\\\\\"", "\\u0041"]';
    expect(() => checkJsonShape(text, LIMITS)).not.toThrow();
    expect(JSON.parse(text)).toHaveLength(4);
  });

  it('gives the same verdict however the text is cut into chunks', () => {
    const texts = [
      '{"a":"x\\"y\\\\","b":[1,[2,[3]]],"c":{"d":"\\\\"}}',
      '["ab\\"cd\\\\", {"k":"v"}, [[[1]]], "0123456789"]',
      '{"a":1,"b":2,"c":3,"d":4}',
      '"0123456789\\\\x"',
      nested(5),
    ];
    for (const text of texts) {
      let whole: string | null = null;
      try {
        checkJsonShape(text, LIMITS);
      } catch (err) {
        whole = (err as Error).message;
      }
      for (let cut = 0; cut <= text.length; cut++) {
        for (let cut2 = cut; cut2 <= text.length; cut2 += 3) {
          const scanner = new JsonShapeScanner(LIMITS);
          let pieces: string | null = null;
          try {
            scanner.feed(text.slice(0, cut));
            scanner.feed(text.slice(cut, cut2));
            scanner.feed(text.slice(cut2));
          } catch (err) {
            pieces = (err as Error).message;
          }
          expect([text, cut, cut2, pieces]).toEqual([text, cut, cut2, whole]);
        }
      }
    }
  });

  it('refuses a hostile body at the chunk that breaks the limit, before reading the rest', () => {
    const scanner = new JsonShapeScanner({ maxDepth: 128, maxObjectKeys: 10_000, maxArrayLength: 1_000_000, maxStringLength: 1 << 20 });
    scanner.feed('{"metadata":{');
    let fed = 0;
    expect(() => {
      for (let i = 0; i < 100_000; i++, fed++) scanner.feed(`"k${i}":1,`);
    }).toThrow(/--max-json-object-keys/);
    expect(fed).toBe(10_000);
  });
});
