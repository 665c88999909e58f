import { CliUsageError } from './cli.errors.js';

/** Options every command accepts. */
export const GLOBAL_FLAGS = ['json', 'help'] as const;
/** Options that take a value, every command. */
export const GLOBAL_VALUES = ['url', 'token', 'timeout'] as const;

/** A parsed command line: positional words, `--flag`s and `--option value`s. */
export interface ParsedArgs {
  readonly positionals: string[];
  readonly flags: Set<string>;
  readonly values: Map<string, string>;
}

/**
 * Splits argv into positionals, flags (`--json`) and valued options (`--shards 4`,
 * `--shards=4`). `valued` names the options that take a value; anything else starting with `-`
 * that is not a known flag is refused, so a typo never passes silently. `--` ends options.
 */
export function parseArgs(
  argv: readonly string[],
  flags: readonly string[],
  valued: readonly string[],
): ParsedArgs {
  const out: ParsedArgs = { positionals: [], flags: new Set(), values: new Map() };
  const aliases: Record<string, string> = { h: 'help', f: 'follow', n: 'limit' };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      out.positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      out.positionals.push(arg);
      continue;
    }
    const body = arg.startsWith('--')
      ? arg.slice(2)
      : (aliases[arg.slice(1)] ?? `-${arg.slice(1)}`);
    const eq = body.indexOf('=');
    const name = eq >= 0 ? body.slice(0, eq) : body;
    if (flags.includes(name)) {
      if (eq >= 0) throw new CliUsageError(`option --${name} takes no value`);
      out.flags.add(name);
    } else if (valued.includes(name)) {
      const value = eq >= 0 ? body.slice(eq + 1) : argv[++i];
      if (value === undefined || value === '')
        throw new CliUsageError(`option --${name} needs a value`);
      out.values.set(name, value);
    } else {
      throw new CliUsageError(`unknown option ${arg}`);
    }
  }
  return out;
}

/** A positive integer option (`--shards 4`), or `fallback` when absent. */
export function intOption(
  args: ParsedArgs,
  name: string,
  fallback?: number,
  min = 1,
  max = 1_000_000_000,
): number {
  const raw = args.values.get(name);
  if (raw === undefined) {
    if (fallback === undefined) throw new CliUsageError(`option --${name} is required`);
    return fallback;
  }
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new CliUsageError(
      `option --${name} must be an integer between ${min} and ${max} (got ${JSON.stringify(raw)})`,
    );
  }
  return n;
}
