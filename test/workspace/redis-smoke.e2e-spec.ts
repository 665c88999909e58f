import { describe, expect, it } from 'vitest';
import { cleanupPrefix, createTestRedis, useRedisPrefix } from '../support/redis.js';

async function keysUnder(prefix: string, scan: (cursor: string) => Promise<[string, string[]]>) {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await scan(cursor);
    cursor = next;
    found.push(...keys);
  } while (cursor !== '0');
  return found.filter((key) => key.startsWith(`${prefix}:`));
}

describe('real Redis smoke test', () => {
  const { prefix, redis } = useRedisPrefix('smoke');

  it('round-trips XADD / XREADGROUP / XACK under a unique prefix', async () => {
    const stream = `${prefix}:{orders:0}`;
    await redis().xgroup('CREATE', stream, 'billing', '$', 'MKSTREAM');
    const id = await redis().xadd(stream, '*', 'key', 'order-1', 'value', '{"total":42}');
    expect(id).toMatch(/^\d+-\d+$/);

    const read = (await redis().xreadgroup(
      'GROUP',
      'billing',
      'member-a',
      'COUNT',
      10,
      'STREAMS',
      stream,
      '>',
    )) as [string, [string, string[]][]][] | null;
    expect(read).toEqual([[stream, [[id, ['key', 'order-1', 'value', '{"total":42}']]]]]);

    const pendingBefore = (await redis().xpending(stream, 'billing')) as [number, ...unknown[]];
    expect(pendingBefore[0]).toBe(1);
    expect(await redis().xack(stream, 'billing', id as string)).toBe(1);
    const pendingAfter = (await redis().xpending(stream, 'billing')) as [number, ...unknown[]];
    expect(pendingAfter[0]).toBe(0);
  });

  it('cleans up exactly its own prefix', async () => {
    const other = createTestRedis();
    const otherPrefix = `${prefix}x`; // shares the text but not the `prefix:` namespace
    try {
      await redis().set(`${prefix}:a`, '1');
      await other.set(`${otherPrefix}:b`, '1');
      const scan = (cursor: string) => redis().scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      expect((await keysUnder(prefix, scan)).sort()).toEqual(
        [`${prefix}:a`, `${prefix}:{orders:0}`].sort(),
      );
      await cleanupPrefix(redis(), prefix);
      expect(await keysUnder(prefix, scan)).toEqual([]);
      expect(await other.exists(`${otherPrefix}:b`)).toBe(1);
    } finally {
      await other.del(`${otherPrefix}:b`);
      other.disconnect();
    }
  });
});
