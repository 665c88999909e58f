import {
  type BeforeApplicationShutdown,
  Injectable,
  type OnApplicationBootstrap,
  Optional,
} from '@nestjs/common';
import { InjectStreamCoordinatorOptions } from '../decorators/inject-stream-coordinator-options.decorator.js';
import { StreamHandlerRegistry } from '../discovery/stream-handler.registry.js';
import { randomUUID } from 'node:crypto';
import { CoordinatorRequestError } from '../errors/runtime/coordinator-request.error.js';
import { MemberIdInUseError } from '../errors/runtime/member-id-in-use.error.js';
import type { ResolvedStreamCoordinatorOptions } from '../interfaces/resolved-stream-coordinator-options.interface.js';
import { ShutdownDrain } from './shutdown-drain.module.js';
import { KeySpace, prefixOfKey, type HeartbeatResponse } from '../protocol/index.js';
import type { RedisConnection } from '../redis/redis-connection.types.js';
import { QUIT_TIMEOUT_MS } from '../redis/close-connection.js';
import { CoordinatorClient } from './coordinator-client.js';
import { classifyFailure, Membership, type GrantedShard } from './membership.js';
import { MemberRuntimeEvents } from './member-runtime-events.js';
import { heartbeatRetryDelay, memberIdRetryDelay } from './retry-delays.js';
import { ShardReaderPool } from './shard-reader-pool.js';
import { StreamCoordinatorConnections } from './stream-coordinator-connections.js';

/** Where the member is in its life. */
export type MemberPhase =
  'idle' | 'joining' | 'active' | 'self-fenced' | 'failing' | 'leaving' | 'stopped';

/** A snapshot of the runtime for health checks and metrics. */
export interface MemberRuntimeStatus {
  readonly phase: MemberPhase;
  readonly memberId: string | null;
  readonly memberEpoch: number;
  readonly group: string;
  /** Shards the coordinator lets this member process. */
  readonly assigned: readonly GrantedShard[];
  /** Shards with a reader (running or settling). */
  readonly held: readonly GrantedShard[];
  /** Monotonic ms (performance.now) when the last heartbeat that succeeded was sent; null before. */
  readonly lastHeartbeatOkAt: number | null;
  readonly heartbeatIntervalMs: number | null;
  readonly sessionTimeoutMs: number | null;
  /** The last heartbeat failure, if the latest attempt failed. */
  readonly lastError: string | null;
}

/** Longest the join waits for the nudge subscription (fast hand-off) before it goes ahead. */
const NUDGE_SUBSCRIBE_WAIT_MS = 2000;

/** Share of the session timeout kept in hand when self-fencing (stop before it runs out). */
const SELF_FENCE_MARGIN = 0.25;

/**
 * The member side of the protocol for one application: joins the group once every provider is
 * initialised, heartbeats at the interval the coordinator gives (at once after reconciling, after
 * an error, or when nudged), runs one ordered reader per owned shard, revokes before it reports a
 * release, drops everything and rejoins when fenced, stops all its shards on its own before the
 * announced session timeout runs out when the coordinator cannot be reached (self-fencing), and
 * on shutdown drains, leaves, then lets the connections close.
 */
@Injectable()
export class MemberRuntime implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private membership: Membership | null = null;
  private pool: ShardReaderPool | null = null;
  private readonly client: CoordinatorClient;
  private phase: MemberPhase = 'idle';
  private timer: NodeJS.Timeout | undefined;
  private fenceTimer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | null = null;
  private again = false;
  private failures = 0;
  private lastOkAt: number | null = null;
  private lastError: string | null = null;
  private subscriber: RedisConnection | null = null;
  private nudgeChannel: string | null = null;
  private leaving = false;
  /** Set by the module: the start waits for the application's last bootstrap hook. */
  private readonly gated: boolean;
  /** The start sequence, once begun (member id, nudge subscription, first heartbeat). */
  private startRun: Promise<void> | null = null;
  /** The shutdown sequence, once started (drain, then leave). */
  private shutdownRun: Promise<void> | null = null;
  /**
   * Set when the membership was dropped (fenced, removed, self-fenced) while handlers still ran:
   * settles once they all did, bounded by the rebalance timeout. The next join waits for it, so
   * the coordinator never frees a shard a handler of this member still works on.
   */
  private settling: Promise<void> | null = null;
  /**
   * Bumped by every local reset of the membership (self-fencing): a heartbeat answer to a
   * request sent before the reset describes the state before it and must not be applied.
   */
  private generation = 0;

  constructor(
    @InjectStreamCoordinatorOptions() private readonly options: ResolvedStreamCoordinatorOptions,
    private readonly registry: StreamHandlerRegistry,
    private readonly connections: StreamCoordinatorConnections,
    readonly events: MemberRuntimeEvents,
    @Optional() drain?: ShutdownDrain,
  ) {
    this.client = new CoordinatorClient({
      baseUrl: options.coordinatorUrl,
      token: options.token,
      requestTimeoutMs: options.requestTimeoutMs,
    });
    // Drain in the application's first teardown hook, while the user's providers are alive;
    // start in its last start-up hook, once every provider's onApplicationBootstrap completed.
    drain?.register(() => this.shutdown());
    drain?.registerStart(() => this.begin());
    this.gated = drain !== undefined;
  }

  /** Whether this application takes part in a group (false: publish-only). */
  get isMember(): boolean {
    return !this.registry.isPublishOnly();
  }

  /** A snapshot for health checks and metrics. */
  status(): MemberRuntimeStatus {
    const m = this.membership;
    return {
      phase: this.phase,
      memberId: m?.memberId ?? null,
      memberEpoch: m?.memberEpoch ?? 0,
      group: this.options.group,
      assigned: m ? [...m.assignment().values()] : [],
      held: this.pool?.held() ?? [],
      lastHeartbeatOkAt: this.lastOkAt,
      heartbeatIntervalMs: m?.heartbeatIntervalMs ?? null,
      sessionTimeoutMs: m?.sessionTimeoutMs ?? null,
      lastError: this.lastError,
    };
  }

  /** The readers, for health checks (stalled reads) and metrics. */
  readers(): ReturnType<ShardReaderPool['readers']> {
    return this.pool?.readers() ?? [];
  }

  /**
   * In a module app the start waits for the application's last start-up hook (see
   * `ShutdownDrain`), so handlers never run before another module's `onApplicationBootstrap`
   * opened what they use; without it it starts here. (The microservice transport calls
   * `begin()` itself, through its drain's start tasks when the application imports one.)
   */
  async onApplicationBootstrap(): Promise<void> {
    if (!this.gated) this.begin();
  }

  /** Starts joining the group (once; not after the shutdown began). */
  begin(): void {
    if (!this.isMember || this.startRun !== null || this.shutdownRun !== null) return;
    this.phase = 'joining';
    this.startRun = this.start().catch((error: unknown) => {
      this.lastError = `start failed: ${String(error)}`;
      this.options.logger.error(this.lastError);
    });
  }

  /** Whether the shutdown began: a start still under way stops at its next step. */
  private get stopping(): boolean {
    return this.leaving || this.shutdownRun !== null;
  }

  private async start(): Promise<void> {
    const memberId = await this.resolveMemberId();
    if (memberId === null || this.stopping) return;
    const o = this.options;
    this.membership = new Membership({
      memberId,
      subscribedStreams: this.registry.streams(),
      rebalanceTimeoutMs: o.rebalanceTimeoutMs,
      // Only for an id the application chose (option or factory): the default id is unique per
      // process (it holds the pid), and the same default id again is a restarted container of
      // the same pod, which must rejoin at once rather than wait for its old session to expire.
      ...(this.chosenMemberId() ? { runId: randomUUID() } : {}),
      ...(o.instanceId !== undefined ? { instanceId: o.instanceId } : {}),
      ...(o.rackId !== undefined ? { rackId: o.rackId } : {}),
      ...(o.assignor !== undefined ? { assignor: o.assignor } : {}),
    });
    this.pool = new ShardReaderPool({
      group: o.group,
      memberId,
      handler: (stream) => this.registry.get(stream),
      createConnection: () => this.connections.reader(),
      serializer: o.serializer,
      logger: o.logger,
      hooksFor: (shard) => this.events.readerHooks(shard),
      onReleased: (shard, cause) => this.onReleased(shard, cause),
      // No handler starts once the lease ran out, even when the timer below has not run yet
      // (an event-loop stall or a freeze: reads answered before it are processed after it).
      beforeHandle: (now) => this.checkSelfFence(now),
    });
    this.events.emit('joining', { memberId });
    this.fenceTimer = setInterval(() => {
      this.checkSelfFence();
      this.checkOverdueRevoke();
    }, 100);
    // Subscribe to the nudge channel before the join (bounded): the nudge announcing the shards
    // released for this member can come right after the join, and must not find it deaf.
    await fulfilledWithin(this.subscribeToNudges(), NUDGE_SUBSCRIBE_WAIT_MS);
    if (this.stopping) return;
    this.heartbeatNow();
  }

  /** Whether the member id was given by the application (not derived, not issued). */
  private chosenMemberId(): boolean {
    const strategy = this.options.memberId;
    return strategy.kind === 'fixed' && strategy.source !== 'default';
  }

  private async resolveMemberId(): Promise<string | null> {
    const strategy = this.options.memberId;
    if (strategy.kind === 'fixed') return strategy.id;
    for (let attempt = 0; !this.stopping; attempt++) {
      try {
        return await this.client.issueMemberId(this.options.group);
      } catch (error) {
        this.lastError = `could not get a member id from the coordinator: ${String(error)}`;
        this.options.logger.warn(this.lastError);
        if (this.stopping) break;
        await new Promise((r) => setTimeout(r, memberIdRetryDelay(attempt)));
      }
    }
    return null;
  }

  /** Sends a heartbeat as soon as possible (coalesced with one in flight). */
  heartbeatNow(): void {
    if (this.leaving || !this.membership) return;
    if (this.inFlight) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.inFlight = this.heartbeat().finally(() => {
      this.inFlight = null;
    });
  }

  private async heartbeat(): Promise<void> {
    const membership = this.membership as Membership;
    const pool = this.pool as ShardReaderPool;
    if (this.settling) {
      // fenced or self-fenced: rejoin only once every handler settled (bounded)
      await this.settling;
      this.settling = null;
      if (this.leaving) return;
    }
    if (this.shutdownRun !== null && membership.memberEpoch === 0) return; // never rejoin while shutting down
    const sentAt = performance.now();
    const generation = this.generation;
    const request = membership.nextRequest(pool.held());
    let delay: number;
    try {
      const response = (await this.client.heartbeat(
        this.options.group,
        request,
      )) as HeartbeatResponse;
      if (this.leaving) return;
      if (generation !== this.generation) {
        // Answered after this member self-fenced: applying it would bring the old epoch back
        // with the assignment the reset dropped (the coordinator would then think the shards
        // owned while no reader runs). Rejoin at once instead.
        this.schedule(0);
        return;
      }
      this.lastOkAt = sentAt;
      this.lastError = null;
      this.failures = 0;
      const wasFenced = this.phase === 'self-fenced';
      const changed = membership.onResponse(response);
      if (this.shutdownRun === null) this.phase = 'active';
      if (wasFenced) this.events.emit('recovered', {});
      if (changed)
        this.events.emit('assignment', {
          assigned: [...changed.values()],
          epoch: response.memberEpoch,
        });
      pool.reconcile(membership.assignment(), sentAt);
      this.ensureNudgeSubscription(membership);
      delay = response.heartbeatIntervalMs;
    } catch (error) {
      if (this.leaving) return;
      if (generation !== this.generation) {
        this.schedule(0);
        return;
      }
      delay = this.onFailure(error, membership, pool);
    }
    if (this.again) {
      this.again = false;
      delay = 0;
    }
    this.schedule(delay);
  }

  private onFailure(error: unknown, membership: Membership, pool: ShardReaderPool): number {
    const code = error instanceof CoordinatorRequestError ? error.code : null;
    this.lastError = error instanceof Error ? error.message : String(error);
    const interval = membership.heartbeatIntervalMs ?? 1000;
    switch (classifyFailure(code)) {
      case 'rejoin':
        this.options.logger.warn(
          `heartbeat: ${this.lastError}; dropping every shard and rejoining`,
        );
        membership.reset();
        this.events.emit('fenced', { code });
        this.dropAll(pool);
        this.failures = 0;
        return 0;
      case 'fatal':
        this.phase = 'failing';
        if (code === 'MEMBER_ID_IN_USE') {
          const failure = new MemberIdInUseError(
            membership.memberId,
            this.options.group,
            (error as CoordinatorRequestError).message,
          );
          this.lastError = failure.message;
          // said once per refusal streak, not on every retry
          if (this.failures === 0) this.options.logger.error(failure.message);
        } else
          this.options.logger.error(`heartbeat refused: ${this.lastError}; retrying with backoff`);
        membership.onTransientFailure();
        this.failures++;
        return heartbeatRetryDelay('refused', this.failures, interval);
      case 'retry':
      default:
        membership.onTransientFailure();
        this.failures++;
        if (this.failures === 1)
          this.options.logger.warn(`heartbeat failed: ${this.lastError}; retrying`);
        return heartbeatRetryDelay('transient', this.failures, interval);
    }
  }

  private schedule(delay: number): void {
    if (this.leaving) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.heartbeatNow(), Math.max(0, delay));
  }

  private onReleased(shard: GrantedShard, cause: 'revoked' | 'lost' | 'dropped'): void {
    this.events.emit('released', { shard, cause });
    if (cause === 'lost') this.membership?.onTransientFailure();
    // Report the release (or the loss) at once, not at the next interval.
    if (cause !== 'dropped') this.heartbeatNow();
  }

  /**
   * Self-fencing: with no successful heartbeat for (session timeout − margin), stop every shard
   * before the coordinator may give them to someone else; rejoin once it answers again. Runs
   * every 100 ms and before every handler call (so a handler never starts on an expired lease,
   * whatever the event loop runs first after a stall). `now` defaults to the clock; readers pass
   * their last progress time, which saves a clock reading per message.
   */
  private checkSelfFence(now = performance.now()): void {
    const m = this.membership;
    const pool = this.pool;
    // (already out of the group, waiting for its handlers to settle before it rejoins: nothing
    // to fence; its heartbeats pause meanwhile)
    if (!m || !pool || this.leaving || this.phase === 'self-fenced' || this.settling !== null)
      return;
    const session = m.sessionTimeoutMs;
    if (session === null || this.lastOkAt === null) return;
    const deadline = this.lastOkAt + session * (1 - SELF_FENCE_MARGIN);
    if (now >= deadline) {
      this.selfFence(
        m,
        pool,
        `no successful heartbeat for ${Math.round(performance.now() - this.lastOkAt)} ms (session timeout ${session} ms): stopping every shard until the coordinator answers`,
      );
    }
  }

  /**
   * A revoke not completed within the rebalance timeout gets the member removed by the
   * coordinator, which then gives every shard of it to others: stop them all before that happens
   * (at 75% of it, checked every 100 ms with the lease check; not per message).
   */
  private checkOverdueRevoke(): void {
    const m = this.membership;
    const pool = this.pool;
    if (!m || !pool || this.leaving || this.phase === 'self-fenced' || this.settling !== null)
      return;
    const revokedAt = pool.oldestRevoke();
    // The coordinator's clock starts later (when it handles the heartbeat sent at `revokedAt`)
    // but its timer ticks faster than this 100 ms check: stop with the same margin as the
    // session self-fence, so the member is out before the coordinator gives the shards away.
    const rebalance = this.options.rebalanceTimeoutMs;
    if (
      revokedAt === undefined ||
      performance.now() < revokedAt + rebalance * (1 - SELF_FENCE_MARGIN)
    )
      return;
    this.selfFence(
      m,
      pool,
      `a revoked shard's handler still runs after the rebalance timeout (${this.options.rebalanceTimeoutMs} ms): the coordinator removes this member; stopping every shard and rejoining once the handlers settled`,
    );
  }

  private selfFence(m: Membership, pool: ShardReaderPool, why: string): void {
    this.phase = 'self-fenced';
    this.generation++;
    this.options.logger.warn(why);
    m.reset();
    this.events.emit('self-fenced', {});
    this.dropAll(pool);
  }

  /**
   * Stops every reader (their handlers' signals abort) after the membership was dropped; the
   * next join waits until they all settled, at most the rebalance timeout (see `settling`).
   */
  private dropAll(pool: ShardReaderPool): void {
    const bound = this.options.rebalanceTimeoutMs;
    const settled = fulfilledWithin(pool.stopAll('dropped'), bound).then((done) => {
      if (!done)
        this.options.logger.warn(
          `handlers still running ${bound} ms (the rebalance timeout) after this member was fenced; rejoining anyway (their late acks are refused)`,
        );
    });
    const previous = this.settling;
    this.settling = previous ? Promise.all([previous, settled]).then(() => undefined) : settled;
  }

  private ensureNudgeSubscription(membership: Membership): void {
    if (this.nudgeChannel !== null) return;
    const first = membership.assignment().values().next().value;
    if (first) void this.subscribeToChannelFor(first.key);
  }

  /** Subscribes to the group's nudge channel (fast hand-off), deriving the prefix from routing. */
  private async subscribeToNudges(): Promise<void> {
    for (const stream of this.registry.streams()) {
      try {
        const routing = await this.client.fetchRouting(stream);
        await this.subscribeToChannelFor(routing.deadLetterKey);
        return;
      } catch {
        // Not created yet, or the coordinator is away: the first assignment's keys will do.
      }
    }
  }

  private async subscribeToChannelFor(key: string): Promise<void> {
    const prefix = prefixOfKey(key);
    if (prefix === null || this.nudgeChannel !== null || this.stopping) return;
    const channel = new KeySpace(prefix).nudgeChannel(this.options.group);
    this.nudgeChannel = channel;
    const subscriber = this.connections.subscriber();
    this.subscriber = subscriber;
    subscriber.on('message', (_channel: string, message: string) => {
      const me = this.membership?.memberId;
      if (me !== undefined && message.split('\n').includes(me)) {
        this.events.emit('nudged', {});
        this.heartbeatNow();
      }
    });
    try {
      await subscriber.subscribe(channel);
    } catch (error) {
      this.options.logger.warn(
        `could not subscribe to ${channel}: ${String(error)} (hand-off falls back to the heartbeat interval)`,
      );
    }
  }

  /**
   * Graceful leave (see {@link shutdown}); in a module app it already ran in the application's
   * first teardown hook, this is the fallback.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.shutdown();
  }

  /**
   * Graceful leave: stop reading (no handler starts any more; running ones see their signal
   * abort), drain in-flight handlers (bounded by `shutdownTimeoutMs`) while heartbeating as usual
   * — reporting the shards still held, so a long drain does not get the member expired — then
   * send the leave heartbeat so the shards move at once; connections close afterwards
   * (`onApplicationShutdown` of the connections provider). Runs once; later calls wait for it.
   * The module runs it in the application's first teardown hook (`onModuleDestroy` of its drain
   * module), before any user provider is torn down; the microservice transport in `close()`.
   */
  shutdown(): Promise<void> {
    this.shutdownRun ??= this.runShutdown();
    return this.shutdownRun;
  }

  private async runShutdown(): Promise<void> {
    if (!this.membership || !this.pool) {
      this.leaving = true;
      clearTimeout(this.timer);
      clearInterval(this.fenceTimer);
      this.phase = 'stopped';
      return;
    }
    this.phase = 'leaving';
    const membership = this.membership;
    const drained = await fulfilledWithin(this.pool.close(), this.options.shutdownTimeoutMs);
    if (!drained) {
      this.options.logger.warn(
        `shutdown: handlers still running after ${this.options.shutdownTimeoutMs} ms; leaving anyway (their late acks will be refused)`,
      );
    }
    this.leaving = true;
    clearTimeout(this.timer);
    clearInterval(this.fenceTimer);
    await fulfilledWithin(this.inFlight ?? Promise.resolve(), this.options.requestTimeoutMs);
    if (membership.memberEpoch > 0) {
      try {
        // A static member leaves "temporarily" by default (epoch -2): its shards stay reserved
        // until the session timeout, so the same instance restarting gets them straight back.
        const temporary =
          this.options.leaveOnShutdown === 'temporary' && this.options.instanceId !== undefined;
        await this.client.heartbeat(this.options.group, {
          memberId: membership.memberId,
          memberEpoch: temporary ? -2 : -1,
          ...(this.options.instanceId !== undefined ? { instanceId: this.options.instanceId } : {}),
        });
        this.events.emit('left', {});
      } catch (error) {
        this.options.logger.warn(
          `leave heartbeat failed: ${String(error)} (the session timeout will free the shards)`,
        );
      }
    }
    // Only on a connected subscriber, and bounded: ioredis queues a command sent while Redis is
    // down until it reconnects (over a minute of retries), which held the shutdown that long. The
    // connection is closed right after anyway.
    if (this.subscriber?.status === 'ready' && this.nudgeChannel) {
      await fulfilledWithin(
        this.subscriber.unsubscribe(this.nudgeChannel).catch(() => undefined),
        QUIT_TIMEOUT_MS,
      );
    }
    this.phase = 'stopped';
  }
}

/**
 * Waits up to `ms` for `promise`: `true` when it fulfilled in time, `false` when the time ran out
 * first (it is not cancelled); rejects when it rejected in time. Unlike the health checks'
 * `withTimeout` (`redis/bounded-call.ts`), running out of time is an answer here, not an error.
 */
async function fulfilledWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
