import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProtocolErrorBody } from '@redis-stream-coordinator/nestjs/protocol';
import {
  type ApiResponse,
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../support/coordinator-process.js';
import { useRedisPrefix } from '../support/redis.js';
import { type RestartableRedis, startRestartableRedis } from '../support/redis-processes.js';
import {
  describeGroup,
  heartbeat,
  joinRequest,
  ok,
  pollUntil,
  snapshotKeys,
  useCoordinator,
} from './support/coordinator-fixture.js';

type Token = 'member' | 'admin' | null | { readonly raw: string };

/** One request that must be refused. */
interface BadCase {
  readonly name: string;
  readonly method: string;
  readonly path: string;
  /** A string is sent as is; anything else as JSON; `undefined` sends no body. */
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  /** Default: admin on admin routes, member elsewhere. */
  readonly token?: Token;
  readonly status: number;
  readonly code: string;
  /** Substrings the message must contain (the field it names). */
  readonly mentions?: readonly string[];
}

const LONG_ID = 'x'.repeat(256);
const LONG_NAME = 'n'.repeat(129);
const HB = '/v1/groups/g/heartbeat';
const join = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  ...joinRequest('m2', ['orders']),
  ...extra,
});
const beat = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  memberId: 'm1',
  memberEpoch: 1,
  ...extra,
});
/** A heartbeat body of exactly `bytes` bytes (an unknown `pad` field makes it a 400 when it fits). */
const bodyOf = (bytes: number): string => {
  const head = JSON.stringify({ memberId: 'm1', memberEpoch: 1, pad: '' });
  return `${head.slice(0, -2)}${'p'.repeat(bytes - head.length)}"}`;
};
const oversized = (): string =>
  JSON.stringify({ memberId: 'm1', memberEpoch: 1, pad: 'p'.repeat(1024 * 1024 + 10) });

function send(base: string, c: BadCase): Promise<ApiResponse<ProtocolErrorBody>> {
  const adminRoute =
    c.method === 'PUT' ||
    c.method === 'DELETE' ||
    c.path.endsWith('/reshard') ||
    c.path.endsWith('/dead-letters/replay') ||
    c.path.endsWith('/dead-letters/purge');
  const token = c.token === undefined ? (adminRoute ? 'admin' : 'member') : c.token;
  const raw = token === null ? null : typeof token === 'object' ? token.raw : TEST_TOKENS[token];
  const headers: Record<string, string> = {
    ...(raw !== null ? { authorization: `Bearer ${raw}` } : {}),
    ...c.headers,
  };
  return new CoordinatorApi(base, null).request<ProtocolErrorBody>(
    c.method,
    c.path,
    c.body,
    headers,
  );
}

/**
 * POSTs a `bytes`-byte body declared by `Content-Length`, sending the headers first and the body
 * only if no answer came within a second: a server refusing the declared size answers at once and
 * closes, and a client still writing would turn that close into a reset that hides the answer.
 */
function postHuge(
  base: string,
  path: string,
  bytes: number,
): Promise<{ status: number; body: ProtocolErrorBody }> {
  return new Promise((resolveRes, reject) => {
    let answered = false;
    const req = httpRequest(`${base}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TEST_TOKENS.member}`,
        'content-type': 'application/json',
        'content-length': String(bytes),
      },
    });
    req.on('response', (res) => {
      answered = true;
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => {
        try {
          resolveRes({ status: res.statusCode ?? 0, body: JSON.parse(text) as ProtocolErrorBody });
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
        req.destroy();
      });
    });
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    req.flushHeaders();
    const chunk = Buffer.alloc(64 * 1024, 'z');
    let sent = 0;
    const pump = (): void => {
      while (!answered && sent < bytes) {
        const n = Math.min(chunk.length, bytes - sent);
        sent += n;
        if (!req.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
          req.once('drain', pump);
          return;
        }
      }
      if (!answered) req.end();
    };
    setTimeout(pump, 1000).unref();
  });
}

/** Heartbeat, leave, member-ids, events, describe and stream routes fed bad input. */
const BAD_INPUT: BadCase[] = [
  {
    name: 'dead-letter purge without confirm',
    method: 'POST',
    path: '/v1/streams/orders/dead-letters/purge',
    body: { all: true },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['confirm'],
  },
  {
    name: 'dead-letter replay: neither ids nor filter',
    method: 'POST',
    path: '/v1/streams/orders/dead-letters/replay',
    body: {},
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['"ids"', '"filter"'],
  },
  {
    name: 'dead-letter replay: a malformed id',
    method: 'POST',
    path: '/v1/streams/orders/dead-letters/replay',
    body: { ids: ['1-0', 'nope'] },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['ids[1]'],
  },
  {
    name: 'dead-letter list: unknown reason',
    method: 'GET',
    path: '/v1/streams/orders/dead-letters?reason=bored',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['reason'],
  },
  {
    name: 'dead-letter list: unknown stream',
    method: 'GET',
    path: '/v1/streams/nope/dead-letters',
    status: 404,
    code: 'STREAM_NOT_FOUND',
  },
  // --- heartbeat: body framing
  {
    name: 'heartbeat: malformed JSON',
    method: 'POST',
    path: HB,
    body: '{"memberId": "m1",',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['JSON'],
  },
  {
    name: 'heartbeat: empty body',
    method: 'POST',
    path: HB,
    body: '',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['body'],
  },
  {
    name: 'heartbeat: no body at all',
    method: 'POST',
    path: HB,
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['body'],
  },
  {
    name: 'heartbeat: JSON array',
    method: 'POST',
    path: HB,
    body: '[]',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['object'],
  },
  {
    name: 'heartbeat: JSON null',
    method: 'POST',
    path: HB,
    body: 'null',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['object'],
  },
  {
    name: 'heartbeat: JSON string',
    method: 'POST',
    path: HB,
    body: '"hello"',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['object'],
  },
  {
    name: 'heartbeat: text/plain content type',
    method: 'POST',
    path: HB,
    body: JSON.stringify(beat()),
    headers: { 'content-type': 'text/plain' },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['application/json'],
  },
  {
    name: 'heartbeat: form content type',
    method: 'POST',
    path: HB,
    body: 'memberId=m1&memberEpoch=1',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['application/json'],
  },
  {
    name: 'heartbeat: body over 1 MiB',
    method: 'POST',
    path: HB,
    body: oversized(),
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
    mentions: ['1 MiB'],
  },
  {
    name: 'heartbeat: body of exactly 1 MiB is within the limit (400 for its unknown field)',
    method: 'POST',
    path: HB,
    body: bodyOf(1024 * 1024),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['pad'],
  },
  {
    name: 'heartbeat: body of 1 MiB + 1 byte',
    method: 'POST',
    path: HB,
    body: bodyOf(1024 * 1024 + 1),
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
  },
  // --- heartbeat: memberId
  {
    name: 'heartbeat: memberId missing',
    method: 'POST',
    path: HB,
    body: { memberEpoch: 1 },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberId'],
  },
  {
    name: 'heartbeat: memberId a number',
    method: 'POST',
    path: HB,
    body: beat({ memberId: 5 }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberId'],
  },
  {
    name: 'heartbeat: memberId null',
    method: 'POST',
    path: HB,
    body: beat({ memberId: null }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberId'],
  },
  {
    name: 'heartbeat: memberId empty',
    method: 'POST',
    path: HB,
    body: beat({ memberId: '' }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberId'],
  },
  {
    name: 'heartbeat: memberId 256 chars',
    method: 'POST',
    path: HB,
    body: beat({ memberId: LONG_ID }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberId'],
  },
  {
    name: 'heartbeat: memberId with a space',
    method: 'POST',
    path: HB,
    body: beat({ memberId: 'm 1' }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberId'],
  },
  {
    name: 'heartbeat: memberId not ASCII',
    method: 'POST',
    path: HB,
    body: beat({ memberId: 'mé' }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberId'],
  },
  // --- heartbeat: memberEpoch
  {
    name: 'heartbeat: memberEpoch missing',
    method: 'POST',
    path: HB,
    body: { memberId: 'm1' },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberEpoch'],
  },
  {
    name: 'heartbeat: memberEpoch a string',
    method: 'POST',
    path: HB,
    body: beat({ memberEpoch: '1' }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberEpoch'],
  },
  {
    name: 'heartbeat: memberEpoch null',
    method: 'POST',
    path: HB,
    body: beat({ memberEpoch: null }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberEpoch'],
  },
  {
    name: 'heartbeat: memberEpoch 1.5',
    method: 'POST',
    path: HB,
    body: beat({ memberEpoch: 1.5 }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberEpoch'],
  },
  {
    name: 'heartbeat: memberEpoch -3',
    method: 'POST',
    path: HB,
    body: beat({ memberEpoch: -3 }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberEpoch'],
  },
  {
    name: 'heartbeat: memberEpoch 2^31',
    method: 'POST',
    path: HB,
    body: beat({ memberEpoch: 2 ** 31 }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberEpoch'],
  },
  // --- heartbeat: join fields
  {
    name: 'join: rebalanceTimeoutMs missing',
    method: 'POST',
    path: HB,
    body: { memberId: 'm2', memberEpoch: 0, subscribedStreams: ['orders'], ownedShards: [] },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['rebalanceTimeoutMs'],
  },
  {
    name: 'join: rebalanceTimeoutMs 0',
    method: 'POST',
    path: HB,
    body: join({ rebalanceTimeoutMs: 0 }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['rebalanceTimeoutMs'],
  },
  {
    name: 'join: rebalanceTimeoutMs negative',
    method: 'POST',
    path: HB,
    body: join({ rebalanceTimeoutMs: -10 }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['rebalanceTimeoutMs'],
  },
  {
    name: 'join: rebalanceTimeoutMs a string',
    method: 'POST',
    path: HB,
    body: join({ rebalanceTimeoutMs: '1000' }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['rebalanceTimeoutMs'],
  },
  {
    name: 'join: rebalanceTimeoutMs null',
    method: 'POST',
    path: HB,
    body: join({ rebalanceTimeoutMs: null }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['rebalanceTimeoutMs'],
  },
  {
    name: 'join: subscribedStreams missing',
    method: 'POST',
    path: HB,
    body: { memberId: 'm2', memberEpoch: 0, rebalanceTimeoutMs: 1000, ownedShards: [] },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['subscribedStreams'],
  },
  {
    name: 'join: subscribedStreams empty',
    method: 'POST',
    path: HB,
    body: join({ subscribedStreams: [] }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['subscribedStreams'],
  },
  {
    name: 'join: subscribedStreams a string',
    method: 'POST',
    path: HB,
    body: join({ subscribedStreams: 'orders' }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['subscribedStreams'],
  },
  {
    name: 'join: subscribedStreams with a number',
    method: 'POST',
    path: HB,
    body: join({ subscribedStreams: [5] }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['subscribedStreams[0]'],
  },
  {
    name: 'join: subscribedStreams with an invalid name',
    method: 'POST',
    path: HB,
    body: join({ subscribedStreams: ['orders', 'bad name'] }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['subscribedStreams[1]'],
  },
  {
    name: 'join: subscribedStreams with a 129-char name',
    method: 'POST',
    path: HB,
    body: join({ subscribedStreams: [LONG_NAME] }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['subscribedStreams[0]'],
  },
  {
    name: 'join: subscribedStreams null',
    method: 'POST',
    path: HB,
    body: join({ subscribedStreams: null }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['subscribedStreams'],
  },
  {
    name: 'join: ownedShards missing',
    method: 'POST',
    path: HB,
    body: {
      memberId: 'm2',
      memberEpoch: 0,
      rebalanceTimeoutMs: 1000,
      subscribedStreams: ['orders'],
    },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['ownedShards'],
  },
  {
    name: 'join: ownedShards not empty',
    method: 'POST',
    path: HB,
    body: join({ ownedShards: [{ stream: 'orders', shards: [0] }] }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['ownedShards'],
  },
  // --- heartbeat: ownedShards shape
  {
    name: 'heartbeat: ownedShards not an array',
    method: 'POST',
    path: HB,
    body: beat({ ownedShards: { orders: [0] } }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['ownedShards'],
  },
  {
    name: 'heartbeat: ownedShards null',
    method: 'POST',
    path: HB,
    body: beat({ ownedShards: null }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['ownedShards'],
  },
  {
    name: 'heartbeat: ownedShards duplicate shard ids',
    method: 'POST',
    path: HB,
    body: beat({ ownedShards: [{ stream: 'orders', shards: [1, 1] }] }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['ownedShards[0].shards', 'duplicate'],
  },
  {
    name: 'heartbeat: ownedShards stream listed twice',
    method: 'POST',
    path: HB,
    body: beat({
      ownedShards: [
        { stream: 'orders', shards: [1] },
        { stream: 'orders', shards: [2] },
      ],
    }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['ownedShards'],
  },
  {
    name: 'heartbeat: ownedShards negative shard',
    method: 'POST',
    path: HB,
    body: beat({ ownedShards: [{ stream: 'orders', shards: [-1] }] }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['ownedShards[0].shards[0]'],
  },
  {
    name: 'heartbeat: ownedShards fractional shard',
    method: 'POST',
    path: HB,
    body: beat({ ownedShards: [{ stream: 'orders', shards: [0.5] }] }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['ownedShards[0].shards[0]'],
  },
  {
    name: 'heartbeat: ownedShards string shard',
    method: 'POST',
    path: HB,
    body: beat({ ownedShards: [{ stream: 'orders', shards: ['0'] }] }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['ownedShards[0].shards[0]'],
  },
  {
    name: 'heartbeat: ownedShards entry without shards',
    method: 'POST',
    path: HB,
    body: beat({ ownedShards: [{ stream: 'orders' }] }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['ownedShards[0].shards'],
  },
  {
    name: 'heartbeat: ownedShards entry with an unknown field',
    method: 'POST',
    path: HB,
    body: beat({ ownedShards: [{ stream: 'orders', shards: [0], extra: 1 }] }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['ownedShards[0].extra'],
  },
  {
    name: 'heartbeat: ownedShards invalid stream name',
    method: 'POST',
    path: HB,
    body: beat({ ownedShards: [{ stream: 'bad/name', shards: [0] }] }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['ownedShards[0].stream'],
  },
  // --- heartbeat: optional ids
  {
    name: 'heartbeat: instanceId empty',
    method: 'POST',
    path: HB,
    body: beat({ instanceId: '' }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['instanceId'],
  },
  {
    name: 'heartbeat: instanceId 256 chars',
    method: 'POST',
    path: HB,
    body: beat({ instanceId: LONG_ID }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['instanceId'],
  },
  {
    name: 'heartbeat: instanceId null',
    method: 'POST',
    path: HB,
    body: beat({ instanceId: null }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['instanceId'],
  },
  {
    name: 'heartbeat: rackId empty',
    method: 'POST',
    path: HB,
    body: beat({ rackId: '' }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['rackId'],
  },
  {
    name: 'heartbeat: rackId 256 chars',
    method: 'POST',
    path: HB,
    body: beat({ rackId: LONG_ID }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['rackId'],
  },
  {
    name: 'heartbeat: rackId a number',
    method: 'POST',
    path: HB,
    body: beat({ rackId: 3 }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['rackId'],
  },
  {
    name: 'heartbeat: assignor empty',
    method: 'POST',
    path: HB,
    body: beat({ assignor: '' }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['assignor'],
  },
  {
    name: 'heartbeat: assignor 256 chars',
    method: 'POST',
    path: HB,
    body: beat({ assignor: LONG_ID }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['assignor'],
  },
  {
    name: 'heartbeat: unknown field',
    method: 'POST',
    path: HB,
    body: beat({ memberEpochh: 1 }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberEpochh'],
  },
  {
    name: 'heartbeat: a __proto__ key is an unknown field',
    method: 'POST',
    path: HB,
    body: '{"memberId":"m1","memberEpoch":1,"__proto__":{"memberEpoch":5}}',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['__proto__'],
  },
  {
    name: 'heartbeat: -2 without instanceId',
    method: 'POST',
    path: HB,
    body: { memberId: 'm1', memberEpoch: -2 },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['instanceId'],
  },
  // --- heartbeat: path
  {
    name: 'heartbeat: group name with a space',
    method: 'POST',
    path: '/v1/groups/bad%20name/heartbeat',
    body: join(),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['groupId'],
  },
  {
    name: 'heartbeat: group name 129 chars',
    method: 'POST',
    path: `/v1/groups/${LONG_NAME}/heartbeat`,
    body: join(),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['groupId'],
  },
  {
    name: 'heartbeat: malformed percent-encoding in the path',
    method: 'POST',
    path: '/v1/groups/%zz/heartbeat',
    body: join(),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['URL'],
  },
  {
    name: 'heartbeat: path segment over 1024 chars',
    method: 'POST',
    path: `/v1/groups/${'g'.repeat(1100)}/heartbeat`,
    body: join(),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['path parameter'],
  },
  {
    name: 'heartbeat: group name with a colon',
    method: 'POST',
    path: '/v1/groups/a:b/heartbeat',
    body: join(),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['groupId'],
  },
  // --- leave
  {
    name: 'leave: malformed JSON',
    method: 'POST',
    path: '/v1/groups/g/leave',
    body: '{',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['JSON'],
  },
  {
    name: 'leave: empty body',
    method: 'POST',
    path: '/v1/groups/g/leave',
    body: '',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['body'],
  },
  {
    name: 'leave: memberId missing',
    method: 'POST',
    path: '/v1/groups/g/leave',
    body: {},
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberId'],
  },
  {
    name: 'leave: memberId 256 chars',
    method: 'POST',
    path: '/v1/groups/g/leave',
    body: { memberId: LONG_ID },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberId'],
  },
  {
    name: 'leave: temporary not a boolean',
    method: 'POST',
    path: '/v1/groups/g/leave',
    body: { memberId: 'm1', instanceId: 'i', temporary: 'yes' },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['temporary'],
  },
  {
    name: 'leave: temporary without instanceId',
    method: 'POST',
    path: '/v1/groups/g/leave',
    body: { memberId: 'm1', temporary: true },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['instanceId'],
  },
  {
    name: 'leave: memberEpoch a string',
    method: 'POST',
    path: '/v1/groups/g/leave',
    body: { memberId: 'm1', memberEpoch: 'one' },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberEpoch'],
  },
  {
    name: 'leave: unknown field',
    method: 'POST',
    path: '/v1/groups/g/leave',
    body: { memberId: 'm1', reason: 'bye' },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['reason'],
  },
  {
    name: 'leave: instanceId null',
    method: 'POST',
    path: '/v1/groups/g/leave',
    body: { memberId: 'm1', instanceId: null },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['instanceId'],
  },
  {
    name: 'leave: body over 1 MiB',
    method: 'POST',
    path: '/v1/groups/g/leave',
    body: oversized(),
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
  },
  {
    name: 'leave: invalid group name',
    method: 'POST',
    path: '/v1/groups/b%21d/leave',
    body: { memberId: 'm1' },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['groupId'],
  },
  // --- member-ids
  {
    name: 'member-ids: unknown field',
    method: 'POST',
    path: '/v1/groups/g/member-ids',
    body: { prefix: 'x' },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['prefix'],
  },
  {
    name: 'member-ids: malformed JSON',
    method: 'POST',
    path: '/v1/groups/g/member-ids',
    body: '{]',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['JSON'],
  },
  {
    name: 'member-ids: JSON array',
    method: 'POST',
    path: '/v1/groups/g/member-ids',
    body: '[]',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['object'],
  },
  {
    name: 'member-ids: invalid group name',
    method: 'POST',
    path: `/v1/groups/${LONG_NAME}/member-ids`,
    body: {},
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['groupId'],
  },
  {
    name: 'member-ids: body over 1 MiB',
    method: 'POST',
    path: '/v1/groups/g/member-ids',
    body: oversized(),
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
  },
  // --- describe, events, delete
  {
    name: 'describe: invalid group name',
    method: 'GET',
    path: '/v1/groups/bad%20name',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['groupId'],
  },
  {
    name: 'events: limit 0',
    method: 'GET',
    path: '/v1/groups/g/events?limit=0',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['limit'],
  },
  {
    name: 'events: limit 1001',
    method: 'GET',
    path: '/v1/groups/g/events?limit=1001',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['limit'],
  },
  {
    name: 'events: limit -1',
    method: 'GET',
    path: '/v1/groups/g/events?limit=-1',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['limit'],
  },
  {
    name: 'events: limit not a number',
    method: 'GET',
    path: '/v1/groups/g/events?limit=ten',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['limit'],
  },
  {
    name: 'events: limit twice',
    method: 'GET',
    path: '/v1/groups/g/events?limit=1&limit=2',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['limit'],
  },
  {
    name: 'events: after malformed',
    method: 'GET',
    path: '/v1/groups/g/events?after=yesterday',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['after'],
  },
  {
    name: 'events: unknown query parameter',
    method: 'GET',
    path: '/v1/groups/g/events?offset=3',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['offset'],
  },
  {
    name: 'events: invalid group name',
    method: 'GET',
    path: '/v1/groups/bad%24/events',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['groupId'],
  },
  {
    name: 'delete member: invalid group name',
    method: 'DELETE',
    path: '/v1/groups/bad%20g/members/m1',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['groupId'],
  },
  {
    name: 'delete member: member id with a space',
    method: 'DELETE',
    path: '/v1/groups/g/members/m%201',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberId'],
  },
  {
    name: 'delete member: member id 256 chars',
    method: 'DELETE',
    path: `/v1/groups/g/members/${LONG_ID}`,
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberId'],
  },
  {
    name: 'delete group: invalid group name',
    method: 'DELETE',
    path: `/v1/groups/${LONG_NAME}`,
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['groupId'],
  },
  // --- streams
  {
    name: 'PUT stream: shards 0',
    method: 'PUT',
    path: '/v1/streams/s1',
    body: { shards: 0 },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['shards'],
  },
  {
    name: 'PUT stream: shards negative',
    method: 'PUT',
    path: '/v1/streams/s1',
    body: { shards: -4 },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['shards'],
  },
  {
    name: 'PUT stream: shards over MAX_SHARDS',
    method: 'PUT',
    path: '/v1/streams/s1',
    body: { shards: 1025 },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['shards', 'MAX_SHARDS'],
  },
  {
    name: 'PUT stream: shards a string',
    method: 'PUT',
    path: '/v1/streams/s1',
    body: { shards: '4' },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['shards'],
  },
  {
    name: 'PUT stream: shards fractional',
    method: 'PUT',
    path: '/v1/streams/s1',
    body: { shards: 2.5 },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['shards'],
  },
  {
    name: 'PUT stream: shards null',
    method: 'PUT',
    path: '/v1/streams/s1',
    body: { shards: null },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['shards'],
  },
  {
    name: 'PUT stream: shards missing',
    method: 'PUT',
    path: '/v1/streams/s1',
    body: {},
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['shards'],
  },
  {
    name: 'PUT stream: unknown field',
    method: 'PUT',
    path: '/v1/streams/s1',
    body: { shards: 2, replicas: 3 },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['replicas'],
  },
  {
    name: 'PUT stream: malformed JSON',
    method: 'PUT',
    path: '/v1/streams/s1',
    body: '{"shards": 2',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['JSON'],
  },
  {
    name: 'PUT stream: empty body',
    method: 'PUT',
    path: '/v1/streams/s1',
    body: '',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['body'],
  },
  {
    name: 'PUT stream: no body',
    method: 'PUT',
    path: '/v1/streams/s1',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['body'],
  },
  {
    name: 'PUT stream: text/plain',
    method: 'PUT',
    path: '/v1/streams/s1',
    body: '{"shards": 2}',
    headers: { 'content-type': 'text/plain' },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['application/json'],
  },
  {
    name: 'PUT stream: invalid name',
    method: 'PUT',
    path: '/v1/streams/bad%20name',
    body: { shards: 2 },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['stream'],
  },
  {
    name: 'PUT stream: name 129 chars',
    method: 'PUT',
    path: `/v1/streams/${LONG_NAME}`,
    body: { shards: 2 },
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['stream'],
  },
  {
    name: 'PUT stream: body over 1 MiB',
    method: 'PUT',
    path: '/v1/streams/s1',
    body: oversized(),
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
  },
  {
    name: 'GET stream: invalid name',
    method: 'GET',
    path: '/v1/streams/bad%2Aname',
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['stream'],
  },
];

/** docs/protocol.md §2.4 check order, each case combining two faults. */
const CHECK_ORDER: BadCase[] = [
  {
    name: 'bad token + oversized body → 401',
    method: 'POST',
    path: HB,
    body: oversized(),
    token: { raw: 'nope' },
    status: 401,
    code: 'UNAUTHENTICATED',
  },
  {
    name: 'no token + malformed JSON → 401',
    method: 'POST',
    path: HB,
    body: '{',
    token: null,
    status: 401,
    code: 'UNAUTHENTICATED',
  },
  {
    name: 'no token + invalid group name → 401',
    method: 'GET',
    path: '/v1/groups/bad%20name',
    token: null,
    status: 401,
    code: 'UNAUTHENTICATED',
  },
  {
    name: 'member token + bad body on an admin route → 403',
    method: 'PUT',
    path: '/v1/streams/s1',
    body: { shards: 0 },
    token: 'member',
    status: 403,
    code: 'FORBIDDEN',
  },
  {
    name: 'member token + oversized body on an admin route → 403',
    method: 'PUT',
    path: '/v1/streams/s1',
    body: oversized(),
    token: 'member',
    status: 403,
    code: 'FORBIDDEN',
  },
  {
    name: 'member token + invalid path on an admin route → 403',
    method: 'DELETE',
    path: '/v1/groups/bad%20name',
    token: 'member',
    status: 403,
    code: 'FORBIDDEN',
  },
  {
    name: 'oversized + malformed → 413',
    method: 'POST',
    path: HB,
    body: `{${'x'.repeat(1024 * 1024 + 1)}`,
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
  },
  {
    name: 'oversized + wrong content type → 413',
    method: 'POST',
    path: HB,
    body: oversized(),
    headers: { 'content-type': 'text/plain' },
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
  },
  {
    name: 'bad shape + unsupported assignor → 400 INVALID_REQUEST',
    method: 'POST',
    path: HB,
    body: beat({ memberEpoch: -3, assignor: 'nope' }),
    status: 400,
    code: 'INVALID_REQUEST',
    mentions: ['memberEpoch'],
  },
  {
    name: 'unsupported assignor + unknown group with epoch 5 → 400 UNSUPPORTED_ASSIGNOR',
    method: 'POST',
    path: '/v1/groups/g-unknown/heartbeat',
    body: { memberId: 'x', memberEpoch: 5, assignor: 'nope' },
    status: 400,
    code: 'UNSUPPORTED_ASSIGNOR',
    mentions: ['nope'],
  },
  {
    name: 'unsupported assignor + unknown member → 400 UNSUPPORTED_ASSIGNOR',
    method: 'POST',
    path: HB,
    body: { memberId: 'ghost', memberEpoch: 3, assignor: 'nope' },
    status: 400,
    code: 'UNSUPPORTED_ASSIGNOR',
  },
  {
    name: 'unknown group + unknown member → 404 GROUP_ID_NOT_FOUND',
    method: 'POST',
    path: '/v1/groups/g-unknown/heartbeat',
    body: { memberId: 'x', memberEpoch: 5 },
    status: 404,
    code: 'GROUP_ID_NOT_FOUND',
  },
  {
    name: 'invalid group name + bad body → 400',
    method: 'POST',
    path: '/v1/groups/bad%20name/heartbeat',
    body: '{',
    status: 400,
    code: 'INVALID_REQUEST',
  },
  {
    name: 'unknown member + future epoch → 409 UNKNOWN_MEMBER_ID',
    method: 'POST',
    path: HB,
    body: { memberId: 'ghost', memberEpoch: 99 },
    status: 409,
    code: 'UNKNOWN_MEMBER_ID',
  },
  {
    name: 'existing member + future epoch → 409 FENCED_MEMBER_EPOCH',
    method: 'POST',
    path: HB,
    body: { memberId: 'm1', memberEpoch: 99 },
    status: 409,
    code: 'FENCED_MEMBER_EPOCH',
  },
];

/** Every route with a request that would succeed (or fail only on domain grounds) when authorised. */
interface Route {
  readonly method: string;
  readonly path: string;
  readonly body?: unknown;
  readonly admin: boolean;
}

const ROUTES: Route[] = [
  {
    method: 'POST',
    path: '/v1/groups/g/heartbeat',
    body: { memberId: 'm1', memberEpoch: 1 },
    admin: false,
  },
  { method: 'POST', path: '/v1/groups/g/leave', body: { memberId: 'ghost' }, admin: false },
  { method: 'GET', path: '/v1/groups', admin: false },
  { method: 'GET', path: '/v1/groups/g', admin: false },
  { method: 'GET', path: '/v1/groups/g/events', admin: false },
  { method: 'POST', path: '/v1/groups/g/member-ids', body: {}, admin: false },
  { method: 'GET', path: '/v1/streams', admin: false },
  { method: 'GET', path: '/v1/streams/orders', admin: false },
  { method: 'PUT', path: '/v1/streams/orders', body: { shards: 4 }, admin: true },
  { method: 'POST', path: '/v1/streams/orders/reshard', body: { shards: 4 }, admin: true },
  { method: 'DELETE', path: '/v1/groups/g/members/ghost', admin: true },
  { method: 'GET', path: '/v1/streams/orders/dead-letters', admin: false },
  { method: 'GET', path: '/v1/streams/orders/dead-letters/1-0', admin: false },
  {
    method: 'POST',
    path: '/v1/streams/orders/dead-letters/replay',
    body: { ids: ['1-0'] },
    admin: true,
  },
  {
    method: 'POST',
    path: '/v1/streams/orders/dead-letters/purge',
    body: { confirm: true, ids: ['1-0'] },
    admin: true,
  },
  { method: 'DELETE', path: '/v1/groups/g', admin: true },
];

describe('bad input, auth and check order (every route)', () => {
  const fx = useCoordinator('bad-input', { STREAMS: 'orders:4', SESSION_TIMEOUT_MS: '600000' });
  let reshardRoute = false;

  beforeAll(async () => {
    await ok(fx.member(), 'g', joinRequest('m1', ['orders']));
    const probe = await fx
      .admin()
      .post<ProtocolErrorBody>('/v1/streams/no-such-stream/reshard', { shards: 2 });
    reshardRoute = !(probe.status === 404 && probe.body.error.code === 'NOT_FOUND');
  });

  /** Sends a refused request and checks status, code, message, and that no state changed. */
  async function expectRefused(c: BadCase): Promise<void> {
    const redisBefore = await snapshotKeys(fx.redis(), fx.prefix);
    const describedBefore = await describeGroup(fx.admin(), 'g');
    const res = await send(fx.coordinator().url, c);
    expect(
      { status: res.status, code: res.body?.error?.code },
      JSON.stringify(res.body).slice(0, 500),
    ).toEqual({ status: c.status, code: c.code });
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(Object.keys(res.body)).toEqual(['error']);
    expect(Object.keys(res.body.error).sort()).toEqual(['code', 'message']);
    expect(res.body.error.message.length).toBeGreaterThan(0);
    for (const m of c.mentions ?? []) expect(res.body.error.message).toContain(m);
    expect(await snapshotKeys(fx.redis(), fx.prefix)).toEqual(redisBefore);
    expect(await describeGroup(fx.admin(), 'g')).toEqual(describedBefore);
  }

  describe('bad input → 400/413 naming the field, no state change', () => {
    for (const c of BAD_INPUT) it(c.name, () => expectRefused(c));
  });

  describe('reshard route input', () => {
    const reshard: BadCase[] = [
      {
        name: 'reshard: shards 0',
        method: 'POST',
        path: '/v1/streams/orders/reshard',
        body: { shards: 0 },
        status: 400,
        code: 'INVALID_REQUEST',
        mentions: ['shards'],
      },
      {
        name: 'reshard: shards over MAX_SHARDS',
        method: 'POST',
        path: '/v1/streams/orders/reshard',
        body: { shards: 5000 },
        status: 400,
        code: 'INVALID_REQUEST',
        mentions: ['shards'],
      },
      {
        name: 'reshard: unknown mode',
        method: 'POST',
        path: '/v1/streams/orders/reshard',
        body: { shards: 8, mode: 'fast' },
        status: 400,
        code: 'INVALID_REQUEST',
        mentions: ['mode'],
      },
      {
        name: 'reshard: malformed JSON',
        method: 'POST',
        path: '/v1/streams/orders/reshard',
        body: '{',
        status: 400,
        code: 'INVALID_REQUEST',
        mentions: ['JSON'],
      },
      {
        name: 'reshard: body over 1 MiB',
        method: 'POST',
        path: '/v1/streams/orders/reshard',
        body: oversized(),
        status: 413,
        code: 'PAYLOAD_TOO_LARGE',
      },
      {
        name: 'reshard: member token',
        method: 'POST',
        path: '/v1/streams/orders/reshard',
        body: { shards: 8 },
        token: 'member',
        status: 403,
        code: 'FORBIDDEN',
      },
      {
        name: 'reshard: missing stream',
        method: 'POST',
        path: '/v1/streams/nope/reshard',
        body: { shards: 8 },
        status: 404,
        code: 'STREAM_NOT_FOUND',
      },
    ];
    for (const c of reshard) {
      it(c.name, async (ctx) => {
        // The reshard route belongs to the resharding work; skipped (and reported) while absent.
        if (!reshardRoute) ctx.skip();
        await expectRefused(c);
      });
    }
  });

  describe('docs/protocol.md §2.4 check order', () => {
    for (const c of CHECK_ORDER) it(c.name, () => expectRefused(c));
  });

  describe('authentication and roles', () => {
    const presentRoutes = (): Route[] =>
      ROUTES.filter((r) => reshardRoute || !r.path.endsWith('/reshard'));
    const bad: Array<[string, Record<string, string>]> = [
      ['no token', {}],
      ['a wrong token', { authorization: 'Bearer not-a-token' }],
      ['a token prefix', { authorization: `Bearer ${TEST_TOKENS.admin.slice(0, -1)}` }],
      [
        'a Basic header',
        { authorization: `Basic ${Buffer.from(`x:${TEST_TOKENS.admin}`).toString('base64')}` },
      ],
      ['an empty bearer', { authorization: 'Bearer ' }],
      ['the bare token without scheme', { authorization: TEST_TOKENS.admin }],
    ];

    it('every /v1 route refuses a missing or wrong token with 401 UNAUTHENTICATED and changes nothing', async () => {
      const before = await snapshotKeys(fx.redis(), fx.prefix);
      for (const route of presentRoutes()) {
        for (const [label, headers] of bad) {
          const res = await new CoordinatorApi(
            fx.coordinator().url,
            null,
          ).request<ProtocolErrorBody>(route.method, route.path, route.body, headers);
          expect({
            route: `${route.method} ${route.path}`,
            label,
            status: res.status,
            code: res.body?.error?.code,
          }).toEqual({
            route: `${route.method} ${route.path}`,
            label,
            status: 401,
            code: 'UNAUTHENTICATED',
          });
        }
      }
      expect(await snapshotKeys(fx.redis(), fx.prefix)).toEqual(before);
    });

    it('a member token on an admin route is 403 FORBIDDEN and changes nothing', async () => {
      const before = await snapshotKeys(fx.redis(), fx.prefix);
      for (const route of presentRoutes().filter((r) => r.admin)) {
        const res = await fx
          .member()
          .request<ProtocolErrorBody>(route.method, route.path, route.body);
        expect({
          route: `${route.method} ${route.path}`,
          status: res.status,
          code: res.body.error.code,
        }).toEqual({ route: `${route.method} ${route.path}`, status: 403, code: 'FORBIDDEN' });
      }
      expect(await snapshotKeys(fx.redis(), fx.prefix)).toEqual(before);
    });

    it('member and admin tokens both work on member routes', async () => {
      for (const route of presentRoutes().filter((r) => !r.admin)) {
        for (const api of [fx.member(), fx.admin()]) {
          const res = await api.request<ProtocolErrorBody>(route.method, route.path, route.body);
          expect({ route: `${route.method} ${route.path}`, status: res.status }).not.toMatchObject({
            status: 401,
          });
          expect(res.status, `${route.method} ${route.path} ${JSON.stringify(res.body)}`).not.toBe(
            403,
          );
          if (route.path.endsWith('/leave')) expect(res.body.error.code).toBe('UNKNOWN_MEMBER_ID');
          // no dead letter 1-0: the route answers, and says so
          else if (route.path.endsWith('/dead-letters/1-0'))
            expect(res.body.error.code).toBe('NOT_FOUND');
          else expect(res.status).toBeLessThan(300);
        }
      }
    });

    it('the admin token works on admin routes', async () => {
      const put = await fx.admin().put('/v1/streams/orders', { shards: 4 });
      expect(put.status).toBe(200);
      const del = await fx.admin().delete<ProtocolErrorBody>('/v1/groups/g/members/ghost');
      expect([del.status, del.body.error.code]).toEqual([404, 'UNKNOWN_MEMBER_ID']);
      const group = await fx.admin().delete<ProtocolErrorBody>('/v1/groups/g');
      expect([group.status, group.body.error.code]).toEqual([409, 'GROUP_NOT_EMPTY']);
    });

    it('health, metrics and docs need no token', async () => {
      const anonymous = new CoordinatorApi(fx.coordinator().url, null);
      for (const path of ['/health/live', '/health/ready', '/metrics', '/docs']) {
        expect({ path, status: (await anonymous.get(path)).status }).toEqual({ path, status: 200 });
      }
    });
  });

  it('an unknown route is 404 with the error body', async () => {
    for (const [method, path] of [
      ['GET', '/v1/nope'],
      ['GET', '/nothing/here'],
      ['POST', '/v1/groups'],
      ['PATCH', '/v1/groups/g'],
      ['GET', '/v2/groups'],
    ] as const) {
      const res = await fx
        .admin()
        .request<ProtocolErrorBody>(method, path, method === 'GET' ? undefined : {});
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 404 });
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(Object.keys(res.body)).toEqual(['error']);
      expect(res.body.error.code).toBe('NOT_FOUND');
      expect(typeof res.body.error.message).toBe('string');
    }
  });

  it('a body over the HTTP server limit (16 MiB) gets 413 with the protocol error body', async () => {
    const before = await snapshotKeys(fx.redis(), fx.prefix);
    const res = await postHuge(fx.coordinator().url, HB, 17 * 1024 * 1024);
    expect({ status: res.status, code: res.body.error?.code }).toEqual({
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
    });
    expect(Object.keys(res.body)).toEqual(['error']);
    expect(await snapshotKeys(fx.redis(), fx.prefix)).toEqual(before);
  });

  it('names and ids at their length limits work, in paths too (URL-encoded)', async () => {
    const group = 'G'.repeat(128);
    const memberId = '%/:?#'.repeat(51);
    expect(memberId).toHaveLength(255);
    const joined = await ok(
      fx.member(),
      group,
      joinRequest(memberId, ['orders'], { instanceId: 'i'.repeat(255), rackId: 'r'.repeat(255) }),
    );
    expect(joined.memberId).toBe(memberId);
    const described = await describeGroup(fx.member(), group);
    expect(described.members.map((m) => m.memberId)).toEqual([memberId]);
    const path = `/v1/groups/${group}/members/${encodeURIComponent(memberId)}`;
    expect(path.length).toBeGreaterThan(765);
    expect((await fx.admin().delete(path)).status).toBe(204);
    expect((await describeGroup(fx.member(), group)).members).toEqual([]);
    expect((await fx.admin().delete(`/v1/groups/${group}`)).status).toBe(204);
  });

  it('JSON content types with parameters or a +json suffix are accepted', async () => {
    for (const contentType of [
      'application/json; charset=utf-8',
      'Application/JSON',
      'application/vnd.rsc+json',
    ]) {
      const res = await fx
        .member()
        .request('POST', HB, JSON.stringify({ memberId: 'm1', memberEpoch: 1 }), {
          'content-type': contentType,
        });
      expect({ contentType, status: res.status }).toEqual({ contentType, status: 200 });
    }
  });

  it('a valid heartbeat still works after all of that (the member is intact)', async () => {
    const res = await heartbeat(fx.member(), 'g', { memberId: 'm1', memberEpoch: 1 });
    expect(res.status).toBe(200);
    expect(res.body.memberEpoch).toBe(1);
  });
});

describe('storage unreachable → 503 COORDINATOR_NOT_AVAILABLE, and recovery', () => {
  const redis = useRedisPrefix('bad-input-503');
  let server: RestartableRedis;
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;

  beforeAll(async () => {
    server = await startRestartableRedis();
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      redisUrl: server.url,
      env: { STREAMS: 'orders:2', SESSION_TIMEOUT_MS: '60000' },
    });
    api = new CoordinatorApi(coordinator.url, TEST_TOKENS.member);
  });
  afterAll(async () => {
    await coordinator?.stop();
    await server?.dispose();
  });

  it('heartbeat and readiness answer 503 while Redis is down, and recover when it is back', async () => {
    await ok(api, 'g', joinRequest('a', ['orders']));
    await server.stop();

    const started = Date.now();
    const res = await heartbeat<ProtocolErrorBody>(api, 'g', { memberId: 'a', memberEpoch: 1 });
    const took = Date.now() - started;
    expect({ status: res.status, code: res.body.error?.code }).toEqual({
      status: 503,
      code: 'COORDINATOR_NOT_AVAILABLE',
    });
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    // Members must learn quickly (they self-fence on their session timeout).
    expect(took).toBeLessThan(5000);
    const join = await heartbeat<ProtocolErrorBody>(api, 'g', joinRequest('b', ['orders']));
    expect([join.status, join.body.error.code]).toEqual([503, 'COORDINATOR_NOT_AVAILABLE']);
    const described = await api.get<ProtocolErrorBody>('/v1/groups/g');
    expect([described.status, described.body.error.code]).toEqual([
      503,
      'COORDINATOR_NOT_AVAILABLE',
    ]);
    expect(described.headers.get('retry-after')).toMatch(/^\d+$/);

    const ready = await api.get<{
      status: string;
      error?: Record<string, { status: string; reason?: string }>;
      details?: Record<string, { status: string; reason?: string }>;
    }>('/health/ready');
    expect(ready.status).toBe(503);
    const details = ready.body.details ?? {};
    expect(details.redis?.status).toBe('down');
    expect(details.redis?.reason).toMatch(/Redis/);
    expect((await api.get('/health/live')).status).toBe(200);

    await server.restart();
    await pollUntil(
      () => api.get('/health/ready'),
      (r) => r.status === 200,
      'readiness after Redis came back',
      15_000,
      100,
    );
    const back = await pollUntil(
      () => heartbeat(api, 'g', { memberId: 'a', memberEpoch: 1 }),
      (r) => r.status === 200,
      'a heartbeat to succeed after Redis came back',
      15_000,
      100,
    );
    expect(back.body.memberEpoch).toBe(1);
    expect((await describeGroup(api, 'g')).members.map((m) => m.memberId)).toEqual(['a']);
  });
});
