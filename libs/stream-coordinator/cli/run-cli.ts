import { GLOBAL_FLAGS, GLOBAL_VALUES, intOption, parseArgs, type ParsedArgs } from './cli-args.js';
import { CliError, CliUsageError } from './cli.errors.js';
import { CliHttpClient } from './cli-http-client.js';
import type { CliIo } from './cli-io.interface.js';
import { CLI_USAGE } from './cli-usage.js';
import type { CliContext } from './commands/cli-context.js';
import {
  DLQ_FILTER_VALUES,
  listDeadLetters,
  purgeDeadLetters,
  replayDeadLetters,
  showDeadLetter,
} from './commands/dlq.command.js';
import { tailEvents } from './commands/events.command.js';
import { describeGroup, listGroups } from './commands/groups.command.js';
import { removeMember } from './commands/members.command.js';
import {
  createStream,
  describeStream,
  listStreams,
  abandonGroup,
  reshardStream,
} from './commands/streams.command.js';

/** One command: its words, its positional arguments, its own options, what it runs. */
interface CommandSpec {
  readonly words: readonly [string, string];
  readonly params: readonly string[];
  readonly flags?: readonly string[];
  readonly values?: readonly string[];
  readonly run: (ctx: CliContext, ...params: string[]) => Promise<void>;
}

const COMMANDS: readonly CommandSpec[] = [
  { words: ['groups', 'list'], params: [], run: listGroups },
  { words: ['groups', 'describe'], params: ['group'], run: describeGroup },
  { words: ['streams', 'list'], params: [], run: listStreams },
  { words: ['streams', 'describe'], params: ['stream'], run: describeStream },
  { words: ['streams', 'create'], params: ['stream'], values: ['shards'], run: createStream },
  { words: ['streams', 'reshard'], params: ['stream'], values: ['shards'], run: reshardStream },
  { words: ['streams', 'abandon'], params: ['stream', 'group'], run: abandonGroup },
  { words: ['members', 'remove'], params: ['group', 'member'], run: removeMember },
  {
    words: ['events', 'tail'],
    params: ['group'],
    flags: ['follow', 'all'],
    values: ['limit', 'after', 'interval'],
    run: tailEvents,
  },
  {
    words: ['dlq', 'list'],
    params: ['stream'],
    flags: ['replayed', 'not-replayed'],
    values: [...DLQ_FILTER_VALUES, 'after', 'limit'],
    run: listDeadLetters,
  },
  { words: ['dlq', 'show'], params: ['stream', 'id'], run: showDeadLetter },
  {
    words: ['dlq', 'replay'],
    params: ['stream'],
    flags: ['all'],
    values: [...DLQ_FILTER_VALUES, 'ids', 'limit'],
    run: replayDeadLetters,
  },
  {
    words: ['dlq', 'purge'],
    params: ['stream'],
    flags: ['all', 'yes'],
    values: [...DLQ_FILTER_VALUES, 'ids', 'limit'],
    run: purgeDeadLetters,
  },
];

/** The first token of `COORDINATOR_TOKEN`-style lists (`a,b` → `a`). */
function firstToken(value: string | undefined): string | undefined {
  const t = value
    ?.split(',')
    .map((s) => s.trim())
    .find((s) => s.length > 0);
  return t || undefined;
}

function findCommand(positionals: readonly string[]): CommandSpec {
  const [group, verb] = positionals;
  if (group === undefined) throw new CliUsageError('no command given');
  const family = COMMANDS.filter((c) => c.words[0] === group);
  if (family.length === 0) throw new CliUsageError(`unknown command "${group}"`);
  const spec = family.find((c) => c.words[1] === verb);
  if (!spec) {
    const verbs = family.map((c) => c.words[1]).join(', ');
    throw new CliUsageError(
      verb === undefined
        ? `"${group}" needs a subcommand (${verbs})`
        : `unknown command "${group} ${verb}" (${group}: ${verbs})`,
    );
  }
  return spec;
}

/**
 * Runs the `rsc` CLI on `argv` (without `node` and the script). Resolves the exit code; every
 * failure is reported on `io.err` as one `rsc: …` line, never thrown.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    const loose = argv.filter((a) => a !== '--help' && a !== '-h');
    if (loose.length !== argv.length || argv.length === 0) {
      io.out(CLI_USAGE);
      return argv.length === 0 ? 2 : 0;
    }
    // A first pass that knows every command's options finds the command words; the second
    // accepts only that command's options.
    const everyFlag = [...GLOBAL_FLAGS, ...COMMANDS.flatMap((c) => c.flags ?? [])];
    const everyValue = [...GLOBAL_VALUES, ...COMMANDS.flatMap((c) => c.values ?? [])];
    const spec = findCommand(parseArgs(argv, everyFlag, everyValue).positionals.slice(0, 2));
    const args: ParsedArgs = parseArgs(
      argv,
      [...GLOBAL_FLAGS, ...(spec.flags ?? [])],
      [...GLOBAL_VALUES, ...(spec.values ?? [])],
    );
    const params = args.positionals.slice(2);
    if (params.length < spec.params.length) {
      throw new CliUsageError(
        `"${spec.words.join(' ')}" needs <${spec.params.slice(params.length).join('> <')}>`,
      );
    }
    if (params.length > spec.params.length) {
      throw new CliUsageError(
        `unexpected argument "${params[spec.params.length]}" for "${spec.words.join(' ')}"`,
      );
    }
    const url = (
      args.values.get('url') ??
      io.env.COORDINATOR_URL ??
      'http://127.0.0.1:7400'
    ).replace(/\/+$/, '');
    if (!/^https?:\/\/[^/\s]+/i.test(url)) {
      throw new CliUsageError(
        `the coordinator URL must be http://host:port or https://host:port (got ${JSON.stringify(url)})`,
      );
    }
    const token =
      args.values.get('token') ??
      firstToken(io.env.COORDINATOR_ADMIN_TOKEN) ??
      firstToken(io.env.COORDINATOR_TOKEN) ??
      firstToken(io.env.COORDINATOR_VIEWER_TOKEN);
    const client = new CliHttpClient({
      baseUrl: url,
      token,
      timeoutMs: intOption(args, 'timeout', 10_000, 1, 600_000),
    });
    await spec.run({ client, io, args, json: args.flags.has('json') }, ...params);
    return 0;
  } catch (error) {
    if (error instanceof CliError) {
      io.err(`rsc: ${error.message}`);
      return error.exitCode;
    }
    io.err(
      `rsc: unexpected failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    return 1;
  }
}
