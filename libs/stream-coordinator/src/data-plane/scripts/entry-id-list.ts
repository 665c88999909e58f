/**
 * # Entry id lists in one script argument
 *
 * The fenced ack scripts take the ids to acknowledge as one argument: a MessagePack array of
 * strings, which the script turns into a Lua table with `cmsgpack.unpack` (part of Redis's Lua
 * since 2.6). One argument instead of one per id, because ioredis builds every argument of a
 * command separately: with one argument per id, building and writing the `EVALSHA` of a batch of
 * 100 acks took ≈ 7 % of a member's busy time. MessagePack instead of the ids joined with `,`,
 * because splitting the joined text in Lua (`string.gmatch`) cost Redis more: about a tenth more
 * Redis time per acknowledged id than `cmsgpack`, measured with `INFO commandstats` on batches of
 * 100 (`bench/ack-script-micro.ts`; bench/benchmarks-notes.md, "The fenced ack in Redis").
 *
 * Hand-written rather than a MessagePack library: only this one shape is ever encoded (an array
 * of short ASCII strings), byte for byte as the MessagePack specification gives it, and the
 * encoder sits on the read path of every batch.
 */

/** Longest entry id: `<ms>-<seq>`, two 64-bit unsigned integers. */
const MAX_ENTRY_ID_LENGTH = 41;

/** Digits and `-` only: each character one byte in latin1. */
const ENTRY_ID_TEXT = /^[0-9-]*$/;

/** The MessagePack string header of an id of each length (fixstr up to 31, then str 8). */
const STRING_HEADERS = Array.from({ length: MAX_ENTRY_ID_LENGTH + 1 }, (_, length) =>
  length < 32 ? String.fromCharCode(0xa0 | length) : String.fromCharCode(0xd9, length),
);

/**
 * `ids` as one MessagePack array of strings (fixarray / array 16 / array 32; fixstr / str 8),
 * what {@link ACK_LIST_LUA} reads. Entry ids are digits and `-`, so each character is one byte.
 *
 * The array's body is built as one latin1 string and written with one call, and the characters
 * are checked with one regular expression over all ids: a `Buffer` write and a character loop
 * per id cost ≈ 120 ns per id against ≈ 70 ns for a batch of 100 (Node 20,
 * bench/benchmarks-notes.md "The ack list encoder"), on the read path of every batch.
 *
 * @throws RangeError when an id is empty, longer than an entry id can be (41 characters), or
 *   holds anything but digits and `-`, naming the first such id: nothing is encoded, so nothing
 *   is acknowledged.
 */
export function encodeEntryIds(ids: readonly string[]): Buffer {
  const count = ids.length;
  let body = '';
  for (let i = 0; i < count; i++) {
    const id = ids[i] as string;
    if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ENTRY_ID_LENGTH) {
      throw firstNotAnEntryId(ids);
    }
    body += (STRING_HEADERS[id.length] as string) + id;
  }
  if (!ENTRY_ID_TEXT.test(ids.join(''))) throw firstNotAnEntryId(ids);
  const head = count < 16 ? 1 : count < 0x10000 ? 3 : 5;
  const out = Buffer.allocUnsafe(head + body.length);
  if (count < 16) out[0] = 0x90 | count;
  else if (count < 0x10000) {
    out[0] = 0xdc;
    out.writeUInt16BE(count, 1);
  } else {
    out[0] = 0xdd;
    out.writeUInt32BE(count, 1);
  }
  out.write(body, head, body.length, 'latin1');
  return out;
}

/** The error naming the first of `ids` that is not an entry id (the slow path of a refusal). */
function firstNotAnEntryId(ids: readonly string[]): RangeError {
  const bad = ids.find(
    (id) =>
      typeof id !== 'string' ||
      id.length === 0 ||
      id.length > MAX_ENTRY_ID_LENGTH ||
      !ENTRY_ID_TEXT.test(id),
  );
  return new RangeError(
    `not a stream entry id (1 to ${MAX_ENTRY_ID_LENGTH} digits and "-"): ${JSON.stringify(String(bad).slice(0, 60))}`,
  );
}

/**
 * Lua helper: XACK the entry ids encoded by {@link encodeEntryIds} in `ARGV[index]` on `KEYS[1]`
 * for group `ARGV[1]`, in chunks of 1,000 (Lua's `unpack` has a stack limit). Returns how many
 * entries were acknowledged.
 */
export const ACK_LIST_LUA = `
local function ack_list(index)
  local ids = cmsgpack.unpack(ARGV[index])
  local acked = 0
  for first = 1, #ids, 1000 do
    acked = acked + redis.call('XACK', KEYS[1], ARGV[1], unpack(ids, first, math.min(first + 999, #ids)))
  end
  return acked
end
`;
