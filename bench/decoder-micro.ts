import { createRequire } from 'node:module';
import { RespReplyParser } from '@redis-stream-coordinator/nestjs/internal';
import { cpuUs } from './support/stats.js';
import { benchPayload } from './workers/payload.js';

/**
 * The smallest reproduction of the ioredis 6 decoder regression (`bench/benchmarks-notes.md`):
 * one `XREADGROUP` reply of `ENTRIES` entries (RESP2 bytes, each entry `key`, `payload` ≈ 90 B of
 * JSON, as the library's publisher writes them) is decoded `ROUNDS` times by
 * - ioredis 6.0.0's decoder (`ioredis/built/resp/decoder.js`, with ioredis' own type mapping:
 *   strings to Buffers),
 * - redis-parser 3.0.0 (the parser of ioredis 5, `returnBuffers: true`, as ioredis 5 runs it),
 * - node-redis 6's decoder (`@redis/client`), with its default mapping (strings) and asked for
 *   Buffers as ioredis asks its own: ioredis 6's decoder is adapted from this source, which uses
 *   native `#private` fields, so the difference isolates the down-levelled field access,
 * - the library's own parser (the shard readers' direct connection), asked for Buffers and for
 *   the one-pass `stream-entries` shape readers use,
 * in rounds that alternate between them, and prints the CPU time per reply and per entry.
 * No Redis needed. `node .tools/bench/decoder-micro.js [ENTRIES=100] [ROUNDS=20000]`.
 */
const require = createRequire(import.meta.url);
const ENTRIES = Number(process.argv[2] ?? 100);
const ROUNDS = Number(process.argv[3] ?? 20_000);

function bulk(s: string): string {
  return `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
}

/** `*1 *2 $key *N (*2 $id *4 $key $k $payload $json)` — one stream's XREADGROUP reply. */
function xreadgroupReply(entries: number): Buffer {
  let out = `*1\r\n*2\r\n${bulk('{rsc}:s:orders:3')}*${entries}\r\n`;
  for (let i = 0; i < entries; i++) {
    out += `*2\r\n${bulk(`1764650000000-${i}`)}*4\r\n${bulk('key')}${bulk(`k-${i % 4096}`)}`;
    out += `${bulk('payload')}${bulk(JSON.stringify(benchPayload(i)))}`;
  }
  return Buffer.from(out);
}

/**
 * A lean RESP2 reader for the shapes an `XREADGROUP` reply has (arrays, bulk strings, nulls),
 * bulk strings as zero-copy `subarray`s, the whole reply in one chunk: a lower bound of what a
 * dedicated reader decoder could cost (not incremental, so not a drop-in parser).
 */
function leanDecode(chunk: Buffer): unknown {
  let at = 0;
  const int = (): number => {
    let n = 0;
    let negative = false;
    if (chunk[at] === 45) {
      negative = true;
      at++;
    }
    for (let c = chunk[at] as number; c !== 13; c = chunk[++at] as number) n = n * 10 + c - 48;
    at += 2;
    return negative ? -n : n;
  };
  const value = (): unknown => {
    const type = chunk[at++];
    const n = int();
    if (type === 36) {
      if (n < 0) return null;
      const out = chunk.subarray(at, at + n);
      at += n + 2;
      return out;
    }
    if (n < 0) return null;
    const out: unknown[] = [];
    for (let i = 0; i < n; i++) out.push(value());
    return out;
  };
  return value();
}

interface Subject {
  readonly name: string;
  decode(chunk: Buffer): void;
}

function subjects(onReply: (reply: unknown) => void): Subject[] {
  const { Decoder: Ioredis6Decoder, RESP_TYPES } = require('ioredis/built/resp/decoder.js') as {
    Decoder: new (config: object) => { write(chunk: Buffer): void };
    RESP_TYPES: Record<string, number>;
  };
  const mapping = {
    [RESP_TYPES.SIMPLE_STRING as number]: Buffer,
    [RESP_TYPES.BLOB_STRING as number]: Buffer,
    [RESP_TYPES.VERBATIM_STRING as number]: Buffer,
    [RESP_TYPES.BIG_NUMBER as number]: String,
    [RESP_TYPES.DOUBLE as number]: Buffer,
    [RESP_TYPES.BOOLEAN as number]: Number,
    [RESP_TYPES.MAP as number]: Array,
    [RESP_TYPES.SET as number]: Array,
  };
  const io6 = new Ioredis6Decoder({
    getTypeMapping: () => mapping,
    onReply,
    onErrorReply: onReply,
    onPush: onReply,
  });
  const RedisParser = require('redis-parser') as new (options: object) => {
    execute(chunk: Buffer): void;
  };
  const io5 = new RedisParser({
    returnBuffers: true,
    returnReply: onReply,
    returnError: onReply,
    returnFatalError: onReply,
  });
  const { Decoder: NodeRedisDecoder, RESP_TYPES: NR_TYPES } =
    require('@redis/client/dist/lib/RESP/decoder.js') as {
      Decoder: new (config: object) => { write(chunk: Buffer): void };
      RESP_TYPES: Record<string, number>;
    };
  // the same decoder source ioredis 6 adapted, with native private fields, asked for Buffers
  // like ioredis does: the difference to ioredis 6 is the down-levelled private-field access
  const nrBuffers = new NodeRedisDecoder({
    getTypeMapping: () => ({ [NR_TYPES.BLOB_STRING as number]: Buffer }),
    onReply,
    onErrorReply: onReply,
    onPush: onReply,
  });
  const nr = new NodeRedisDecoder({
    getTypeMapping: () => ({}),
    onReply,
    onErrorReply: onReply,
    onPush: onReply,
  });
  const oursBuffers = new RespReplyParser(onReply, () => 'buffers');
  const oursEntries = new RespReplyParser(onReply, () => 'stream-entries');
  return [
    { name: 'ioredis 6.0.0 (resp/decoder)', decode: (c) => io6.write(c) },
    { name: 'ioredis 5 (redis-parser 3.0.0)', decode: (c) => io5.execute(c) },
    { name: 'node-redis 6.3.1 (RESP/decoder), strings', decode: (c) => nr.write(c) },
    { name: 'node-redis 6.3.1 (RESP/decoder), Buffers', decode: (c) => nrBuffers.write(c) },
    { name: 'lean XREADGROUP-shape reader (lower bound)', decode: (c) => onReply(leanDecode(c)) },
    { name: 'ours (direct connection), Buffers', decode: (c) => oursBuffers.feed(c) },
    { name: 'ours (direct connection), stream-entries', decode: (c) => oursEntries.feed(c) },
  ];
}

function main(): void {
  const chunk = xreadgroupReply(ENTRIES);
  let replies = 0;
  const all = subjects(() => replies++);
  const spent = new Map<string, number>(all.map((s) => [s.name, 0]));
  // warm-up: every decoder optimised before the clock runs
  for (const s of all) for (let i = 0; i < 2000; i++) s.decode(chunk);
  const slice = 500;
  for (let done = 0; done < ROUNDS; done += slice) {
    for (const s of all) {
      const t0 = cpuUs();
      for (let i = 0; i < slice; i++) s.decode(chunk);
      spent.set(s.name, (spent.get(s.name) ?? 0) + cpuUs() - t0);
    }
  }
  const rounds = Math.ceil(ROUNDS / slice) * slice;
  process.stdout.write(
    `XREADGROUP reply, ${ENTRIES} entries, ${chunk.length} bytes, ${rounds} decodes each (${replies} replies):\n\n`,
  );
  process.stdout.write('| decoder | µs per reply | ns per entry |\n|---|---|---|\n');
  for (const [name, us] of spent)
    process.stdout.write(
      `| ${name} | ${(us / rounds).toFixed(1)} | ${((us / rounds / ENTRIES) * 1000).toFixed(0)} |\n`,
    );
}

main();
