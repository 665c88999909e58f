import { describe, expect, it } from 'vitest';
import { DeadLetterArgumentError } from '../errors/dead-letters/dead-letter-argument.error.js';
import {
  deadLetterFields,
  errorProperties,
  MAX_ERROR_PROPERTIES_LENGTH,
} from '../data-plane/dead-letter.js';
import {
  checkDeadLetterFilter,
  checkDeadLetterId,
  matchesDeadLetterFilter,
  parseDeadLetterEntry,
  parseReplayMark,
} from './dead-letter-entry.js';

class DeclinedError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly attempt: bigint,
  ) {
    super(message);
  }
}

const buffers = (...values: Array<string | Buffer>): Buffer[] =>
  values.map((v) => (Buffer.isBuffer(v) ? v : Buffer.from(v)));

function entryOf(error: Error, id = '1700000000500-0', extra: Buffer[] = []) {
  const fields = deadLetterFields({
    fields: buffers('key', 'k1', 'payload', '{"a":1}', 'headers', '{"h":"v"}', ...extra),
    stream: 'orders',
    shard: 3,
    group: 'billing',
    id: '9-9',
    reason: 'non-retryable',
    error,
    deliveryCount: 1,
    memberId: 'm',
    failedAt: new Date(1_700_000_000_500),
  }).map((f) => (Buffer.isBuffer(f) ? f : Buffer.from(f)));
  return parseDeadLetterEntry('orders', id, fields);
}

describe('dead-letter entries', () => {
  it('record the error class name and its own enumerable properties', () => {
    const entry = entryOf(new DeclinedError('card declined', 'E_DECLINED', 12n));
    expect(entry).toMatchObject({
      id: '1700000000500-0',
      stream: 'orders',
      shard: 3,
      group: 'billing',
      originalId: '9-9',
      reason: 'non-retryable',
      error: 'card declined',
      errorName: 'DeclinedError',
      errorProperties: { code: 'E_DECLINED', attempt: '12' },
      key: 'k1',
      payload: '{"a":1}',
      payloadBase64: Buffer.from('{"a":1}').toString('base64'),
      headers: { h: 'v' },
      deliveryCount: 1,
      failedAt: '2023-11-14T22:13:20.500Z',
      replay: null,
    });
    expect(entryOf(new Error('plain')).errorProperties).toBeNull();
  });

  it('leave out a name property that only repeats the class name', () => {
    class NamedError extends Error {
      override name = 'NamedError';
      readonly code = 7;
    }
    expect(errorProperties(new NamedError('x'))).toBe('{"code":7}');
    const renamed = Object.assign(new Error('x'), { name: 'Custom' });
    expect(errorProperties(renamed)).toBe('{"name":"Custom"}');
  });

  it('bound the error properties, keeping what fits and counting the rest', () => {
    const error = Object.assign(new Error('big'), {
      small: 1,
      huge: 'x'.repeat(10_000),
      circular: {} as Record<string, unknown>,
      after: 'kept',
    });
    error.circular.self = error.circular;
    const text = errorProperties(error) as string;
    expect(text.length).toBeLessThanOrEqual(MAX_ERROR_PROPERTIES_LENGTH);
    expect(JSON.parse(text)).toEqual({
      small: 1,
      circular: { self: '[circular]' },
      after: 'kept',
      '…omitted': 1,
    });
  });

  it('read only a bounded part of a huge property value (a Buffer, a large object graph)', () => {
    let reads = 0;
    const graph = Array.from({ length: 100_000 }, () => ({
      get n() {
        reads++;
        return 1;
      },
    }));
    const error = Object.assign(new Error('big'), {
      body: Buffer.alloc(5_000_000),
      graph,
      code: 'E',
    });
    const text = errorProperties(error) as string;
    expect(text.length).toBeLessThanOrEqual(MAX_ERROR_PROPERTIES_LENGTH);
    const parsed = JSON.parse(text) as Record<string, unknown>;
    expect(parsed.code).toBe('E');
    expect(parsed.body).toBe('[Buffer: 5000000 bytes]');
    // The walk stops once the budget is spent, not after the 100 000 getters.
    expect(reads).toBeLessThan(5_000);
  });

  it('record an error whose getters throw or whose fields are not what Error declares', () => {
    const hostile = new Error('hostile');
    Object.defineProperty(hostile, 'stack', { value: { not: 'a string' } });
    Object.defineProperty(hostile, 'constructor', {
      get() {
        throw new Error('no constructor');
      },
    });
    Object.defineProperty(hostile, 'name', {
      get() {
        throw new Error('no name');
      },
    });
    Object.defineProperty(hostile, 'boom', {
      enumerable: true,
      get() {
        throw new Error('no boom');
      },
    });
    const symbolic = Object.assign(new Error('symbols'), {
      [Symbol('hidden')]: 1,
      tag: Symbol('t'),
      deep: { a: { b: { c: { d: { e: { f: { g: { h: { i: { j: { k: 1 } } } } } } } } } } },
    });
    const fields = (error: Error) => {
      const flat = deadLetterFields({
        fields: buffers('key', 'k1', 'payload', 'p'),
        stream: 'orders',
        shard: 0,
        group: 'g',
        id: '1-0',
        reason: 'non-retryable',
        error,
        deliveryCount: 1,
        memberId: 'm',
        failedAt: new Date(0),
      });
      const out = new Map<string, string>();
      for (let i = 0; i + 1 < flat.length; i += 2) out.set(String(flat[i]), String(flat[i + 1]));
      return out;
    };
    const h = fields(hostile);
    expect(h.get('error')).toBe('hostile');
    expect(h.get('errorName')).toBe('Error');
    expect(h.has('stack')).toBe(false);
    expect(JSON.parse(h.get('errorProperties') as string)).toEqual({ '…omitted': 1 });
    const s = fields(symbolic);
    expect(JSON.parse(s.get('errorProperties') as string)).toEqual({
      tag: '[symbol]',
      deep: { a: { b: { c: { d: { e: { f: { g: '[depth]' } } } } } } },
    });
  });

  it('show a binary payload only in base64, and malformed fields as null', () => {
    const binary = Buffer.from([0xff, 0xfe, 0x00]);
    const entry = parseDeadLetterEntry(
      'orders',
      '1-0',
      buffers('payload', binary, 'shard', 'x', 'headers', '[1]'),
    );
    expect(entry).toMatchObject({
      payload: null,
      payloadBase64: binary.toString('base64'),
      shard: null,
      headers: null,
      key: null,
      errorName: null,
    });
  });

  it('read replay marks', () => {
    expect(parseReplayMark('{"state":"done","entryId":"5-0","shardKey":"k","ms":0}')).toEqual({
      state: 'done',
      at: '1970-01-01T00:00:00.000Z',
      entryId: '5-0',
      shardKey: 'k',
    });
    expect(parseReplayMark('{"state":"other"}')).toBeNull();
    expect(parseReplayMark('nope')).toBeNull();
    expect(parseReplayMark(null)).toBeNull();
  });
});

describe('dead-letter filters', () => {
  const entry = entryOf(new DeclinedError('card declined', 'E', 1n));

  it('match on group, reason, error text (message or class, any case), time and replay', () => {
    const match = (filter: Parameters<typeof matchesDeadLetterFilter>[1]) =>
      matchesDeadLetterFilter(entry, filter);
    expect(match({})).toBe(true);
    expect(match({ group: 'billing' })).toBe(true);
    expect(match({ group: 'shipping' })).toBe(false);
    expect(match({ reason: 'non-retryable' })).toBe(true);
    expect(match({ reason: 'max-deliveries' })).toBe(false);
    expect(match({ error: 'DECLINED' })).toBe(true);
    expect(match({ error: 'declinederror' })).toBe(true);
    expect(match({ error: 'timeout' })).toBe(false);
    expect(match({ fromMs: 1_700_000_000_500, toMs: 1_700_000_000_500 })).toBe(true);
    expect(match({ fromMs: 1_700_000_000_501 })).toBe(false);
    expect(match({ toMs: 1_700_000_000_499 })).toBe(false);
    expect(match({ replayed: false })).toBe(true);
    expect(match({ replayed: true })).toBe(false);
    const replayed = { ...entry, replay: { state: 'done' as const, at: '' } };
    expect(matchesDeadLetterFilter(replayed, { replayed: true })).toBe(true);
    const pending = { ...entry, replay: { state: 'pending' as const, at: '' } };
    expect(matchesDeadLetterFilter(pending, { replayed: false })).toBe(true);
  });

  it('refuse bad fields with a message naming them', () => {
    const bad: Array<[unknown, RegExp]> = [
      [{ group: 'a b' }, /"group"/],
      [{ reason: 'bored' }, /"reason" must be one of max-deliveries/],
      [{ error: '' }, /"error"/],
      [{ fromMs: -1 }, /"fromMs"/],
      [{ toMs: 1.5 }, /"toMs"/],
      [{ fromMs: 2, toMs: 1 }, /after "toMs"/],
      [{ replayed: 'yes' }, /"replayed"/],
    ];
    for (const [filter, message] of bad) {
      expect(() => checkDeadLetterFilter(filter as never)).toThrow(DeadLetterArgumentError);
      expect(() => checkDeadLetterFilter(filter as never)).toThrow(message);
    }
    expect(checkDeadLetterFilter({ group: 'g', fromMs: 1, toMs: 1 })).toEqual({
      group: 'g',
      fromMs: 1,
      toMs: 1,
    });
  });

  it('take only stream entry ids', () => {
    expect(checkDeadLetterId('1700000000000-0')).toBe('1700000000000-0');
    for (const bad of ['1', '1-', '-1', 'a-1', '1-2-3', '', 7]) {
      expect(() => checkDeadLetterId(bad)).toThrow(/must look like 1700000000000-0/);
    }
  });
});
