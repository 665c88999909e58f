import { resolve } from 'node:path';
import { CompiledRouting, deadLetterFields } from '@redis-stream-coordinator/nestjs/internal';
import type {
  DeadLetterEntry,
  DeadLetterListResponse,
  DeadLetterReplayResponse,
  ProtocolErrorBody,
  StreamRouting,
} from '@redis-stream-coordinator/nestjs/protocol';
import { describe, expect, it } from 'vitest';
import { runNodeTool, type ToolRun } from '../support/child-run.js';
import { TEST_TOKENS } from '../support/coordinator-process.js';
import { repoRoot } from '../support/service-process.js';
import { useCoordinator } from './support/coordinator-fixture.js';
import { waitForNoProblems } from '../support/wait.js';

const RSC = resolve(repoRoot(), 'libs/stream-coordinator/dist/cli/main.js');

/** A handler's error with a property of its own (a `code`), as a real handler throws. */
class PaymentDeclinedError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

describe('dead letters: rsc dlq list | show | replay | purge against a real coordinator', () => {
  const fx = useCoordinator('dead-letters', { STREAMS: 'orders:2' });
  const rsc = (args: string[], token: string = TEST_TOKENS.admin): Promise<ToolRun> =>
    runNodeTool(RSC, args, {
      COORDINATOR_URL: fx.coordinator().url,
      COORDINATOR_ADMIN_TOKEN: token,
      COORDINATOR_TOKEN: undefined,
    });
  const dlqKey = (): string => `${fx.prefix}:{orders}:dlq`;
  const routing = async (): Promise<StreamRouting> =>
    (await fx.admin().get<StreamRouting>('/v1/streams/orders')).body;

  /** Writes a dead letter exactly as a member does (`deadLetterFields`, then XADD). */
  async function deadLetter(
    key: string | null,
    group: string,
    reason: 'max-deliveries' | 'non-retryable' | 'undecodable',
    error: Error,
    headers?: Record<string, string>,
  ): Promise<string> {
    const r = await routing();
    const original: Buffer[] = [];
    if (key !== null) original.push(Buffer.from('key'), Buffer.from(key));
    original.push(Buffer.from('payload'), Buffer.from(JSON.stringify({ order: key, n: 1 })));
    if (headers) original.push(Buffer.from('headers'), Buffer.from(JSON.stringify(headers)));
    const shard = key === null ? 0 : new CompiledRouting(r).shardFor(key);
    const fields = deadLetterFields({
      fields: original,
      stream: 'orders',
      shard,
      group,
      id: '1700000000000-0',
      reason,
      error,
      deliveryCount: reason === 'max-deliveries' ? 5 : 1,
      memberId: 'worker-1',
      failedAt: new Date(),
    });
    return (await fx.redis().xadd(dlqKey(), '*', ...fields)) as string;
  }

  const ids: Record<string, string> = {};

  it('list: a table, --json, and the group / reason / error / time filters', async () => {
    const before = Date.now();
    ids.a = await deadLetter(
      'order-a',
      'billing',
      'non-retryable',
      new PaymentDeclinedError('card declined', 'E_DECLINED'),
      { traceparent: 't-a' },
    );
    ids.b = await deadLetter('order-b', 'billing', 'max-deliveries', new Error('timeout'));
    ids.c = await deadLetter('order-c', 'shipping', 'max-deliveries', new TypeError('x is null'));
    ids.nokey = await deadLetter(null, 'shipping', 'undecodable', new Error('no key field'));

    const table = await rsc(['dlq', 'list', 'orders']);
    expect([table.code, table.stderr]).toEqual([0, '']);
    expect(table.stdout.split('\n')[0]).toMatch(
      /^ID\s+FAILED AT\s+GROUP\s+SHARD\s+ORIGINAL ID\s+REASON\s+DELIVERIES\s+KEY\s+REPLAYED\s+ERROR$/,
    );
    expect(table.stdout).toMatch(
      new RegExp(
        `^${ids.a}\\s+\\S+Z\\s+billing\\s+\\d\\s+1700000000000-0\\s+non-retryable\\s+1\\s+order-a\\s+no\\s+PaymentDeclinedError: card declined$`,
        'm',
      ),
    );

    const list = async (...args: string[]): Promise<string[]> => {
      const run = await rsc(['dlq', 'list', 'orders', '--json', ...args]);
      expect([run.code, run.stderr]).toEqual([0, '']);
      return (JSON.parse(run.stdout) as DeadLetterListResponse).entries.map((e) => e.id);
    };
    expect(await list()).toEqual([ids.a, ids.b, ids.c, ids.nokey]);
    expect(await list('--group', 'billing')).toEqual([ids.a, ids.b]);
    expect(await list('--reason', 'max-deliveries')).toEqual([ids.b, ids.c]);
    expect(await list('--error', 'typeerror')).toEqual([ids.c]);
    expect(await list('--error', 'DECLINED')).toEqual([ids.a]);
    expect(await list('--since', String(before), '--group', 'shipping')).toEqual([
      ids.c,
      ids.nokey,
    ]);
    expect(await list('--until', String(before - 1))).toEqual([]);
    expect(await list('--since', '1h', '-n', '1')).toEqual([ids.a]);
    const paged = await rsc(['dlq', 'list', 'orders', '-n', '2']);
    expect(paged.stdout).toContain(`more: rsc dlq list orders --after ${ids.b}`);
    expect(await list('--after', ids.b as string)).toEqual([ids.c, ids.nokey]);

    const bad = await rsc(['dlq', 'list', 'orders', '--reason', 'bored']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /--reason must be one of max-deliveries, undecodable, non-retryable/,
    );
  });

  it('show: the error class, its own properties, headers, payload and where it failed', async () => {
    const human = await rsc(['dlq', 'show', 'orders', ids.a as string]);
    expect([human.code, human.stderr]).toEqual([0, '']);
    expect(human.stdout).toMatch(/^error:\s+PaymentDeclinedError: card declined$/m);
    expect(human.stdout).toMatch(/^error properties:\s*\{"code":"E_DECLINED"\}$/m);
    expect(human.stdout).toMatch(/^headers:\s+\{"traceparent":"t-a"\}$/m);
    expect(human.stdout).toMatch(/^replayed:\s+no$/m);
    const json = JSON.parse(
      (await rsc(['dlq', 'show', 'orders', ids.a as string, '--json'])).stdout,
    ) as DeadLetterEntry;
    expect(json).toMatchObject({
      id: ids.a,
      group: 'billing',
      originalId: '1700000000000-0',
      errorName: 'PaymentDeclinedError',
      errorProperties: { code: 'E_DECLINED' },
      key: 'order-a',
      payload: '{"order":"order-a","n":1}',
      headers: { traceparent: 't-a' },
      replay: null,
    });
    const missing = await rsc(['dlq', 'show', 'orders', '1-1']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/404 NOT_FOUND: stream "orders" has no dead-letter entry 1-1/);
  });

  it('replay after a reshard: by key through the new routing, headers kept plus the marker, once per entry', async () => {
    const oldKeys = (await routing()).shards.map((s) => s.key);
    const reshard = await rsc(['streams', 'reshard', 'orders', '--shards', '3']);
    expect(reshard.code).toBe(0);
    await waitForNoProblems(
      async () => {
        const r = await routing();
        const left = await Promise.all(oldKeys.map((k) => fx.redis().exists(k, `${k}:meta`)));
        return [
          ...(r.resharding === null ? [] : [`resharding: ${r.resharding.state}`]),
          ...(left.some((n) => n > 0) ? ['an old shard still exists'] : []),
        ];
      },
      {
        timeoutMs: 30_000,
        message: 'the reshard completes and the old shards are gone',
        retryErrors: true,
      },
    );
    const now = new CompiledRouting(await routing());
    expect(now.routing.shards.map((s) => s.key).some((k) => oldKeys.includes(k))).toBe(false);

    const run = await rsc(['dlq', 'replay', 'orders', '--ids', `${ids.a},${ids.b}`]);
    expect([run.code, run.stderr]).toEqual([0, '']);
    expect(run.stdout).toMatch(new RegExp(`^${ids.a}\\s+replayed\\s+\\d+-\\d+\\s+\\S+`, 'm'));
    expect(run.stdout).toContain('replayed 2 of 2 selected');

    // Each landed on the shard its key routes to now, as the original bytes plus the marker.
    const replayed = await fx.redis().xrange(now.shardKeyFor('order-a'), '-', '+');
    const fields = replayed.find(([, f]) => f.includes('order-a'))?.[1] ?? [];
    const record = Object.fromEntries(
      Array.from({ length: fields.length / 2 }, (_, i) => [fields[2 * i], fields[2 * i + 1]]),
    );
    expect(record.payload).toBe('{"order":"order-a","n":1}');
    expect(JSON.parse(record.headers as string)).toEqual({
      traceparent: 't-a',
      'rsc-replay-of': ids.a,
    });

    const lengths = async (): Promise<number[]> =>
      Promise.all(now.routing.shards.map((s) => fx.redis().xlen(s.key)));
    const before = await lengths();
    const again = await fx
      .admin()
      .post<DeadLetterReplayResponse>('/v1/streams/orders/dead-letters/replay', {
        ids: [ids.a, ids.b],
      });
    expect(again.status).toBe(200);
    expect(again.body.results.map((r) => r.outcome)).toEqual([
      'already-replayed',
      'already-replayed',
    ]);
    expect(await lengths()).toEqual(before);

    // --all: every entry not yet replayed; the one without a key cannot be.
    const rest = await rsc(['dlq', 'replay', 'orders', '--all', '--json']);
    expect(rest.code).toBe(0);
    const body = JSON.parse(rest.stdout) as DeadLetterReplayResponse;
    expect(body.results.map((r) => [r.id, r.outcome])).toEqual([
      [ids.c, 'replayed'],
      [ids.nokey, 'not-replayable'],
    ]);
    const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
    expect(sum(await lengths())).toBe(sum(before) + 1);
    expect(
      await (async () => {
        const r = await rsc(['dlq', 'list', 'orders', '--replayed', '--json']);
        return (JSON.parse(r.stdout) as DeadLetterListResponse).entries.map((e) => e.id);
      })(),
    ).toEqual([ids.a, ids.b, ids.c]);
  });

  it('bad input and missing rights change nothing', async () => {
    const snapshot = async (): Promise<unknown> => [
      await fx.redis().xrange(dlqKey(), '-', '+'),
      await fx.redis().hgetall(`${dlqKey()}:replays`),
    ];
    const before = await snapshot();
    const noYes = await rsc(['dlq', 'purge', 'orders', '--all']);
    expect(noYes.code).toBe(2);
    expect(noYes.stderr).toMatch(/add --yes to confirm/);
    const noSelection = await rsc(['dlq', 'replay', 'orders']);
    expect(noSelection.code).toBe(2);
    const asMember = await rsc(['dlq', 'replay', 'orders', '--all'], TEST_TOKENS.member);
    expect(asMember.code).toBe(1);
    expect(asMember.stderr).toMatch(/403 FORBIDDEN/);

    const cases: Array<[string, string, unknown, number, string, string]> = [
      [
        'POST',
        '/v1/streams/orders/dead-letters/purge',
        { all: true },
        400,
        'INVALID_REQUEST',
        'confirm',
      ],
      [
        'POST',
        '/v1/streams/orders/dead-letters/purge',
        { confirm: true },
        400,
        'INVALID_REQUEST',
        'exactly one of',
      ],
      [
        'POST',
        '/v1/streams/orders/dead-letters/replay',
        {},
        400,
        'INVALID_REQUEST',
        'either "ids" or "filter"',
      ],
      [
        'POST',
        '/v1/streams/orders/dead-letters/replay',
        { ids: ['x'] },
        400,
        'INVALID_REQUEST',
        'ids[0]',
      ],
      [
        'POST',
        '/v1/streams/orders/dead-letters/replay',
        { filter: { reason: 'bored' } },
        400,
        'INVALID_REQUEST',
        'filter.reason',
      ],
      [
        'POST',
        '/v1/streams/nope/dead-letters/replay',
        { ids: ['1-1'] },
        404,
        'STREAM_NOT_FOUND',
        'nope',
      ],
      [
        'GET',
        '/v1/streams/orders/dead-letters?limit=0',
        undefined,
        400,
        'INVALID_REQUEST',
        'limit',
      ],
      [
        'GET',
        '/v1/streams/orders/dead-letters?from=yesterday',
        undefined,
        400,
        'INVALID_REQUEST',
        'from',
      ],
      ['GET', '/v1/streams/orders/dead-letters/not-an-id', undefined, 400, 'INVALID_REQUEST', 'id'],
    ];
    for (const [method, path, body, status, code, mention] of cases) {
      const res = await fx.admin().request<ProtocolErrorBody>(method, path, body);
      expect({ path, status: res.status, code: res.body.error?.code }).toEqual({
        path,
        status,
        code,
      });
      expect(res.body.error.message).toContain(mention);
    }
    const memberPurge = await fx
      .member()
      .post<ProtocolErrorBody>('/v1/streams/orders/dead-letters/purge', {
        confirm: true,
        all: true,
      });
    expect([memberPurge.status, memberPurge.body.error.code]).toEqual([403, 'FORBIDDEN']);
    expect(await snapshot()).toEqual(before);
  });

  it('purge: selected ids, then everything, with --yes', async () => {
    const one = await rsc(['dlq', 'purge', 'orders', '--ids', ids.nokey as string, '--yes']);
    expect([one.code, one.stdout.trim()]).toEqual([0, 'deleted 1 dead letter(s) of stream orders']);
    const filtered = await rsc(['dlq', 'purge', 'orders', '--group', 'shipping', '--yes']);
    expect(filtered.stdout.trim()).toBe('deleted 1 dead letter(s) of stream orders');
    expect(await fx.redis().hexists(`${dlqKey()}:replays`, ids.c as string)).toBe(0);
    const all = await rsc(['dlq', 'purge', 'orders', '--all', '--yes']);
    expect(all.stdout.trim()).toBe('deleted 2 dead letter(s) of stream orders');
    expect(await fx.redis().exists(dlqKey(), `${dlqKey()}:replays`)).toBe(0);
    const empty = await rsc(['dlq', 'list', 'orders']);
    expect(empty.stdout).toMatch(/^no dead letters in \S+ match \(0 read\)$/m);
  });
});
