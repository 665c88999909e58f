import type { RedisConnection } from '@redis-stream-coordinator/nestjs/internal';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { describeGroup } from '../groups/group-describer.js';
import { KeyLayoutMigration } from '../key-layout/key-layout-migration.js';
import { LegacyKeyLayoutError } from '../key-layout/legacy-key-layout.error.js';
import { GroupStore } from '../store/group-store.js';
import { StreamRegistry } from '../store/stream-registry.js';
import { GroupProjector } from './group-projector.js';
import { projectedGroupState } from './group-projection.js';
import { compareWithLive } from './projection-verifier.js';
import { ProjectionStore } from './projection-store.js';

/** What `npm run projections -- <command>` does. */
export type ProjectionCommand = 'rebuild' | 'verify' | 'show';

/** Settings of {@link runProjectionTool}. */
export interface ProjectionToolOptions {
  readonly command: ProjectionCommand;
  /** Groups to handle; empty: every group of the index. */
  readonly groups: readonly string[];
  readonly keyPrefix: string;
  readonly defaultAssignor: string;
  /** Where lines of output go. */
  readonly print: (line: string) => void;
}

/** A bad command line of the projection tool. */
export class ProjectionToolUsageError extends Error {
  override readonly name = 'ProjectionToolUsageError';
}

/**
 * Rebuilds group projections from the event log alone (`rebuild`), additionally compares the
 * describe view and gauge values rebuilt from the log with those of the live records (`verify`),
 * or prints the describe view rebuilt from the log (`show`). Resolves the process exit code:
 * 0, or 1 when a group could not be rebuilt or differs from its live state. Throws
 * {@link LegacyKeyLayoutError} when Redis still holds the old key layout.
 */
export async function runProjectionTool(
  redis: RedisConnection,
  options: ProjectionToolOptions,
): Promise<number> {
  const keys = new KeySpace(options.keyPrefix);
  // On the old key layout every group would look absent: say so rather than verify nothing.
  const legacy = await new KeyLayoutMigration(redis, keys).legacyMarkers();
  if (legacy.length > 0) throw new LegacyKeyLayoutError(legacy);
  const store = new GroupStore(redis, keys, { maxLen: 10_000, maxAgeMs: 0 });
  const projector = new GroupProjector(store, new ProjectionStore(redis, keys));
  const catalog = new StreamRegistry(redis, keys);
  await catalog.refresh();
  const groups = options.groups.length > 0 ? options.groups : await store.listGroupIds();
  let failed = 0;
  for (const groupId of groups) {
    try {
      const projection = await projector.rebuild(groupId);
      if (projection === null) {
        options.print(`${groupId}: no event log (the group does not exist)`);
        failed++;
        continue;
      }
      if (options.command === 'show') {
        const lastSeen = await store.lastSeen(groupId);
        options.print(
          JSON.stringify(
            describeGroup(projectedGroupState(projection), lastSeen, options.defaultAssignor),
            null,
            2,
          ),
        );
        continue;
      }
      const summary = `${groupId}: rebuilt at version ${projection.version} from ${projection.eventsFolded} events (last ${projection.lastEventId})`;
      if (options.command === 'rebuild') {
        options.print(summary);
        continue;
      }
      const comparison = await compareWithLive(store, projection, catalog, options.defaultAssignor);
      if (comparison.differences.length === 0) {
        options.print(`${summary}; equal to the live state`);
      } else {
        failed++;
        options.print(`${summary}; DIFFERS from the live state:`);
        for (const d of comparison.differences) options.print(`  ${d}`);
      }
    } catch (error) {
      failed++;
      options.print(`${groupId}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  if (groups.length === 0) options.print('no groups');
  return failed > 0 ? 1 : 0;
}

/** Parses `<rebuild|verify|show> [--group <id>]…`. */
export function parseProjectionArgs(argv: readonly string[]): {
  command: ProjectionCommand;
  groups: string[];
} {
  const [command, ...rest] = argv;
  if (command !== 'rebuild' && command !== 'verify' && command !== 'show') {
    throw new ProjectionToolUsageError(
      `unknown command ${JSON.stringify(command ?? '')}; usage: projections <rebuild|verify|show> [--group <id>]...`,
    );
  }
  const groups: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    if (arg === '--group' || arg === '-g') {
      const value = rest[++i];
      if (!value) throw new ProjectionToolUsageError(`${arg} needs a group id`);
      groups.push(value);
    } else {
      throw new ProjectionToolUsageError(
        `unknown argument ${JSON.stringify(arg)}; usage: projections <rebuild|verify|show> [--group <id>]...`,
      );
    }
  }
  return { command, groups };
}
