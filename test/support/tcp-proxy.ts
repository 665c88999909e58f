import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A controllable TCP proxy for fault injection (127.0.0.1, random port):
 * - `pause()` — a black hole: bytes stop flowing both ways but no socket is closed (each side
 *   still looks connected; what was sent is held, as TCP retransmission would, and delivered on
 *   `resume()`). New connections are accepted and held the same way.
 * - `resume()` — forwarding again.
 * - `cutAll()` — destroys every proxied connection (both sides), like a reset.
 * - `cutOnNextRequest()` — the next bytes a client sends are not forwarded: their connection is
 *   destroyed instead (a reset while that command is in flight, its reply never arriving).
 * - `cutReplyTo(match)` — the next request `match` accepts is forwarded, and its connection is
 *   destroyed when the reply comes back, instead of forwarding it (a reset after Redis ran the
 *   command, its reply lost).
 * - `close()` — cuts everything and stops listening.
 * - `latencyMs` — one-way delay added to every chunk (order kept), to emulate a network.
 */
export class TcpProxy {
  private paused = false;
  /** Connections accepted so far. */
  accepted = 0;
  /** One-way delay added to every chunk, in ms (0 = forward at once). */
  latencyMs = 0;
  private readonly pairs = new Set<[Socket, Socket]>();
  private cutPending = false;
  private cutReplyMatch: ((request: Buffer) => boolean) | undefined;

  private constructor(
    private readonly server: Server,
    /** The port clients connect to. */
    readonly port: number,
  ) {}

  /** Starts a proxy to `targetHost:targetPort`, listening on `listenPort` (0 = any free port). */
  static start(targetPort: number, targetHost = '127.0.0.1', listenPort = 0): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const server = createServer((client) => proxy?.accept(client, targetPort, targetHost));
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(listenPort, '127.0.0.1', () => {
        const address = server.address();
        if (address === null || typeof address === 'string') {
          reject(new Error('tcp proxy: no port'));
          return;
        }
        proxy = new TcpProxy(server, address.port);
        resolve(proxy);
      });
    });
  }

  /** Proxied connections currently open. */
  get connections(): number {
    return this.pairs.size;
  }

  /** `redis://127.0.0.1:<port>` */
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  pause(): void {
    this.paused = true;
    for (const [client, upstream] of this.pairs) {
      client.pause();
      upstream.pause();
    }
  }

  resume(): void {
    this.paused = false;
    for (const [client, upstream] of this.pairs) {
      client.resume();
      upstream.resume();
    }
  }

  cutAll(): void {
    for (const [client, upstream] of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  /** Resets the connection that sends the next request, instead of forwarding that request. */
  cutOnNextRequest(): void {
    this.cutPending = true;
  }

  /** Forwards the next request `match` accepts, then resets its connection instead of replying. */
  cutReplyTo(match: (request: Buffer) => boolean): void {
    this.cutReplyMatch = match;
  }

  close(): Promise<void> {
    this.cutAll();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, targetPort: number, targetHost: string): void {
    this.accepted++;
    const upstream = connect(targetPort, targetHost);
    const pair: [Socket, Socket] = [client, upstream];
    this.pairs.add(pair);
    let cutOnReply = false;
    const teardown = (): void => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      from.on('data', (chunk: Buffer) => {
        if (from === client && this.cutPending) {
          this.cutPending = false;
          teardown();
          return;
        }
        if (from === client && this.cutReplyMatch?.(chunk) === true) {
          this.cutReplyMatch = undefined;
          cutOnReply = true;
        } else if (from === upstream && cutOnReply) {
          teardown();
          return;
        }
        if (this.latencyMs > 0) {
          setTimeout(() => to.write(chunk), this.latencyMs);
          return;
        }
        if (!to.write(chunk)) {
          from.pause();
          to.once('drain', () => {
            if (!this.paused) from.resume();
          });
        }
      });
      from.on('error', teardown);
      from.on('close', teardown);
    }
    if (this.paused) {
      client.pause();
      upstream.pause();
    }
  }
}

/** Starts a {@link TcpProxy} to `targetPort` on 127.0.0.1. */
export function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  return TcpProxy.start(targetPort, targetHost);
}
