import { connect, createServer, type Server, type Socket } from 'node:net';

/** What a {@link CoordinatorFront} does to the traffic it carries. */
export type FrontMode =
  /** Forwarding (with `responseDelayMs` added to every response chunk). */
  | 'open'
  /** Nothing flows either way; sockets stay open (held bytes flow again on `heal`). */
  | 'black-hole'
  /** Requests reach the coordinator, responses are held (and discarded on `heal`). */
  | 'drop-responses';

/** One proxied connection. */
interface Pipe {
  readonly client: Socket;
  upstream: Socket | null;
  /** Response chunks waiting for their release time (ordered). */
  readonly delayed: Array<{ at: number; chunk: Buffer }>;
  timer: NodeJS.Timeout | undefined;
  /** The replica closed the connection: close the client once the delayed chunks are out. */
  closeAfterFlush: boolean;
}

/**
 * A member's way to the coordinator: a TCP proxy on 127.0.0.1 in front of every coordinator
 * replica, as a load balancer would be. Each new connection goes to the next replica (round
 * robin) that accepts it; a replica that refuses (down, restarting) is skipped. A connection to a
 * replica that dies is reset with it, and the client's next connection reaches a live one.
 *
 * The harness drives faults through it, per member: a black hole (the member is cut off from the
 * coordinator, not from Redis), dropped responses (the coordinator applies a heartbeat, the
 * member never hears back), response latency (ordered), and resets.
 */
export class CoordinatorFront {
  private mode: FrontMode = 'open';
  private delayMs = 0;
  private next = 0;
  private readonly pipes = new Set<Pipe>();
  /** Connections accepted so far. */
  accepted = 0;
  /** Connections forwarded per replica port. */
  readonly forwardedTo = new Map<number, number>();

  private constructor(
    private readonly server: Server,
    /** The port members connect to. */
    readonly port: number,
    private readonly targets: () => readonly number[],
  ) {}

  /** Starts a front for the replicas `targets()` returns (read at every new connection). */
  static start(targets: () => readonly number[]): Promise<CoordinatorFront> {
    let front: CoordinatorFront | undefined;
    const server = createServer((client) => front?.accept(client));
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        if (address === null || typeof address === 'string') {
          reject(new Error('coordinator front: no port'));
          return;
        }
        front = new CoordinatorFront(server, address.port, targets);
        resolve(front);
      });
    });
  }

  /** `http://127.0.0.1:<port>`: the `COORDINATOR_URL` of the member behind it. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The current mode. */
  get currentMode(): FrontMode {
    return this.mode;
  }

  /** Connections open now. */
  get connections(): number {
    return this.pipes.size;
  }

  /** Delay added to every response chunk, in ms (order kept); 0 = none. */
  get responseDelayMs(): number {
    return this.delayMs;
  }

  set responseDelayMs(ms: number) {
    this.delayMs = Math.max(0, ms);
  }

  /** Cuts the member off: nothing flows either way until {@link heal}. */
  blackHole(): void {
    this.mode = 'black-hole';
    for (const pipe of this.pipes) {
      pipe.client.pause();
      pipe.upstream?.pause();
    }
  }

  /** Requests still reach the coordinator; its responses are held until {@link heal} drops them. */
  dropResponses(): void {
    this.mode = 'drop-responses';
    for (const pipe of this.pipes) pipe.upstream?.pause();
  }

  /**
   * Back to forwarding. After a black hole the held bytes flow on (`cut: false`, like a short
   * partition TCP rides out) or every connection is reset (`cut: true`); after dropped responses
   * every connection is always reset, so the held responses are lost.
   */
  heal(options: { cut?: boolean } = {}): void {
    const cut = options.cut === true || this.mode === 'drop-responses';
    this.mode = 'open';
    if (cut) {
      this.cutAll();
      return;
    }
    for (const pipe of this.pipes) {
      if (pipe.upstream === null) continue; // still dialling: `wire` resumes it
      pipe.client.resume();
      pipe.upstream.resume();
    }
  }

  /** Resets every connection (both sides). */
  cutAll(): void {
    for (const pipe of this.pipes) this.teardown(pipe);
  }

  /** Cuts everything and stops listening. */
  close(): Promise<void> {
    this.cutAll();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    this.accepted++;
    const pipe: Pipe = {
      client,
      upstream: null,
      delayed: [],
      timer: undefined,
      closeAfterFlush: false,
    };
    this.pipes.add(pipe);
    client.pause(); // held until an upstream is connected
    client.on('error', () => this.teardown(pipe));
    client.on('close', () => this.teardown(pipe));
    this.dial(pipe, [...this.targets()], 0);
  }

  /** Connects `pipe` to the first replica of `candidates` (from the round-robin start) that accepts. */
  private dial(pipe: Pipe, candidates: number[], tried: number): void {
    if (!this.pipes.has(pipe)) return;
    if (tried >= candidates.length) {
      this.teardown(pipe);
      return;
    }
    const port = candidates[(this.next + tried) % candidates.length] as number;
    const upstream = connect(port, '127.0.0.1');
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      if (!this.pipes.has(pipe)) {
        upstream.destroy();
        return;
      }
      this.next = (this.next + tried + 1) % Math.max(1, candidates.length);
      this.forwardedTo.set(port, (this.forwardedTo.get(port) ?? 0) + 1);
      pipe.upstream = upstream;
      this.wire(pipe, upstream);
    });
    upstream.on('error', () => {
      if (!connected) {
        upstream.destroy();
        this.dial(pipe, candidates, tried + 1);
      } else this.teardown(pipe);
    });
    upstream.on('close', () => {
      if (!connected) return;
      if (pipe.delayed.length > 0) pipe.closeAfterFlush = true;
      else this.teardown(pipe);
    });
  }

  private wire(pipe: Pipe, upstream: Socket): void {
    const { client } = pipe;
    client.on('data', (chunk: Buffer) => {
      if (!upstream.write(chunk)) {
        client.pause();
        upstream.once('drain', () => {
          if (this.mode !== 'black-hole') client.resume();
        });
      }
    });
    upstream.on('data', (chunk: Buffer) => this.respond(pipe, chunk));
    if (this.mode === 'black-hole') upstream.pause();
    else {
      if (this.mode === 'drop-responses') upstream.pause();
      client.resume();
    }
  }

  /** Forwards a response chunk to the client, after `responseDelayMs`, never out of order. */
  private respond(pipe: Pipe, chunk: Buffer): void {
    if (this.delayMs === 0 && pipe.delayed.length === 0) {
      pipe.client.write(chunk);
      return;
    }
    const last = pipe.delayed[pipe.delayed.length - 1];
    const at = Math.max(performance.now() + this.delayMs, last?.at ?? 0);
    pipe.delayed.push({ at, chunk });
    if (pipe.timer === undefined) this.flushLater(pipe);
  }

  private flushLater(pipe: Pipe): void {
    const head = pipe.delayed[0];
    if (head === undefined) {
      pipe.timer = undefined;
      if (pipe.closeAfterFlush) this.teardown(pipe);
      return;
    }
    pipe.timer = setTimeout(
      () => {
        const now = performance.now();
        while (pipe.delayed.length > 0 && (pipe.delayed[0] as { at: number }).at <= now + 1) {
          const { chunk } = pipe.delayed.shift() as { chunk: Buffer };
          if (!pipe.client.destroyed) pipe.client.write(chunk);
        }
        this.flushLater(pipe);
      },
      Math.max(0, head.at - performance.now()),
    );
  }

  private teardown(pipe: Pipe): void {
    if (!this.pipes.delete(pipe)) return;
    clearTimeout(pipe.timer);
    pipe.delayed.length = 0;
    pipe.client.destroy();
    pipe.upstream?.destroy();
  }
}
