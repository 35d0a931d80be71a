// Reads a processor's settings (a JSON object or GGUF metadata) field by field and remembers
// which it read, so whatever is left can be refused by name instead of silently ignored.
// A null value counts as absent: transformers writes unset fields as null.
import type { Triple } from './normalize';

export class SettingsReader {
  private readonly read = new Set<string>();

  constructor(
    private readonly values: Record<string, unknown>,
    private readonly where: string,
  ) {}

  has(key: string): boolean {
    return this.values[key] !== undefined && this.values[key] !== null;
  }

  fail(key: string, problem: string): never {
    throw new Error(`${this.where}: ${key} ${problem}`);
  }

  raw(key: string): unknown {
    this.read.add(key);
    return this.has(key) ? this.values[key] : undefined;
  }

  number(key: string, fallback?: number): number {
    const value = this.raw(key) ?? fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      this.fail(key, value === undefined ? 'is required' : `must be a positive number, got ${JSON.stringify(value)}`);
    }
    return value;
  }

  integer(key: string, fallback?: number): number {
    const value = this.number(key, fallback);
    if (!Number.isInteger(value)) this.fail(key, `must be an integer, got ${value}`);
    return value;
  }

  bool(key: string, fallback: boolean): boolean {
    const value = this.raw(key) ?? fallback;
    if (typeof value !== 'boolean') this.fail(key, `must be true or false, got ${JSON.stringify(value)}`);
    return value;
  }

  string(key: string): string | undefined {
    const value = this.raw(key);
    if (value !== undefined && typeof value !== 'string') this.fail(key, `must be a string, got ${JSON.stringify(value)}`);
    return value;
  }

  /** A per-channel list (one number is used for all three, as transformers allows). */
  triple(key: string, fallback?: Triple): Triple {
    const value = this.raw(key) ?? fallback;
    if (value === undefined) this.fail(key, 'is required');
    const list = typeof value === 'number' ? [value, value, value] : value;
    if (!Array.isArray(list) || list.length < 3 || !list.every((v) => typeof v === 'number' && Number.isFinite(v))) {
      this.fail(key, `must be three numbers, got ${JSON.stringify(value)}`);
    }
    return [list[0] as number, list[1] as number, list[2] as number];
  }

  /** A nested object such as `size`, read through its own reader. */
  object(key: string): SettingsReader | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (typeof value !== 'object' || Array.isArray(value)) this.fail(key, `must be an object, got ${JSON.stringify(value)}`);
    return new SettingsReader(value as Record<string, unknown>, `${this.where} ${key}`);
  }

  /** Marks settings that do not change the output (names, classes), so they are not refused. */
  accept(...keys: string[]): void {
    for (const key of keys) this.read.add(key);
  }

  /** Throws for the first set value nobody read. */
  refuseUnread(): void {
    const left = Object.keys(this.values).filter((key) => !this.read.has(key) && this.has(key));
    if (left.length > 0) {
      throw new Error(`${this.where}: unsupported setting${left.length > 1 ? 's' : ''} ${left.map((k) => `${k}=${JSON.stringify(this.values[k])}`).join(', ')}`);
    }
  }
}
