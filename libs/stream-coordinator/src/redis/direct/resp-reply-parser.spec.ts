import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RedisReplyError } from '../../errors/redis/redis-reply.error.js';
import { RespProtocolError } from '../../errors/redis/resp-protocol.error.js';
import { RespReplyParser } from './resp-reply-parser.js';

/** A RESP2 value as the model sees it. */
type Model =
  | { kind: 'simple'; text: string }
  | { kind: 'error'; text: string }
  | { kind: 'integer'; value: number }
  | { kind: 'bulk'; bytes: Buffer }
  | { kind: 'null-bulk' }
  | { kind: 'null-array' }
  | { kind: 'array'; items: Model[] };

const lineText = fc.string({ maxLength: 20 }).filter((s) => !s.includes('\r') && !s.includes('\n'));
const bytes = fc
  .oneof(fc.uint8Array({ maxLength: 40 }), fc.uint8Array({ minLength: 200, maxLength: 3000 }))
  .map((a) => Buffer.from(a));

const model: fc.Arbitrary<Model> = fc.letrec<{ value: Model }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    lineText.map((text) => ({ kind: 'simple', text }) as Model),
    lineText.map((text) => ({ kind: 'error', text: `ERR ${text}` }) as Model),
    fc.integer({ min: -1e9, max: 1e9 }).map((value) => ({ kind: 'integer', value }) as Model),
    bytes.map((b) => ({ kind: 'bulk', bytes: b }) as Model),
    fc.constant({ kind: 'null-bulk' } as Model),
    fc.constant({ kind: 'null-array' } as Model),
    fc.array(tie('value'), { maxLength: 5 }).map((items) => ({ kind: 'array', items }) as Model),
  ),
})).value;

function encode(value: Model): Buffer {
  switch (value.kind) {
    case 'simple':
      return Buffer.from(`+${value.text}\r\n`);
    case 'error':
      return Buffer.from(`-${value.text}\r\n`);
    case 'integer':
      return Buffer.from(`:${value.value}\r\n`);
    case 'bulk':
      return Buffer.concat([
        Buffer.from(`$${value.bytes.length}\r\n`),
        value.bytes,
        Buffer.from('\r\n'),
      ]);
    case 'null-bulk':
      return Buffer.from('$-1\r\n');
    case 'null-array':
      return Buffer.from('*-1\r\n');
    case 'array':
      return Buffer.concat([Buffer.from(`*${value.items.length}\r\n`), ...value.items.map(encode)]);
  }
}

function expected(value: Model, buffers: boolean): unknown {
  switch (value.kind) {
    case 'simple':
      return value.text;
    case 'error':
      return new RedisReplyError(value.text);
    case 'integer':
      return value.value;
    case 'bulk':
      return buffers ? value.bytes : value.bytes.toString('utf8');
    case 'null-bulk':
    case 'null-array':
      return null;
    case 'array':
      return value.items.map((item) => expected(item, buffers));
  }
}

/** Replies with their errors as `{ error: message }` (toEqual ignores an Error's message). */
function comparable(value: unknown): unknown {
  if (value instanceof RedisReplyError) return { error: value.message, code: value.code };
  if (Array.isArray(value)) return value.map(comparable);
  return value;
}

/** `bytes` cut at `cuts` (offsets, any order, duplicates allowed). */
function split(all: Buffer, cuts: number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (all.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const cut of at) {
    chunks.push(all.subarray(from, cut));
    from = cut;
  }
  chunks.push(all.subarray(from));
  return chunks.filter((c) => c.length > 0);
}

/** An `XREADGROUP` reply: one stream, entries of an id and a field list. */
const fieldName = fc.oneof(
  fc.constantFrom('key', 'payload', 'headers', 'kez', 'payloads', 'header', ''),
  fc.string({ maxLength: 8 }),
);
const streamReply = fc
  .array(
    fc.tuple(
      fc.tuple(fc.nat(), fc.nat({ max: 99 })).map(([ms, seq]) => `${ms}-${seq}`),
      fc.array(fc.tuple(fieldName, bytes), { maxLength: 4 }),
    ),
    { maxLength: 6 },
  )
  .map((entries): Model => ({
    kind: 'array',
    items: [
      {
        kind: 'array',
        items: [
          { kind: 'bulk', bytes: Buffer.from('t:{orders:3}') },
          {
            kind: 'array',
            items: entries.map(([id, fields]) => ({
              kind: 'array',
              items: [
                { kind: 'bulk', bytes: Buffer.from(id) },
                {
                  kind: 'array',
                  items: fields.flatMap(([name, value]) => [
                    { kind: 'bulk', bytes: Buffer.from(name) } as Model,
                    { kind: 'bulk', bytes: value } as Model,
                  ]),
                },
              ],
            })),
          },
        ],
      },
    ],
  }));

/** Whether an `XREADGROUP` reply model has an entry with fields. */
function hasFields(reply: Model): boolean {
  return JSON.stringify(reply).includes('"bytes"') && encode(reply).length > 60;
}

/** A reply with every Buffer as its text and every string as it is (ids may be either). */
function asText(value: unknown): unknown {
  if (Buffer.isBuffer(value)) return value.toString('latin1');
  if (Array.isArray(value)) return value.map(asText);
  return comparable(value);
}

describe('RespReplyParser', () => {
  it('parses any sequence of RESP2 replies, however the bytes are cut, in order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(model, fc.boolean()), { minLength: 1, maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (replies, cuts) => {
          const wants = replies.map(([, buffers]) => buffers);
          const got: unknown[] = [];
          const parser = new RespReplyParser(
            (reply) => got.push(reply),
            () => (wants[got.length] === true ? 'buffers' : 'text'),
          );
          for (const chunk of split(Buffer.concat(replies.map(([v]) => encode(v))), cuts)) {
            parser.feed(chunk);
          }
          expect(comparable(got)).toEqual(
            comparable(replies.map(([value, buffers]) => expected(value, buffers))),
          );
        },
      ),
      { numRuns: 500 },
    );
  });

  it('reads XREADGROUP replies in the stream-entries shape, however the bytes are cut', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(streamReply, model), { minLength: 1, maxLength: 4 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (replies, cuts) => {
          const got: unknown[] = [];
          const parser = new RespReplyParser(
            (reply) => got.push(reply),
            () => 'stream-entries',
          );
          for (const chunk of split(Buffer.concat(replies.map(encode)), cuts)) parser.feed(chunk);
          // the same replies as with Buffers, ids as strings or Buffers
          expect(asText(got)).toEqual(asText(replies.map((value) => expected(value, true))));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('reads an XREADGROUP reply cut in two at every byte, and the reply after it', () => {
    const reply = fc.sample(streamReply.filter(hasFields), { numRuns: 1, seed: 7 })[0] as Model;
    const all = Buffer.concat([encode(reply), Buffer.from(':5\r\n')]);
    const want = asText([expected(reply, true), 5]);
    for (let cut = 0; cut <= all.length; cut++) {
      const got: unknown[] = [];
      const parser = new RespReplyParser(
        (value) => got.push(value),
        () => (got.length === 0 ? 'stream-entries' : 'text'),
      );
      for (const chunk of split(all, [cut])) parser.feed(chunk);
      expect(asText(got), `cut at ${cut}`).toEqual(want);
    }
  });

  it('gives a whole XREADGROUP reply ids as strings and shared field names', () => {
    const entry = (id: string, payload: string): Model => ({
      kind: 'array',
      items: [
        { kind: 'bulk', bytes: Buffer.from(id) },
        {
          kind: 'array',
          items: ['key', 'k1', 'payload', payload, 'other', 'x'].map((text): Model => ({
            kind: 'bulk',
            bytes: Buffer.from(text),
          })),
        },
      ],
    });
    const reply = (id: string): Model => ({
      kind: 'array',
      items: [
        {
          kind: 'array',
          items: [
            { kind: 'bulk', bytes: Buffer.from('s') },
            { kind: 'array', items: [entry(id, '{"n":1}')] },
          ],
        },
      ],
    });
    const got: unknown[] = [];
    const parser = new RespReplyParser(
      (value) => got.push(value),
      () => 'stream-entries',
    );
    parser.feed(encode(reply('1-0')));
    parser.feed(encode(reply('2-0')));
    const [first, second] = got.map(
      (value) => (value as [[Buffer, Array<[string, Buffer[]]>]])[0][1][0],
    );
    expect(first?.[0]).toBe('1-0');
    expect(second?.[0]).toBe('2-0');
    const [firstFields, secondFields] = [first?.[1] ?? [], second?.[1] ?? []];
    expect(firstFields.map((field) => field.toString())).toEqual([
      'key',
      'k1',
      'payload',
      '{"n":1}',
      'other',
      'x',
    ]);
    // the reader's names are one Buffer across replies; values and other names are views
    expect(secondFields[0]).toBe(firstFields[0]);
    expect(secondFields[2]).toBe(firstFields[2]);
    expect(secondFields[4]).not.toBe(firstFields[4]);
    expect(secondFields[3]).not.toBe(firstFields[3]);
  });

  it.each([
    ['a block that timed out', '*-1\r\n', null],
    [
      'an error reply',
      '-NOGROUP No such key\r\n',
      { error: 'NOGROUP No such key', code: 'NOGROUP' },
    ],
    [
      'two streams',
      '*2\r\n*2\r\n$1\r\na\r\n*0\r\n*2\r\n$1\r\nb\r\n*0\r\n',
      [
        ['a', []],
        ['b', []],
      ],
    ],
    [
      'an entry without fields',
      '*1\r\n*2\r\n$1\r\na\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*-1\r\n',
      [['a', [['1-0', null]]]],
    ],
  ])('reads %s under the stream-entries shape as with Buffers', (_what, bytes, reply) => {
    const got: unknown[] = [];
    new RespReplyParser(
      (value) => got.push(value),
      () => 'stream-entries',
    ).feed(Buffer.from(bytes));
    expect(asText(got)).toEqual([reply]);
  });

  it('parses a long bulk string that arrives in many chunks', () => {
    const payload = Buffer.alloc(100_000, 'x');
    const all = Buffer.concat([
      Buffer.from(`*1\r\n$${payload.length}\r\n`),
      payload,
      Buffer.from('\r\n'),
    ]);
    const got: unknown[] = [];
    const parser = new RespReplyParser(
      (reply) => got.push(reply),
      () => 'buffers',
    );
    for (let at = 0; at < all.length; at += 1000) parser.feed(all.subarray(at, at + 1000));
    expect(got).toHaveLength(1);
    expect((got[0] as Buffer[])[0]?.equals(payload)).toBe(true);
  });

  it('gives bulk strings as views of the received bytes when Buffers are asked for', () => {
    const chunk = Buffer.from('*2\r\n$3\r\nabc\r\n$2\r\nde\r\n');
    const got: unknown[] = [];
    new RespReplyParser(
      (reply) => got.push(reply),
      () => 'buffers',
    ).feed(chunk);
    const [first] = got[0] as Buffer[];
    expect(first?.buffer).toBe(chunk.buffer);
    expect(first?.toString()).toBe('abc');
  });

  it.each([
    ['a type byte RESP2 does not have', '%1\r\n'],
    ['a type byte with no line end yet', '>'],
    ['a length with a non-digit', '*1x\r\n'],
    ['a negative length other than -1', '$-2\r\n'],
    ['an array that would take gigabytes', '*999999999999\r\n'],
    ['a length without digits', '$\r\n'],
    ['a sign without digits', '*-\r\n'],
    ['a number longer than a 64-bit integer', ':12345678901234567890\r\n'],
    ['a CR without its LF', ':1\rx'],
    ['a simple string whose line does not end', `+${'x'.repeat(70_000)}`],
  ])('refuses %s, and parses again after reset', (_what, bytes) => {
    const got: unknown[] = [];
    const parser = new RespReplyParser(
      (reply) => got.push(reply),
      () => 'text',
    );
    expect(() => parser.feed(Buffer.from(bytes))).toThrow(RespProtocolError);
    parser.reset();
    parser.feed(Buffer.from(':7\r\n'));
    expect(got).toEqual([7]);
  });
});
