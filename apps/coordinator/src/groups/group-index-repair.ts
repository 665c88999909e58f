import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import type { Cluster, Redis } from 'ioredis';
import type { GroupStore } from '../store/group-store.js';

/** Keys Redis examines per `SCAN` call. */
const SCAN_COUNT = 500;
/** `SCAN` calls per pass (so at most ~10 000 keys examined per pass, the rest on the next). */
const MAX_SCANS_PER_PASS = 20;
/** Unindexed-group candidates one pass collects at most (the sweep goes on next pass). */
const MAX_FOUND_PER_PASS = 10_000;

/** Minimal logger (Nest's `Logger` fits). */
interface RepairLogger {
  warn(message: string): void;
}

/**
 * Finds groups that exist but are missing from the index of groups, whichever replica (if any)
 * has them cached: SCANs this prefix's group meta hashes on every master (a sweep continues over
 * passes; each pass does a bounded number of SCAN calls) and indexes every one holding a live
 * group (a `version` field; a hash holding only `incarnationFloor` is a deleted group's tombstone
 * and stays unindexed). The index is written next to a group's commits, not in them (another
 * slot on Redis Cluster), so a crash in between leaves such a group behind. Idempotent: several
 * replicas repairing at once only repeat SADDs.
 */
export class GroupIndexRepair {
  /** Masters (by address) whose sweep is not finished, the first one being continued. */
  private pending: string[] = [];
  private readonly cursors = new Map<string, string>();

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly keys: KeySpace,
    private readonly store: GroupStore,
    private readonly logger: RepairLogger,
  ) {}

  /** One bounded pass; returns the groups it indexed. */
  async pass(): Promise<string[]> {
    const masters = this.masters();
    if (this.pending.length === 0) {
      this.pending = [...masters.keys()];
      this.cursors.clear();
    }
    const found = new Set<string>();
    let budget = MAX_SCANS_PER_PASS;
    while (this.pending.length > 0 && budget > 0 && found.size < MAX_FOUND_PER_PASS) {
      const address = this.pending[0] as string;
      const node = masters.get(address);
      let cursor = this.cursors.get(address) ?? '0';
      if (node) {
        do {
          const [next, batch] = await node.scan(
            cursor,
            'MATCH',
            this.keys.groupMetaKeyPattern(),
            'COUNT',
            SCAN_COUNT,
          );
          cursor = next;
          budget--;
          for (const key of batch) {
            const group = this.keys.groupFromMeta(key);
            if (group !== null) found.add(group);
          }
        } while (cursor !== '0' && budget > 0 && found.size < MAX_FOUND_PER_PASS);
      }
      if (!node || cursor === '0') {
        // Swept (or gone after a failover: its keys are on a master swept next time).
        this.pending.shift();
        this.cursors.delete(address);
      } else {
        this.cursors.set(address, cursor);
      }
    }
    return this.indexLive([...found]);
  }

  /** Indexes those of `groups` that hold a live group and are not indexed. */
  private async indexLive(groups: string[]): Promise<string[]> {
    const missing: string[] = [];
    for (let i = 0; i < groups.length; i += SCAN_COUNT) {
      const batch = groups.slice(i, i + SCAN_COUNT);
      const member = await this.redis.smismember(this.keys.groupsIndexKey(), ...batch);
      missing.push(...batch.filter((_, k) => member[k] === 0));
    }
    const indexed: string[] = [];
    for (const group of missing) {
      if ((await this.redis.hexists(this.keys.groupMetaKey(group), 'version')) !== 1) continue;
      if (await this.store.index(group)) {
        indexed.push(group);
        this.logger.warn(
          `group ${group} exists but was not in the index of groups (no replica had it cached); indexed again`,
        );
      }
    }
    return indexed;
  }

  /** Every master by address (the one server when not a cluster). */
  private masters(): Map<string, Redis> {
    if (!('nodes' in this.redis)) return new Map([['server', this.redis]]);
    return new Map(
      this.redis.nodes('master').map((node) => [`${node.options.host}:${node.options.port}`, node]),
    );
  }
}
