import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { DirectConnectionClosedError } from '../../errors/redis/direct-connection-closed.error.js';
import { RedisHandshakeError } from '../../errors/redis/redis-handshake.error.js';
import { RedisReplyError } from '../../errors/redis/redis-reply.error.js';
import { RespProtocolError } from '../../errors/redis/resp-protocol.error.js';
import type { LuaScript } from '../lua-script.types.js';
import type { DirectReaderEndpoint } from './direct-reader-endpoint.js';
import { type CommandArgument, encodeCommand } from './resp-command.js';
import { handshakeSteps } from './direct-handshake.js';
import { type ReplyShape, RespReplyParser } from './resp-reply-parser.js';

/** Answered slots of the waiting list are dropped once this many have piled up at its head. */
const COMPACT_AT = 1024;
/** How long an ended socket may take to close before it is destroyed (ioredis's default). */
const DISCONNECT_TIMEOUT_MS = 2000;

/** A command sent and not answered yet. */
interface Waiting {
  readonly resolve: (reply: unknown) => void;
  readonly reject: (error: Error) => void;
  /** How the reply's bulk strings are given. */
  readonly shape: ReplyShape;
}

/**
 * `connecting` until the handshake (`AUTH`, `SELECT`, `CLIENT SETNAME`) was answered, `ready`
 * then, `end` once the socket is gone (for good: a direct connection never reconnects).
 */
export type DirectReaderStatus = 'connecting' | 'ready' | 'end';

/**
 * A shard reader's dedicated connection to one standalone Redis (module option `readerClient:
 * 'direct'`, the default): one socket (TCP, TLS or Unix), RESP2, the handful of commands a reader
 * sends (`XREADGROUP`, the data-plane scripts through `EVALSHA`/`EVAL`, `XADD` to a dead-letter
 * stream), replies parsed by {@link RespReplyParser}.
 *
 * It has the parts of an ioredis client the data plane uses, with the same names and reply
 * shapes (`status`, `stream`, `xreadgroupBuffer`, `xadd`, `quit`, `disconnect`; events `ready`,
 * `error`, `close`, `end`; but an `XREADGROUP` reply may give entry ids as strings), scripts
 * through {@link evalScript} (`runScript` picks it), and the behaviour the reader asks ioredis
 * for (`maxRetriesPerRequest: 1`, `autoResendUnfulfilledCommands: false`) by construction: it
 * never reconnects and never resends. When its socket closes every command in flight fails with
 * {@link DirectConnectionClosedError} (naming the socket error or refused handshake, when there
 * was one), its status becomes `end`, and the reader opens a new one for its next call. Commands
 * sent before the handshake was answered wait for it and are then written in the order they
 * were sent; if the handshake fails they fail with the connection.
 *
 * Why not ioredis for readers: measured in one run, a fresh member drained 0.80–0.85× the raw
 * loop of the fastest mainstream client with readers on ioredis 5, and 0.96–1.04× with this
 * connection (bench/benchmarks-notes.md, "Readers on a direct connection").
 */
export class DirectReaderClient extends EventEmitter {
  status: DirectReaderStatus = 'connecting';
  /** The socket (the shard reader corks it around one turn's commands). */
  readonly stream: Socket;
  /** Commands written and not answered yet, oldest at `head` (consumed slots cleared). */
  private waiting: Array<Waiting | undefined> = [];
  private head = 0;
  private readonly parser: RespReplyParser;
  /** Commands sent before the handshake was answered, in order. */
  private readonly offline: Array<{ args: readonly CommandArgument[]; waiting: Waiting }> = [];
  /** Handshake replies still to come. */
  private handshakeLeft = 0;
  /** The SHA1 of each script sent on this connection (by `EVAL` first: see `evalScript`). */
  private readonly sent = new Map<LuaScript, string>();
  /** `disconnect()` was called: nothing more is sent; the socket's `close` ends the rest. */
  private closing = false;
  /** Why the connection is going away (a socket error, a refused handshake), if known. */
  private failure: Error | undefined;

  constructor(private readonly endpoint: DirectReaderEndpoint) {
    super();
    this.parser = new RespReplyParser(
      (reply) => this.onReply(reply),
      () => this.waiting[this.head]?.shape ?? 'text',
    );
    const { socket: where, tls } = endpoint;
    const socket = tls === undefined ? netConnect(where) : tlsConnect({ ...where, ...tls });
    this.stream = socket;
    // listeners first: nothing below may leave a socket without them
    socket.on('error', (error) => {
      this.failure ??= error;
      this.emit('error', error);
    });
    socket.on('close', () => this.closed());
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    try {
      socket.setNoDelay(endpoint.noDelay);
      if (endpoint.keepAliveMs > 0) socket.setKeepAlive(true, endpoint.keepAliveMs);
      if (endpoint.connectTimeoutMs > 0) {
        const connected = tls === undefined ? 'connect' : 'secureConnect';
        const onTimeout = (): void => {
          socket.destroy(new Error(`connect ETIMEDOUT (${endpoint.connectTimeoutMs} ms)`));
        };
        socket.setTimeout(endpoint.connectTimeoutMs, onTimeout);
        socket.once(connected, () => {
          socket.setTimeout(0);
          socket.off('timeout', onTimeout);
        });
      }
      this.handshake();
    } catch (error) {
      socket.destroy();
      throw error;
    }
  }

  /**
   * `XREADGROUP …`, bulk strings as Buffers (ioredis `xreadgroupBuffer`), except that entry ids
   * may come as strings and the field names `key`, `payload` and `headers` as shared Buffers (the
   * parser's `stream-entries` shape: don't modify them).
   */
  xreadgroupBuffer(...args: CommandArgument[]): Promise<unknown> {
    return this.send(['XREADGROUP', ...args], 'stream-entries');
  }

  /** `XADD …` (ioredis `xadd`). */
  xadd(...args: CommandArgument[]): Promise<unknown> {
    return this.send(['XADD', ...args], 'text');
  }

  /** `QUIT`: Redis answers and closes the connection. */
  quit(): Promise<unknown> {
    return this.send(['QUIT'], 'text');
  }

  /**
   * Closes the connection, as ioredis does: a ready socket is ended (replies Redis already sent
   * still reach their commands) and destroyed if it has not closed within
   * {@link DISCONNECT_TIMEOUT_MS}; a socket still connecting is destroyed. What follows comes when
   * the socket has closed, not within this call: the commands still waiting fail with
   * {@link DirectConnectionClosedError}, the status becomes `end`, `close` and `end` are emitted.
   * Commands sent in between fail at once.
   */
  disconnect(): void {
    if (this.closing || this.status === 'end') return;
    this.closing = true;
    const socket = this.stream;
    if (this.status !== 'ready') {
      socket.destroy();
      return;
    }
    const timer = setTimeout(() => socket.destroy(), DISCONNECT_TIMEOUT_MS);
    socket.once('close', () => clearTimeout(timer));
    socket.end();
  }

  /** Why the connection went (or is going) away: a socket error or a refused handshake. */
  get closeReason(): Error | undefined {
    return this.failure;
  }

  /**
   * Runs `script` (its first `script.numberOfKeys` arguments are keys) as ioredis
   * `defineCommand` does: by `EVAL` the first time on this connection, which also caches it in
   * Redis, by `EVALSHA` after that, and by `EVAL` again if Redis lost it (`NOSCRIPT`). `EVAL`
   * first keeps a script in front of a read corked behind it: an `EVALSHA` refused with
   * `NOSCRIPT` would be sent again only after that read.
   */
  async evalScript(
    script: LuaScript,
    args: readonly CommandArgument[],
    buffers: boolean,
  ): Promise<unknown> {
    const shape: ReplyShape = buffers ? 'buffers' : 'text';
    const sha = this.sent.get(script);
    if (sha === undefined) {
      // SHA1 is what EVALSHA names a script by (not a security use)
      this.sent.set(script, createHash('sha1').update(script.lua).digest('hex'));
      try {
        return await this.send(['EVAL', script.lua, script.numberOfKeys, ...args], shape);
      } catch (error) {
        // it may have been refused before Redis cached it (BUSY, OOM, NOPERM, a closed socket):
        // send it whole again next time rather than EVALSHA into a NOSCRIPT behind a read
        this.sent.delete(script);
        throw error;
      }
    }
    try {
      return await this.send(['EVALSHA', sha, script.numberOfKeys, ...args], shape);
    } catch (error) {
      if (!(error instanceof RedisReplyError) || error.code !== 'NOSCRIPT') throw error;
      return this.send(['EVAL', script.lua, script.numberOfKeys, ...args], shape);
    }
  }

  /**
   * Sends `args` as one command; resolves to its reply, rejects with its error reply. Before the
   * handshake was answered the command waits (it must not run as another user, or in another
   * database, should the handshake fail).
   */
  send(args: readonly CommandArgument[], shape: ReplyShape): Promise<unknown> {
    if (this.status === 'end' || this.closing) {
      return Promise.reject(new DirectConnectionClosedError(this.failure));
    }
    return new Promise((resolve, reject) => {
      const waiting: Waiting = { resolve, reject, shape };
      if (this.status === 'ready') this.write(args, waiting);
      else this.offline.push({ args, waiting });
    });
  }

  private write(args: readonly CommandArgument[], waiting: Waiting): void {
    // encoded first: a command that cannot be encoded must not leave a waiter behind, or every
    // later reply would go to the command before it
    let encoded: string | Buffer;
    try {
      encoded = encodeCommand(args);
    } catch (error) {
      waiting.reject(error as Error);
      return;
    }
    this.waiting.push(waiting);
    this.stream.write(encoded);
  }

  /** The handshake's commands first (see `handshakeSteps`); `ready` once all are answered. */
  private handshake(): void {
    const steps = handshakeSteps(this.endpoint);
    if (steps.length === 0) {
      this.stream.once(this.endpoint.tls === undefined ? 'connect' : 'secureConnect', () =>
        this.becomeReady(),
      );
      return;
    }
    this.handshakeLeft = steps.length;
    const answered = (): void => {
      if (--this.handshakeLeft === 0) this.becomeReady();
    };
    for (const step of steps) {
      this.write(step.args, {
        shape: 'text',
        resolve: answered,
        reject: (error) => {
          if (this.status === 'end' || this.closing) return;
          if (step.failure(error.message) === 'ignore') return answered();
          const refused = new RedisHandshakeError(step.what, error.message);
          this.failure = refused;
          this.emit('error', refused);
          this.disconnect();
        },
      });
    }
  }

  private becomeReady(): void {
    if (this.status !== 'connecting' || this.closing) return;
    this.status = 'ready';
    for (const { args, waiting } of this.offline.splice(0)) this.write(args, waiting);
    this.emit('ready');
  }

  private onData(chunk: Buffer): void {
    try {
      this.parser.feed(chunk);
    } catch (error) {
      // (the parser keeps nothing of a stream it could not read)
      this.parser.reset();
      this.failure = error as Error;
      this.closing = true;
      this.stream.destroy();
      this.emit('error', error);
    }
  }

  private onReply(reply: unknown): void {
    const waiting = this.waiting[this.head];
    if (waiting === undefined) throw new RespProtocolError('a reply no command waited for');
    this.waiting[this.head] = undefined;
    this.head++;
    if (this.head === this.waiting.length) {
      this.waiting.length = 0;
      this.head = 0;
    } else if (this.head >= COMPACT_AT) {
      // replies keep coming while commands are in flight: drop the answered slots now and then
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
    if (reply instanceof RedisReplyError) waiting.reject(reply);
    else waiting.resolve(reply);
  }

  private closed(): void {
    if (this.status === 'end') return;
    this.status = 'end';
    this.parser.reset();
    const left = [
      ...this.waiting.slice(this.head),
      ...this.offline.splice(0).map((o) => o.waiting),
    ];
    this.waiting = [];
    this.head = 0;
    for (const waiting of left) waiting?.reject(new DirectConnectionClosedError(this.failure));
    this.emit('close');
    this.emit('end');
  }
}
