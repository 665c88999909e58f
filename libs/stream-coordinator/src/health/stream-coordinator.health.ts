import { Inject, Injectable, type OnModuleDestroy, Optional } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { InjectStreamCoordinatorOptions } from '../decorators/inject-stream-coordinator-options.decorator.js';
import type { ResolvedStreamCoordinatorOptions } from '../interfaces/resolved-stream-coordinator-options.interface.js';
import { pingRedis, unreachableReason } from '../redis/bounded-call.js';
import { MemberRuntime } from '../runtime/member-runtime.js';
import { MemberRuntimeEvents } from '../runtime/member-runtime-events.js';
import { StreamCoordinatorConnections } from '../runtime/stream-coordinator-connections.js';
import {
  checkAssignment,
  checkCoordinator,
  checkFencing,
  checkReaders,
  type MemberCheckOutcome,
  type MemberHealthInput,
} from './member-health-evaluator.js';
import {
  type MemberHealthOptions,
  STREAM_COORDINATOR_HEALTH_OPTIONS,
} from './member-health-options.interface.js';
import { ReaderHealthTracker } from './reader-health-tracker.js';

/** The checks {@link StreamCoordinatorHealthIndicator.isHealthy} combines. @publicApi */
export type MemberHealthCheck = 'coordinator' | 'fencing' | 'assignment' | 'readers' | 'redis';

/**
 * Health of this application as a member (terminus `HealthIndicatorService` style: every check
 * returns `down` with a `reason`, never throws). Use the checks in the application's own health
 * controller:
 *
 * ```ts
 * @Get('ready') @HealthCheck()
 * ready() {
 *   return this.health.check([
 *     () => this.member.coordinator('coordinator'), () => this.member.fencing('fencing'),
 *     () => this.member.assignment('assignment'), () => this.member.readers('readers'),
 *     () => this.member.redis('redis'),
 *   ]);
 * }
 * ```
 *
 * A publish-only application (no handler) is always `up` on the member checks (`member: false`).
 *
 * @publicApi
 */
@Injectable()
export class StreamCoordinatorHealthIndicator implements OnModuleDestroy {
  private readonly tracker: ReaderHealthTracker;
  private readonly settings: MemberHealthOptions;

  constructor(
    private readonly health: HealthIndicatorService,
    private readonly runtime: MemberRuntime,
    events: MemberRuntimeEvents,
    private readonly connections: StreamCoordinatorConnections,
    @InjectStreamCoordinatorOptions() private readonly options: ResolvedStreamCoordinatorOptions,
    @Optional() @Inject(STREAM_COORDINATOR_HEALTH_OPTIONS) settings?: MemberHealthOptions,
  ) {
    this.settings = settings ?? {};
    this.tracker = new ReaderHealthTracker(events, () => runtime.status());
  }

  /** Coordinator reachable, member joined, heartbeats answered recently. */
  coordinator<const K extends string>(key: K): HealthIndicatorResult<K> {
    return this.report(key, checkCoordinator(this.input()));
  }

  /** Not fenced lately (by the coordinator, by itself, or by the data-plane fence). */
  fencing<const K extends string>(key: K): HealthIndicatorResult<K> {
    return this.report(key, checkFencing(this.input()));
  }

  /** The held shards match the assignment (`degraded` while converging). */
  assignment<const K extends string>(key: K): HealthIndicatorResult<K> {
    return this.report(key, checkAssignment(this.input()));
  }

  /** Every owned shard's reader is alive: not stalled, Redis calls not failing. */
  readers<const K extends string>(key: K): HealthIndicatorResult<K> {
    return this.report(key, checkReaders(this.input()));
  }

  /** The data-plane Redis answers `PING` in time (on the shared command connection). */
  async redis<const K extends string>(key: K): Promise<HealthIndicatorResult<K>> {
    try {
      await pingRedis(this.connections.commands(), this.settings.pingTimeoutMs ?? 1000);
      return this.health.check(key).up();
    } catch (error) {
      return this.health.check(key).down({ reason: unreachableReason(error) });
    }
  }

  /**
   * Every check under one key: `down` (with the first failing check's reason) when any is down,
   * `degraded` when any is degraded; `checks` holds each one's result.
   */
  async isHealthy<const K extends string>(
    key: K,
    only: readonly MemberHealthCheck[] = [
      'coordinator',
      'fencing',
      'assignment',
      'readers',
      'redis',
    ],
  ): Promise<HealthIndicatorResult<K>> {
    const input = this.input();
    const checks: Record<string, MemberCheckOutcome> = {};
    for (const name of only) {
      if (name === 'redis') {
        const r = (await this.redis('redis')).redis as {
          status: MemberCheckOutcome['status'];
        } & Record<string, unknown>;
        const { status, ...data } = r;
        checks.redis = { status, data };
      } else {
        checks[name] = {
          coordinator: checkCoordinator,
          fencing: checkFencing,
          assignment: checkAssignment,
          readers: checkReaders,
        }[name](input);
      }
    }
    const all = Object.entries(checks);
    const failed =
      all.find(([, c]) => c.status === 'down') ?? all.find(([, c]) => c.status === 'degraded');
    const summary = Object.fromEntries(
      all.map(([name, c]) => [name, { status: c.status, ...c.data }]),
    );
    const session = this.health.check(key);
    if (!failed) return session.up({ checks: summary });
    const reason = `${failed[0]}: ${String(failed[1].data.reason)}`;
    return failed[1].status === 'down'
      ? session.down({ reason, checks: summary })
      : session.degraded({ reason, checks: summary });
  }

  onModuleDestroy(): void {
    this.tracker.close();
  }

  private input(): MemberHealthInput {
    return {
      isMember: this.runtime.isMember,
      status: this.runtime.status(),
      readers: this.runtime.readers(),
      tracker: this.tracker,
      now: performance.now(),
      requestTimeoutMs: this.options.requestTimeoutMs,
      rebalanceTimeoutMs: this.options.rebalanceTimeoutMs,
      options: this.settings,
    };
  }

  private report<const K extends string>(
    key: K,
    outcome: MemberCheckOutcome,
  ): HealthIndicatorResult<K> {
    const session = this.health.check(key);
    if (outcome.status === 'up') return session.up(outcome.data);
    if (outcome.status === 'degraded') return session.degraded(outcome.data);
    return session.down(outcome.data);
  }
}
