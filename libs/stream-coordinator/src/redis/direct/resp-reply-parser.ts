import { RedisReplyError } from '../../errors/redis/redis-reply.error.js';
import { RespProtocolError } from '../../errors/redis/resp-protocol.error.js';

/** A value not complete in the bytes received so far. */
const INCOMPLETE = Symbol('incomplete');
/** The header of a non-empty array was read: its elements follow. */
const ARRAY = Symbol('array');

/** An array being filled: the values so far, and how many it has. */
interface Frame {
  readonly values: unknown[];
  readonly length: number;
}

/**
 * How the bulk strings of a reply are given: `text` as strings, `buffers` as Buffers,
 * `stream-entries` as for an `XREADGROUP` reply (see {@link RespReplyParser}).
 */
export type ReplyShape = 'text' | 'buffers' | 'stream-entries';

const EMPTY = Buffer.alloc(0);
/** The entry field names a shard reader looks for, given as these shared Buffers. */
const FIELD_NAMES = [Buffer.from('key'), Buffer.from('payload'), Buffer.from('headers')] as const;
/** A header the stream-entries pass cannot take (the general parser reads the reply then). */
const NOT_THIS = -1;
/** Redis's own ceiling on a bulk string (`proto-max-bulk-len`'s largest useful value). */
const MAX_BULK_BYTES = 512 * 1024 * 1024;
/** Far above any reply a reader asks for; refuses a length that would allocate gigabytes. */
const MAX_ARRAY_LENGTH = 1 << 24;
const CR = 13;
const LF = 10;
/** A simple string or error line longer than this is refused (Redis's are short). */
const MAX_LINE_BYTES = 64 * 1024;
/** Digits of a length or integer reply (a 64-bit integer has at most 19). */
const MAX_DIGITS = 19;
const MINUS = 45;

/**
 * An incremental RESP2 reply parser: feed it the bytes of a connection as they arrive and it calls
 * `onReply` once per complete reply, in order. Simple strings come as strings; integers as
 * numbers; bulk strings as strings, or as `Buffer`s (views of the received bytes, not copies) when
 * `shapeOf()` says `buffers` at the start of the reply; nulls as `null`; arrays as arrays; error
 * replies as {@link RedisReplyError} (top level or nested: the caller decides what an error
 * means).
 *
 * `stream-entries` is `buffers` for the reply of an `XREADGROUP` of new entries, with two
 * savings when the whole reply is in the bytes received and has that shape (one stream, each
 * entry an id and a field list): each entry id comes as a string (the reader needs it as one),
 * and the field names `key`, `payload` and `headers` as shared Buffers rather than a view each.
 * A reply of another shape, or one that is not all in yet, is read as `buffers`. For a 100-entry
 * reply that pass took about 530 ns per entry, id string included, where the general one and the
 * id's `toString` took 825 ns (a microbenchmark on this machine, Node 20; preallocating the
 * arrays would save about 50 ns more, but `new Array(n)` is linted out).
 *
 * Written for the shard readers' direct connection rather than taken from a client library
 * (ioredis's parser is internal to its command queue): with it, a fresh member spent 0.7–1.5 µs
 * less consumer CPU per message than with readers on ioredis 5, measured in one run
 * (bench/benchmarks-notes.md, "Readers on a direct connection"). A partial reply is resumed
 * where it stopped: arrays keep the values parsed so far, and a bulk string longer than what
 * arrived is parsed once its bytes are all there (no re-parse per chunk).
 */
export class RespReplyParser {
  private buffer: Buffer = EMPTY;
  private offset = 0;
  private readonly stack: Frame[] = [];
  private asBuffers = false;
  /** Where the stream-entries pass reads (see {@link streamEntries}). */
  private cursor = 0;
  /** Chunks held back until {@link needed} bytes (counted from the held value's start) are in. */
  private held: Buffer[] = [];
  private heldBytes = 0;
  private needed = 0;

  constructor(
    private readonly onReply: (reply: unknown) => void,
    private readonly shapeOf: () => ReplyShape,
  ) {}

  /** Parses `chunk` (and what was left of the previous ones); calls `onReply` per reply. */
  feed(chunk: Buffer): void {
    if (this.needed > 0) {
      this.held.push(chunk);
      this.heldBytes += chunk.length;
      if (this.heldBytes < this.needed) return;
      chunk = Buffer.concat(this.held, this.heldBytes);
      this.held = [];
      this.heldBytes = 0;
      this.needed = 0;
    } else if (this.offset < this.buffer.length) {
      chunk = Buffer.concat([this.buffer.subarray(this.offset), chunk]);
    }
    this.buffer = chunk;
    this.offset = 0;
    this.parse();
  }

  /** Forgets every partial reply (the connection is gone). */
  reset(): void {
    this.buffer = EMPTY;
    this.offset = 0;
    this.stack.length = 0;
    this.held = [];
    this.heldBytes = 0;
    this.needed = 0;
  }

  private parse(): void {
    const stack = this.stack;
    while (this.offset < this.buffer.length) {
      if (stack.length === 0) {
        const shape = this.shapeOf();
        if (shape === 'stream-entries') {
          const reply = this.streamEntries();
          if (reply !== undefined) {
            this.onReply(reply);
            continue;
          }
        }
        this.asBuffers = shape !== 'text';
      }
      const start = this.offset;
      let value = this.value();
      if (value === INCOMPLETE) {
        this.holdFrom(start);
        return;
      }
      if (value === ARRAY) continue;
      // place the value; every array it completes is placed in turn
      for (;;) {
        const top = stack[stack.length - 1];
        if (top === undefined) {
          this.onReply(value);
          break;
        }
        top.values.push(value);
        if (top.values.length < top.length) break;
        stack.pop();
        value = top.values;
      }
    }
    this.buffer = EMPTY;
    this.offset = 0;
  }

  /** Keeps the bytes from `start` on for the next chunk; a long bulk string waits until whole. */
  private holdFrom(start: number): void {
    if (this.needed > 0) {
      // a bulk string whose length is known: hold the chunks until it is all there
      const rest = this.buffer.subarray(start);
      this.held = [rest];
      this.heldBytes = rest.length;
      this.needed -= start;
      this.buffer = EMPTY;
      this.offset = 0;
    }
  }

  /**
   * One value at `offset`: a scalar, or {@link ARRAY} after pushing the frame of a non-empty
   * array (its elements follow). `INCOMPLETE`, with `offset` and the stack as they were, when
   * the value's bytes are not all in.
   */
  private value(): unknown {
    const b = this.buffer;
    const at = this.offset;
    const type = b[at];
    if (type === 43 /* + */ || type === MINUS) {
      const end = b.indexOf(CR, at + 1);
      if (end < 0 || end + 1 >= b.length) {
        if (b.length - at > MAX_LINE_BYTES) throw new RespProtocolError('a line without an end');
        return INCOMPLETE;
      }
      if (b[end + 1] !== LF) throw new RespProtocolError('CR without LF');
      const text = b.toString('utf8', at + 1, end);
      this.offset = end + 2;
      return type === MINUS ? new RedisReplyError(text) : text;
    }
    if (type !== 36 /* $ */ && type !== 42 /* * */ && type !== 58 /* : */) {
      throw new RespProtocolError(`unexpected type byte ${String(type)} at the start of a value`);
    }
    this.offset = at + 1;
    const n = this.integer();
    if (n === undefined) {
      this.offset = at;
      return INCOMPLETE;
    }
    if (type === 58) return n;
    if (n < -1 || n > (type === 36 ? MAX_BULK_BYTES : MAX_ARRAY_LENGTH)) {
      throw new RespProtocolError(`length ${n} out of range`);
    }
    if (type === 36) {
      if (n < 0) return null;
      const end = this.offset + n;
      if (end + 2 > b.length) {
        this.needed = end + 2;
        this.offset = at;
        return INCOMPLETE;
      }
      const value = this.asBuffers
        ? b.subarray(this.offset, end)
        : b.toString('utf8', this.offset, end);
      this.offset = end + 2;
      return value;
    }
    if (n < 0) return null;
    if (n === 0) return [];
    this.stack.push({ values: [], length: n });
    return ARRAY;
  }

  /**
   * The `XREADGROUP` reply at `offset` in one pass — `[[stream, [[id, fields], …]]]`, ids as
   * strings, the reader's field names as {@link FIELD_NAMES} — with `offset` moved past it; or
   * undefined, `offset` unchanged, when it is not all in the buffer or has another shape (a null,
   * an error, several streams, an entry without fields: the general parser reads those).
   */
  private streamEntries(): unknown[] | undefined {
    const b = this.buffer;
    this.cursor = this.offset;
    if (this.header(42) !== 1 || this.header(42) !== 2) return undefined;
    const nameLength = this.header(36);
    if (nameLength === NOT_THIS) return undefined;
    const stream = b.subarray(this.cursor, this.cursor + nameLength);
    this.cursor += nameLength + 2;
    const count = this.header(42);
    if (count === NOT_THIS) return undefined;
    const entries: unknown[] = [];
    for (let i = 0; i < count; i++) {
      if (this.header(42) !== 2) return undefined;
      const idLength = this.header(36);
      if (idLength === NOT_THIS) return undefined;
      const id = b.toString('latin1', this.cursor, this.cursor + idLength);
      this.cursor += idLength + 2;
      const length = this.header(42);
      if (length === NOT_THIS) return undefined;
      const fields: Buffer[] = [];
      for (let j = 0; j < length; j++) {
        const n = this.header(36);
        if (n === NOT_THIS) return undefined;
        const at = this.cursor;
        fields.push((j & 1) === 0 ? fieldName(b, at, n) : b.subarray(at, at + n));
        this.cursor = at + n + 2;
      }
      entries.push([id, fields]);
    }
    this.offset = this.cursor;
    return [[stream, entries]];
  }

  /**
   * The length in the header of type `type` (`*` 42, `$` 36) at `cursor`, with `cursor` moved
   * past the header; for a bulk string, only when its bytes and CRLF are all in. Else
   * {@link NOT_THIS}: another type, a null, a length out of range, bytes not all in.
   */
  private header(type: number): number {
    const b = this.buffer;
    let at = this.cursor;
    if (b[at] !== type) return NOT_THIS;
    const first = ++at;
    let n = 0;
    for (let c = b[at]; c !== CR; c = b[at]) {
      if (c === undefined || c < 48 || c > 57 || at - first >= MAX_DIGITS) return NOT_THIS;
      n = n * 10 + c - 48;
      at++;
    }
    if (at === first || b[at + 1] !== LF) return NOT_THIS;
    at += 2;
    if (type === 36) {
      if (n > MAX_BULK_BYTES || at + n + 2 > b.length) return NOT_THIS;
      if (b[at + n] !== CR || b[at + n + 1] !== LF) return NOT_THIS;
    } else if (n > MAX_ARRAY_LENGTH) return NOT_THIS;
    this.cursor = at;
    return n;
  }

  /** The integer of a header line at `offset` (just past its type byte), or undefined if cut. */
  private integer(): number | undefined {
    const b = this.buffer;
    let at = this.offset;
    let negative = false;
    if (b[at] === MINUS) {
      negative = true;
      at++;
    }
    const first = at;
    let n = 0;
    for (;;) {
      const c = b[at];
      if (c === undefined) return undefined;
      if (c === CR) break;
      if (c < 48 || c > 57) throw new RespProtocolError(`byte ${c} in a number`);
      if (at - first >= MAX_DIGITS) throw new RespProtocolError('a number too long');
      n = n * 10 + c - 48;
      at++;
    }
    if (at === first) throw new RespProtocolError('a number without digits');
    if (at + 1 >= b.length) return undefined;
    if (b[at + 1] !== LF) throw new RespProtocolError('CR without LF');
    this.offset = at + 2;
    return negative ? -n : n;
  }
}

/** The field name of `length` bytes at `at`: a shared Buffer for the reader's names, else a view. */
function fieldName(b: Buffer, at: number, length: number): Buffer {
  if (length === 3 || length === 7) {
    // byte by byte: Buffer#equals and #compare are native calls, costly for 3-7 bytes
    for (const name of FIELD_NAMES) {
      if (name.length !== length) continue;
      let i = 0;
      while (i < length && b[at + i] === name[i]) i++;
      if (i === length) return name;
    }
  }
  return b.subarray(at, at + length);
}
