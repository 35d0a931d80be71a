// Rewrites a vLLM-style command line into one commander parses, as vLLM's FlexibleArgumentParser
// reads it: `--config FILE.yaml` (keys in either spelling; command-line flags win), `--flag_name`
// spelled with underscores, short aliases (-tp 2, -O3) and dotted JSON keys
// (--compilation-config.level 3 → --compilation-config '{"level":3}').

import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from '../config/server-config';

export interface ArgvRules {
  /** Short alias → long flag (e.g. '-tp' → '--tensor-parallel-size'). */
  aliases: ReadonlyMap<string, string>;
  /** Long flags the command knows (to turn `key: false` into `--no-key` where that exists). */
  knownFlags: ReadonlySet<string>;
}

/** `argv` = the arguments after the subcommand. Throws ConfigError on an unreadable --config. */
export function normalizeVllmArgv(argv: readonly string[], rules: ArgvRules): string[] {
  const expanded = expandConfigFile(argv, rules);
  return mergeDottedKeys(expanded.flatMap((arg) => normalizeArg(arg, rules)));
}

function normalizeArg(arg: string, rules: ArgvRules): string[] {
  if (arg === '--') return [arg];
  if (arg.startsWith('--')) {
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg : arg.slice(0, eq);
    const dot = name.indexOf('.');
    const head = (dot < 0 ? name : name.slice(0, dot)).replace(/_/g, '-');
    return [head + (dot < 0 ? '' : name.slice(dot)) + (eq < 0 ? '' : arg.slice(eq))];
  }
  if (arg.startsWith('-O') && arg !== '-O' && arg[2] !== '.') {
    // -O3 / -O=3: the optimization level without a space.
    return ['--optimization-level', arg[2] === '=' ? arg.slice(3) : arg.slice(2)];
  }
  if (arg.startsWith('-') && !/^-\d/.test(arg)) {
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg : arg.slice(0, eq);
    const dot = name.indexOf('.');
    const alias = rules.aliases.get(dot < 0 ? name : name.slice(0, dot));
    if (alias) return [alias + (dot < 0 ? '' : name.slice(dot)) + (eq < 0 ? '' : arg.slice(eq))];
  }
  return [arg];
}

/** --x.a 1 --x.b.c 2 → --x '{"a":1,"b":{"c":2}}' (values parsed as JSON when they are JSON). */
function mergeDottedKeys(args: string[]): string[] {
  const out: string[] = [];
  const dicts = new Map<string, Record<string, unknown>>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg : arg.slice(0, eq);
    if (!arg.startsWith('--') || !name.includes('.')) {
      out.push(arg);
      continue;
    }
    let text: string;
    if (eq >= 0) text = arg.slice(eq + 1);
    else {
      if (i + 1 >= args.length) throw new ConfigError(`${name} needs a value`);
      text = args[++i];
    }
    const [flag, ...keys] = name.split('.');
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = text;
    }
    let node = dicts.get(flag) ?? {};
    dicts.set(flag, node);
    for (const key of keys.slice(0, -1)) node = (node[key] ??= {}) as Record<string, unknown>;
    node[keys[keys.length - 1]] = value;
  }
  for (const [flag, dict] of dicts) out.push(flag, JSON.stringify(dict));
  return out;
}

/**
 * Splices the YAML file's flags in after the positional MODEL (if any) and before the other
 * command-line flags, so a flag given on the command line wins (vLLM's precedence).
 */
function expandConfigFile(argv: readonly string[], rules: ArgvRules): string[] {
  const at = argv.findIndex((a) => a === '--config' || a.startsWith('--config='));
  if (at < 0) return [...argv];
  if (argv.slice(at + 1).some((a) => a === '--config' || a.startsWith('--config='))) throw new ConfigError('--config: give one config file');
  const inline = argv[at].startsWith('--config=');
  const file = inline ? argv[at].slice('--config='.length) : argv[at + 1];
  if (!file || file.startsWith('-')) throw new ConfigError('--config needs a YAML file');
  const rest = [...argv.slice(0, at), ...argv.slice(at + (inline ? 1 : 2))];
  const fileArgs = readConfigFile(file, rules);
  const positional = rest.length > 0 && !rest[0].startsWith('-') ? 1 : 0;
  // A `model:` key is the MODEL argument unless the command line gives one.
  const modelAt = fileArgs.indexOf('--model');
  if (modelAt >= 0 && (positional === 1 || rest.some((a) => a === '--model' || a.startsWith('--model=')))) fileArgs.splice(modelAt, 2);
  return [...rest.slice(0, positional), ...fileArgs, ...rest.slice(positional)];
}

function readConfigFile(file: string, rules: ArgvRules): string[] {
  if (!['.yaml', '.yml'].includes(extname(file).toLowerCase())) {
    throw new ConfigError(`--config ${file}: the config file must be YAML (.yaml or .yml)`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`--config ${file}: ${(err as Error).message}`);
  }
  if (doc === null || doc === undefined) return [];
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(`--config ${file}: expected a mapping of flag names to values`);
  const args: string[] = [];
  for (const [key, value] of Object.entries(doc as Record<string, unknown>)) {
    const flag = `--${key.replace(/_/g, '-')}`;
    if (value === null || value === undefined) continue;
    if (typeof value === 'boolean') {
      // vLLM drops `false`; where the flag has a --no- form, false means that.
      if (value) args.push(flag);
      else if (rules.knownFlags.has(`--no-${flag.slice(2)}`)) args.push(`--no-${flag.slice(2)}`);
    } else if (Array.isArray(value)) {
      if (value.length > 0) args.push(flag, ...value.map((v) => (typeof v === 'object' ? JSON.stringify(v) : String(v))));
    } else {
      args.push(flag, typeof value === 'string' ? value : JSON.stringify(value));
    }
  }
  return args;
}
