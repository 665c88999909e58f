import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { Public } from '../http/roles.decorator.js';
import { KeyLayoutHealthIndicator } from './key-layout.health.js';
import { RedisHealthIndicator } from './redis.health.js';
import { ServingState } from './serving-state.js';

/** Terminus routes (docs/protocol.md §15.1): liveness of the process, readiness to serve. */
@Controller('health')
@Public() // details only to authenticated callers: apps/coordinator/src/http/http-edge.ts
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly redis: RedisHealthIndicator,
    private readonly serving: ServingState,
    private readonly keyLayout: KeyLayoutHealthIndicator,
  ) {}

  /** The process is up and its event loop answers. */
  @Get('live')
  @HealthCheck()
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  /**
   * Redis reachable and writable, no coordinator of the old key layout on this prefix, and this
   * replica serving (503 with the reason while the start-up waits for Redis, and while shutting
   * down: then only `coordinator` and `redis` are checked); `redisData` says when Redis lost its
   * data (it stays up: what could be was restored).
   */
  @Get('ready')
  @HealthCheck()
  ready(): Promise<HealthCheckResult> {
    // Nothing is written before the start-up's key-layout check ran (a write probe on the old
    // layout's Redis would be the first key of the new one).
    if (!this.serving.started) {
      return this.health.check([
        () => this.serving.check('coordinator'),
        () => this.redis.isReachable('redis'),
      ]);
    }
    return this.health.check([
      () => this.serving.check('coordinator'),
      () => this.redis.isReachable('redis'),
      () => this.redis.isWritable('persistence'),
      () => this.keyLayout.isCurrent('keyLayout'),
      () => this.redis.dataLosses('redisData'),
    ]);
  }
}
