import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeEntryIds } from '../../../libs/stream-coordinator/src/data-plane/scripts/entry-id-list.js';
import { useRedisPrefix } from '../../support/redis.js';

/** What Redis's own Lua `cmsgpack` makes of the encoded list (what the ack scripts read). */
const DECODE = 'return cmsgpack.unpack(ARGV[1])';

/** A stream entry id `<ms>-<seq>` of up to 20 digits each (41 characters at most). */
const entryId = fc
  .tuple(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }))
  .map(([ms, seq]) => `${ms}-${seq}`);

describe('entry id lists (one MessagePack argument, decoded by cmsgpack in Redis)', () => {
  const { redis } = useRedisPrefix('entry-id-list');

  async function decoded(ids: readonly string[]): Promise<string[]> {
    return (await redis().eval(DECODE, 0, encodeEntryIds(ids))) as string[];
  }

  it('Redis decodes any list of entry ids to the same ids in the same order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(entryId, { maxLength: 300 }), async (ids) => {
        expect(await decoded(ids)).toEqual(ids);
      }),
      { numRuns: 60 },
    );
  });

  it('holds at every size and length boundary of the encoding', async () => {
    // fixstr up to 31 characters, str 8 from 32; fixarray up to 15 ids, array 16, array 32
    const long = `${'9'.repeat(20)}-${'9'.repeat(20)}`;
    const ids = [
      '0-0',
      `${'1'.repeat(15)}-${'2'.repeat(15)}`,
      `${'1'.repeat(15)}-${'2'.repeat(16)}`,
      long,
    ];
    expect(await decoded(ids)).toEqual(ids);
    for (const count of [0, 15, 16, 0xffff, 0x10000]) {
      const list = Array.from({ length: count }, (_, i) => `1700000000000-${i}`);
      const back = await decoded(list);
      expect(back).toHaveLength(count);
      expect(back.at(-1)).toBe(list.at(-1));
      expect(back).toEqual(list);
    }
  });

  it('writes the MessagePack headers the specification gives at each boundary', () => {
    const hex = (ids: readonly string[]): string => encodeEntryIds(ids).toString('hex');
    const ids = (count: number): string[] => Array.from({ length: count }, () => '1-1');
    expect(hex([])).toBe('90');
    expect(hex(ids(15)).slice(0, 2)).toBe('9f');
    expect(hex(ids(16)).slice(0, 6)).toBe('dc0010');
    expect(hex(ids(0x10000)).slice(0, 10)).toBe('dd00010000');
    expect(hex(['1-1'])).toBe('91a3312d31');
    const thirtyOne = `${'1'.repeat(15)}-${'2'.repeat(15)}`;
    const thirtyTwo = `${'1'.repeat(15)}-${'2'.repeat(16)}`;
    expect(hex([thirtyOne]).slice(0, 4)).toBe('91bf');
    expect(hex([thirtyTwo]).slice(0, 6)).toBe('91d920');
  });

  it('refuses something longer than an entry id, naming it', () => {
    const tooLong = `${'9'.repeat(21)}-${'9'.repeat(20)}`;
    expect(() => encodeEntryIds(['1-1', tooLong])).toThrow(RangeError);
    expect(() => encodeEntryIds([tooLong])).toThrow(/not a stream entry id .*999/);
  });

  it('refuses an empty id and any character but digits and "-", naming the id', () => {
    expect(() => encodeEntryIds(['1-1', ''])).toThrow(/not a stream entry id .*""/);
    for (const bad of ['1-1\u00e9', '1-\u2603', '1-1,2-2', ' 1-1', '1-1\n', 'abc']) {
      expect(() => encodeEntryIds(['0-1', bad])).toThrow(RangeError);
    }
    expect(() => encodeEntryIds(['1-\u2603'])).toThrow(/not a stream entry id .*"1-\u2603"/);
  });

  it('names the first id that is not an entry id, whatever is wrong with it', () => {
    const tooLong = '1'.repeat(42);
    expect(() => encodeEntryIds(['0-1', '1-a', tooLong])).toThrow(/: "1-a"$/);
    expect(() => encodeEntryIds(['0-1', tooLong, '1-a'])).toThrow(new RegExp(`: "${tooLong}"$`));
    expect(() => encodeEntryIds(['1-a', ''])).toThrow(/: "1-a"$/);
    expect(() => encodeEntryIds(['', '1-a'])).toThrow(/: ""$/);
  });
});
