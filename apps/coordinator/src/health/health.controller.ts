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
   * replica serving (503 while shutting down).
   */
  @Get('ready')
  @HealthCheck()
  ready(): Promise<HealthCheckResult> {
    return this.health.check([
      () => this.serving.check('coordinator'),
      () => this.redis.isReachable('redis'),
      () => this.redis.isWritable('persistence'),
      () => this.keyLayout.isCurrent('keyLayout'),
    ]);
  }
}
