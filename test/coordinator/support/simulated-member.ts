import type {
  HeartbeatRequest,
  HeartbeatResponse,
} from '@redis-stream-coordinator/nestjs/protocol';
import type { OwnershipMonitor } from './ownership-monitor.js';
import { fromWire, type ShardRef, setKey, toWire } from './shard-set.js';

/** Options of a {@link SimulatedMember}. */
export interface SimulatedMemberOptions {
  readonly groupId: string;
  readonly memberId: string;
  readonly streams: readonly string[];
  /** Picks the coordinator base URL for each request (e.g. a random replica). */
  readonly endpoint: () => string;
  readonly token: string;
  /** Sent on every full request. Default 10 000. */
  readonly rebalanceTimeoutMs?: number;
  /** Heartbeat at least this often (the member uses the smaller of this and the coordinator's interval). */
  readonly maxIntervalMs?: number;
  /** Spread each wait by up to this fraction at random (0..1). Default 0. */
  readonly jitter?: number;
  /** How long revoked shards stay held (handler drain) before the release is reported. Default 0. */
  readonly revokeDelayMs?: number | (() => number);
  /** Client-side request timeout. Default 2 000. */
  readonly requestTimeoutMs?: number;
  /** Self-fence this long before the announced session timeout runs out. Default 25% of it. */
  readonly selfFenceMarginMs?: number;
  readonly assignor?: string;
  /** Receives every change of what this member holds. */
  readonly monitor?: OwnershipMonitor;
  /** Awaited after every adopted assignment, before the next request (e.g. to check fences). */
  readonly afterAdopt?: (member: SimulatedMember, held: ReadonlySet<ShardRef>) => Promise<void>;
}

/** Counters of what the member went through. */
export interface MemberCounts {
  ok: number;
  fenced: number;
  unknown: number;
  unavailable: number;
  connectionErrors: number;
  timeouts: number;
  selfFenced: number;
  joins: number;
}

type Phase = 'idle' | 'running' | 'leaving' | 'left' | 'crashed';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A small model of a KIP-848 member for end-to-end tests: heartbeats at the interval the
 * coordinator gives (or faster), keeps its epoch, adopts every assignment it is sent, holds the
 * shards it must revoke for `revokeDelayMs` and then reports them released (`ownedShards`),
 * rejoins with epoch 0 on FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID, sends a full request after any
 * error or timeout, retries on 503 and connection errors, and self-fences (drops everything)
 * before the announced session timeout runs out without a successful heartbeat.
 *
 * "Held" = the assignment from the latest adopted response plus shards still draining: what the
 * member may process in its own view. Every change goes to the {@link OwnershipMonitor}.
 */
export class SimulatedMember {
  readonly memberId: string;
  readonly counts: MemberCounts = {
    ok: 0,
    fenced: 0,
    unknown: 0,
    unavailable: 0,
    connectionErrors: 0,
    timeouts: 0,
    selfFenced: 0,
    joins: 0,
  };
  /** Every `memberEpoch` of a successful non-leave response, in order. */
  readonly epochs: number[] = [];
  /** Responses that are not part of the protocol's expected outcomes (5xx other than 503, 4xx). */
  readonly unexpected: string[] = [];
  /** Violations of the member-side rules (epoch going back, a response breaking the contract). */
  readonly violations: string[] = [];

  private phase: Phase = 'idle';
  private epoch = 0;
  private assignment = new Set<ShardRef>();
  private draining = new Set<ShardRef>();
  private needFull = true;
  private lastOwnedSent: string | null = null;
  private intervalMs = 1000;
  private sessionTimeoutMs = Number.POSITIVE_INFINITY;
  private lastSuccessSentAt = Date.now();
  private paused = false;
  private wake: (() => void) | null = null;
  /** A nudge (or a release to report) arrived while no wait was under way: skip the next wait. */
  private soon = false;
  private loop: Promise<void> | null = null;
  private guard: NodeJS.Timeout | null = null;
  private leaveAckedAt: number | null = null;

  constructor(private readonly options: SimulatedMemberOptions) {
    this.memberId = options.memberId;
  }

  /** The epoch the member holds now. */
  get memberEpoch(): number {
    return this.epoch;
  }

  /** What the member holds now (assignment ∪ draining). */
  get held(): ReadonlySet<ShardRef> {
    return new Set([...this.assignment, ...this.draining]);
  }

  /** The assignment of the latest adopted response. */
  get assigned(): ReadonlySet<ShardRef> {
    return new Set(this.assignment);
  }

  /** True while the heartbeat loop runs. */
  get running(): boolean {
    return this.phase === 'running';
  }

  /** When the last leave was acknowledged (`Date.now()`), or `null`. */
  get leftAt(): number | null {
    return this.leaveAckedAt;
  }

  /** Starts (or, after a leave or crash, restarts) heartbeating with a join (epoch 0). */
  start(): void {
    if (this.phase === 'running') return;
    this.epoch = 0;
    this.needFull = true;
    this.phase = 'running';
    this.publish();
    this.lastSuccessSentAt = Date.now();
    this.guard ??= setInterval(() => this.checkSelfFence(), 20);
    this.loop = this.run();
  }

  /** Heartbeat now instead of at the next interval (a nudge). */
  nudge(): void {
    this.requestSoon();
  }

  private requestSoon(): void {
    if (this.wake) this.wake();
    else this.soon = true;
  }

  /** Stops sending (as if cut off from the coordinator) until {@link resume}; self-fencing still runs. */
  pause(): void {
    this.paused = true;
  }

  /** Resumes after {@link pause}. */
  resume(): void {
    this.paused = false;
    this.wake?.();
  }

  /** Leaves the group (`-1`): stops, drops every shard, then sends the leave until acknowledged. */
  async leave(): Promise<void> {
    if (this.phase !== 'running') return;
    this.phase = 'leaving';
    this.wake?.();
    await this.loop;
    this.dropAll();
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        const res = await this.post({ memberId: this.memberId, memberEpoch: -1 });
        if (res.status === 200 || (res.status === 409 && res.code === 'UNKNOWN_MEMBER_ID')) {
          this.leaveAckedAt = Date.now();
          this.phase = 'left';
          this.publish();
          return;
        }
        if (res.status !== 503) {
          this.unexpected.push(`leave → ${res.status} ${res.text}`);
          break;
        }
      } catch {
        this.counts.connectionErrors++;
      }
      await sleep(50);
    }
    this.phase = 'left';
    this.publish();
    this.violations.push(`${this.memberId}: leave was never acknowledged`);
  }

  /** Stops at once, without leaving (a crash): the member holds nothing any more. */
  async crash(): Promise<void> {
    if (this.phase === 'running') this.phase = 'crashed';
    this.wake?.();
    await this.loop;
    this.dropAll();
  }

  /** Stops every timer (end of test). */
  async dispose(): Promise<void> {
    if (this.phase === 'running') await this.crash();
    if (this.guard) clearInterval(this.guard);
    this.guard = null;
  }

  private async run(): Promise<void> {
    while (this.phase === 'running') {
      if (this.paused) {
        await this.waitFor(1000);
        continue;
      }
      await this.heartbeatOnce();
      if (this.phase !== 'running') break;
      const base = Math.min(
        this.intervalMs,
        this.options.maxIntervalMs ?? Number.POSITIVE_INFINITY,
      );
      const jitter = this.options.jitter ?? 0;
      await this.waitFor(base * (1 - jitter * Math.random()));
    }
  }

  private waitFor(ms: number): Promise<void> {
    if (this.soon && !this.paused) {
      this.soon = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        if (this.wake === done) this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  private async heartbeatOnce(): Promise<void> {
    this.checkSelfFence();
    const full = this.epoch === 0 || this.needFull;
    const held = this.held;
    const ownedKey = setKey(held);
    const req: HeartbeatRequest = { memberId: this.memberId, memberEpoch: this.epoch };
    if (full) {
      if (this.epoch === 0 && held.size > 0) {
        this.violations.push(`${this.memberId}: would join with epoch 0 while holding ${ownedKey}`);
      }
      req.rebalanceTimeoutMs = this.options.rebalanceTimeoutMs ?? 10_000;
      req.subscribedStreams = [...this.options.streams];
      req.ownedShards = toWire(held);
      if (this.options.assignor !== undefined) req.assignor = this.options.assignor;
    } else if (ownedKey !== this.lastOwnedSent) {
      req.ownedShards = toWire(held);
    }
    if (req.memberEpoch === 0) this.counts.joins++;
    const sentAt = Date.now();
    let res: Awaited<ReturnType<SimulatedMember['post']>>;
    try {
      res = await this.post(req);
    } catch (error) {
      if (error instanceof Error && error.name === 'TimeoutError') this.counts.timeouts++;
      else this.counts.connectionErrors++;
      this.needFull = true;
      await sleep(20 + Math.random() * 30);
      return;
    }
    if (this.phase !== 'running' && this.phase !== 'leaving') return;
    if (res.status === 200) {
      this.counts.ok++;
      const body = res.json as HeartbeatResponse;
      this.onSuccess(req, body, sentAt);
      if (body.assignment) await this.adopt(fromWire(body.assignment.shards));
      return;
    }
    if (
      res.status === 409 &&
      (res.code === 'FENCED_MEMBER_EPOCH' || res.code === 'UNKNOWN_MEMBER_ID')
    ) {
      if (res.code === 'FENCED_MEMBER_EPOCH') this.counts.fenced++;
      else this.counts.unknown++;
      this.dropAll();
      this.epoch = 0;
      this.needFull = true;
      return;
    }
    this.needFull = true;
    if (res.status === 503) {
      this.counts.unavailable++;
      await sleep(20 + Math.random() * 30);
      return;
    }
    this.unexpected.push(
      `${this.memberId}: heartbeat ${JSON.stringify(req)} → ${res.status} ${res.text}`,
    );
    await sleep(50);
  }

  private onSuccess(req: HeartbeatRequest, body: HeartbeatResponse, sentAt: number): void {
    const last = this.epochs.at(-1);
    if (last !== undefined && body.memberEpoch < last) {
      this.violations.push(`${this.memberId}: epoch went back from ${last} to ${body.memberEpoch}`);
    }
    if (req.memberEpoch === 0 && body.assignment === undefined) {
      this.violations.push(`${this.memberId}: a join response without assignment`);
    }
    this.epochs.push(body.memberEpoch);
    this.epoch = body.memberEpoch;
    this.intervalMs = body.heartbeatIntervalMs;
    this.sessionTimeoutMs = body.sessionTimeoutMs;
    this.lastSuccessSentAt = Math.max(this.lastSuccessSentAt, sentAt);
    this.needFull = false;
    if (req.ownedShards !== undefined) this.lastOwnedSent = setKey(fromWire(req.ownedShards));
  }

  private async adopt(next: Set<ShardRef>): Promise<void> {
    const revoked = [...this.held].filter((ref) => !next.has(ref));
    this.assignment = next;
    for (const ref of next) this.draining.delete(ref);
    const delay = this.revokeDelay();
    if (revoked.length > 0 && delay > 0) {
      for (const ref of revoked) this.draining.add(ref);
      setTimeout(() => {
        let released = false;
        for (const ref of revoked) {
          if (this.draining.delete(ref)) released = true;
        }
        if (released) {
          this.publish();
          this.requestSoon();
        }
      }, delay).unref();
    }
    this.publish();
    // A release is reported in a heartbeat sent at once.
    if (revoked.length > 0 && delay <= 0) this.requestSoon();
    await this.options.afterAdopt?.(this, this.held);
  }

  private revokeDelay(): number {
    const d = this.options.revokeDelayMs ?? 0;
    return typeof d === 'function' ? d() : d;
  }

  private checkSelfFence(): void {
    if (this.assignment.size + this.draining.size === 0) return;
    const margin = this.options.selfFenceMarginMs ?? this.sessionTimeoutMs * 0.25;
    if (Date.now() - this.lastSuccessSentAt >= this.sessionTimeoutMs - margin) {
      this.counts.selfFenced++;
      this.dropAll();
      this.needFull = true;
    }
  }

  private dropAll(): void {
    this.assignment = new Set();
    this.draining = new Set();
    this.publish();
  }

  private publish(): void {
    this.options.monitor?.update(this.memberId, this.held, this.phase === 'left');
  }

  private async post(
    req: HeartbeatRequest,
  ): Promise<{ status: number; code: string | null; json: unknown; text: string }> {
    const res = await fetch(
      `${this.options.endpoint()}/v1/groups/${encodeURIComponent(this.options.groupId)}/heartbeat`,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${this.options.token}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify(req),
        signal: AbortSignal.timeout(this.options.requestTimeoutMs ?? 2000),
      },
    );
    const text = await res.text();
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON
    }
    const code = (json as { error?: { code?: string } } | null)?.error?.code ?? null;
    return { status: res.status, code, json, text };
  }
}
