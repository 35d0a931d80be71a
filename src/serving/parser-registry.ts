// A name -> parser-class table, one for tool-call parsers and one for reasoning parsers: the
// built-ins register at import, plugin files (--tool-parser-plugin, --reasoning-parser-plugin)
// add theirs at start-up, and the flags pick one by name.

export class ParserRegistry<F> {
  private readonly entries = new Map<string, F>();

  constructor(readonly kind: string) {}

  /** Registers `factory` under each name; a later registration of a name replaces the earlier (as vLLM's force=True). */
  register(names: string | readonly string[], factory: F): void {
    for (const name of typeof names === 'string' ? [names] : names) {
      if (typeof name !== 'string' || name === '') throw new Error(`a ${this.kind} needs a non-empty name`);
      this.entries.set(name, factory);
    }
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  /** The factory registered as `name`; throws naming the registered ones otherwise. */
  get(name: string): F {
    const factory = this.entries.get(name);
    if (factory === undefined) {
      throw new Error(`${this.kind} '${name}' is not registered (registered: ${this.names().join(', ')})`);
    }
    return factory;
  }

  names(): string[] {
    return [...this.entries.keys()].sort();
  }
}
