// Bodies whose top-level members hold long arrays are parsed a slice of items at a time: the
// result is JSON.parse's, and every slice is held to the same strict rules as a whole body.

import { JsonShapeScanner } from '../../../src/common/body/json-shape';
import { longMemberArrays, parseInSlices } from '../../../src/common/body/json-slices';
import { parse as secureJsonParse } from 'secure-json-parse';

const LIMITS = { maxDepth: 16, maxObjectKeys: 100, maxArrayLength: 1_000_000, maxStringLength: 1_000_000 };
const strict = (text: string): unknown => secureJsonParse(text, undefined, { protoAction: 'error', constructorAction: 'error' });

function scan(text: string, chunk = 7919): JsonShapeScanner {
  const scanner = new JsonShapeScanner(LIMITS);
  for (let at = 0; at < text.length; at += chunk) scanner.feed(text.slice(at, at + chunk));
  return scanner;
}

async function parseSliced(text: string): Promise<unknown> {
  const arrays = longMemberArrays(scan(text).memberArrays);
  if (arrays === null) throw new Error('expected long member arrays');
  return parseInSlices(text, arrays, strict);
}

describe('parseInSlices', () => {
  const items = Array.from({ length: 10_000 }, (_, i) => ({ role: i % 2 ? 'user' : 'assistant', content: `m,${i}]["{`, parts: [i, { x: [i] }] }));

  it('gives what JSON.parse gives, for long arrays among other members', async () => {
    const body = { model: 'm', input: items, n: 2, nested: { list: [1, 2, 3] }, tags: Array.from({ length: 5000 }, (_, i) => `t${i}`), empty: [] };
    const text = JSON.stringify(body, null, 1);
    expect(await parseSliced(text)).toEqual(body);
  });

  it('leaves bodies without a long member array to the whole parse', () => {
    expect(longMemberArrays(scan(JSON.stringify({ input: items.slice(0, 100), deep: [[...Array(9000).keys()]] })).memberArrays)).toBeNull();
    expect(longMemberArrays(scan(JSON.stringify(items)).memberArrays)).toBeNull();
  });

  it('holds every slice to the strict parse: prototype keys and syntax errors are refused', async () => {
    const poisoned = JSON.stringify({ input: items }).replace('"parts":[9000', '"__proto__":{"x":1},"parts":[9000');
    await expect(parseSliced(poisoned)).rejects.toThrow();
    const broken = JSON.stringify({ input: items }).replace('"content":"m,5000', '"content":m,5000');
    await expect(parseSliced(broken)).rejects.toThrow(SyntaxError);
  });
});
