import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect } from 'vitest';
import type {
  DescribedGroup,
  GroupEventEntry,
  HeartbeatRequest,
  HeartbeatResponse,
  ProtocolErrorBody,
  StreamShards,
} from '@redis-stream-coordinator/nestjs/protocol';
import {
  KeySpace,
  ownerField,
  parseFenceToken,
  prefixOfKey,
  shardMetaKey,
} from '@redis-stream-coordinator/nestjs/protocol';
import {
  type ApiResponse,
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../../support/coordinator-process.js';
import { useRedisPrefix } from '../../support/redis.js';

/** A running coordinator for one suite, with clients for both roles and the suite's Redis prefix. */
export interface CoordinatorFixture {
  readonly prefix: string;
  /** The test's own Redis client (same Redis as the coordinator). */
  redis(): Redis;
  coordinator(): CoordinatorProcess;
  /** Admin-token client. */
  admin(): CoordinatorApi;
  /** Member-token client. */
  member(): CoordinatorApi;
}

/**
 * Registers suite hooks that start the built coordinator on a unique key prefix with `env`, and
 * stop it (and delete its keys) afterwards.
 */
export function useCoordinator(
  label: string,
  env: Readonly<Record<string, string>> = {},
): CoordinatorFixture {
  const redis = useRedisPrefix(label);
  let child: CoordinatorProcess | undefined;
  beforeAll(async () => {
    child = await CoordinatorProcess.start({ prefix: redis.prefix, env });
  });
  afterAll(async () => {
    await child?.stop();
  });
  const running = (): CoordinatorProcess => {
    if (!child) throw new Error(`coordinator "${label}" is not running`);
    return child;
  };
  return {
    prefix: redis.prefix,
    redis: redis.redis,
    coordinator: running,
    admin: () => new CoordinatorApi(running().url, TEST_TOKENS.admin),
    member: () => new CoordinatorApi(running().url, TEST_TOKENS.member),
  };
}

/** Options of a join request. */
export interface JoinOptions {
  readonly instanceId?: string;
  readonly rackId?: string;
  readonly rebalanceTimeoutMs?: number;
  readonly assignor?: string;
}

/** A full join request (`memberEpoch: 0`, `ownedShards: []`). */
export function joinRequest(
  memberId: string,
  streams: readonly string[],
  options: JoinOptions = {},
): HeartbeatRequest {
  return {
    memberId,
    memberEpoch: 0,
    rebalanceTimeoutMs: options.rebalanceTimeoutMs ?? 30_000,
    subscribedStreams: [...streams],
    ownedShards: [],
    ...(options.instanceId !== undefined ? { instanceId: options.instanceId } : {}),
    ...(options.rackId !== undefined ? { rackId: options.rackId } : {}),
    ...(options.assignor !== undefined ? { assignor: options.assignor } : {}),
  };
}

/** `POST /v1/groups/{group}/heartbeat`. */
export function heartbeat<T = HeartbeatResponse>(
  api: CoordinatorApi,
  group: string,
  body: unknown,
): Promise<ApiResponse<T>> {
  return api.post<T>(`/v1/groups/${group}/heartbeat`, body);
}

/** A heartbeat that must succeed; returns its body. */
export async function ok(
  api: CoordinatorApi,
  group: string,
  body: HeartbeatRequest,
): Promise<HeartbeatResponse> {
  const res = await heartbeat(api, group, body);
  if (res.status !== 200) {
    throw new Error(
      `heartbeat ${JSON.stringify(body)} → ${res.status} ${JSON.stringify(res.body)}`,
    );
  }
  return res.body;
}

/** A heartbeat that must fail with `status`/`code`; returns the error body. */
export async function refused(
  api: CoordinatorApi,
  group: string,
  body: unknown,
  status: number,
  code: string,
): Promise<ProtocolErrorBody> {
  const res = await heartbeat<ProtocolErrorBody>(api, group, body);
  expect({ status: res.status, code: res.body?.error?.code }, JSON.stringify(res.body)).toEqual({
    status,
    code,
  });
  expect(typeof res.body.error.message).toBe('string');
  return res.body;
}

/** `GET /v1/groups/{group}` that must succeed. */
export async function describeGroup(api: CoordinatorApi, group: string): Promise<DescribedGroup> {
  const res = await api.get<DescribedGroup>(`/v1/groups/${group}`);
  if (res.status !== 200)
    throw new Error(`describe ${group} → ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** One member of a describe body, which must be listed. */
export function memberOf(
  group: DescribedGroup,
  memberId: string,
): DescribedGroup['members'][number] {
  const member = group.members.find((m) => m.memberId === memberId);
  if (!member)
    throw new Error(
      `member ${memberId} not in ${JSON.stringify(group.members.map((m) => m.memberId))}`,
    );
  return member;
}

/** Every event of a group, oldest first (pages of 1000). */
export async function allEvents(api: CoordinatorApi, group: string): Promise<GroupEventEntry[]> {
  const out: GroupEventEntry[] = [];
  let after: string | undefined;
  for (;;) {
    const query = `limit=1000${after ? `&after=${after}` : ''}`;
    const res = await api.get<{ events: GroupEventEntry[] }>(`/v1/groups/${group}/events?${query}`);
    if (res.status !== 200)
      throw new Error(`events ${group} → ${res.status} ${JSON.stringify(res.body)}`);
    out.push(...res.body.events);
    if (res.body.events.length < 1000) return out;
    after = res.body.events.at(-1)?.id;
  }
}

/** Shard ids of `stream` in a list of `{stream, shards}` (empty when the stream is absent). */
export function shardsOf(list: readonly StreamShards[] | undefined, stream: string): number[] {
  return list?.find((e) => e.stream === stream)?.shards ?? [];
}

/**
 * The group state docs/protocol.md §6.4 prescribes for a describe body (to check the reported
 * one).
 */
export function expectedGroupState(group: DescribedGroup): DescribedGroup['state'] {
  if (group.members.length === 0) return 'EMPTY';
  if (group.groupEpoch > group.assignmentEpoch) return 'ASSIGNING';
  const reconciled = group.members.every(
    (m) => m.memberEpoch === group.assignmentEpoch && m.state === 'STABLE',
  );
  return reconciled ? 'STABLE' : 'RECONCILING';
}

/**
 * Everything stored under `prefix:` (type and value of each key), for "no state change" checks.
 * The readiness probe's own key is left out.
 */
export async function snapshotKeys(redis: Redis, prefix: string): Promise<Record<string, unknown>> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  const out: Record<string, unknown> = {};
  for (const key of keys.sort()) {
    const keyPrefix = prefixOfKey(key);
    if (keyPrefix !== null && key === new KeySpace(keyPrefix).readinessProbeKey()) continue;
    const type = await redis.type(key);
    if (type === 'hash') out[key] = await redis.hgetall(key);
    else if (type === 'zset') out[key] = await redis.zrange(key, '0', '-1', 'WITHSCORES');
    else if (type === 'stream') out[key] = await redis.xrange(key, '-', '+');
    else if (type === 'set') out[key] = (await redis.smembers(key)).sort();
    else if (type === 'string') out[key] = await redis.get(key);
    else if (type === 'list') out[key] = await redis.lrange(key, 0, -1);
    else out[key] = type;
  }
  return out;
}

/** The member id named by a shard's fence (`owner:<group>` of its meta hash), or null. */
export async function fenceOwner(
  redis: Redis,
  shardKey: string,
  group: string,
): Promise<string | null> {
  const token = await redis.hget(shardMetaKey(shardKey), ownerField(group));
  if (token === null) return null;
  const parsed = parseFenceToken(token);
  if (!parsed) throw new Error(`malformed fence token ${JSON.stringify(token)} on ${shardKey}`);
  return parsed.memberId;
}
