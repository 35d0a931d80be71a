// JSON.parse of a 30 MB body with a million items holds the HTTP thread for a third of a second
// or more. A body whose top-level members hold long arrays (the JsonShapeScanner noted their
// items' commas) is parsed in pieces instead: the body with each long array replaced by a marker,
// then each array a slice of items at a time, taking turns with the event loop between slices.
// Every piece goes through the same strict parse (syntax, prototype keys) as a whole body.

import { randomBytes } from 'node:crypto';
import { takeTurn } from '../../serving/yield-budget';
import type { MemberArray } from './json-shape';

/** Items an array needs before it is parsed in slices, and the items per slice. */
const SLICED_ARRAY_ITEMS = 4096;
const ITEMS_PER_SLICE = 2048;

type Parse = (text: string) => unknown;

/** The long, complete member arrays of `text` (null when there is none: parse it whole). */
export function longMemberArrays(arrays: readonly MemberArray[]): MemberArray[] | null {
  const long = arrays.filter((a) => a.close > a.open && a.commas.length >= SLICED_ARRAY_ITEMS);
  return long.length > 0 ? long : null;
}

async function parseItems(text: string, array: MemberArray, parse: Parse): Promise<unknown[]> {
  const items: unknown[] = [];
  const count = array.commas.length + 1;
  for (let first = 0; first < count; first += ITEMS_PER_SLICE) {
    await takeTurn();
    const last = Math.min(count, first + ITEMS_PER_SLICE) - 1;
    const start = first === 0 ? array.open + 1 : array.commas[first - 1] + 1;
    const end = last === count - 1 ? array.close : array.commas[last];
    const slice = parse(`[${text.slice(start, end)}]`) as unknown[];
    for (const item of slice) items.push(item);
  }
  return items;
}

/** Parses `text` (a top-level object) with `arrays` (from longMemberArrays) parsed a slice at a time. */
export async function parseInSlices(text: string, arrays: readonly MemberArray[], parse: Parse): Promise<unknown> {
  const marker = `ortllm-sliced-array-${randomBytes(12).toString('hex')}`;
  const pieces: string[] = [];
  let at = 0;
  for (const [i, array] of arrays.entries()) {
    pieces.push(text.slice(at, array.open), `["${marker}",${i}]`);
    at = array.close + 1;
  }
  pieces.push(text.slice(at));
  const root = parse(pieces.join('')) as Record<string, unknown>;
  for (const [key, value] of Object.entries(root)) {
    if (!Array.isArray(value) || value.length !== 2 || value[0] !== marker) continue;
    root[key] = await parseItems(text, arrays[value[1] as number], parse);
  }
  return root;
}
