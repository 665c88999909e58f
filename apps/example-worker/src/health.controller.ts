import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { StreamCoordinatorHealthIndicator } from '@redis-stream-coordinator/nestjs/health';

/**
 * `GET /health/live` (the process answers) and `GET /health/ready` (the member checks of the
 * library: coordinator reachable and heartbeats fresh, not fenced, assignment converged, every
 * owned shard's reader alive, Redis reachable). 503 with the reasons when one is down.
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly member: StreamCoordinatorHealthIndicator,
  ) {}

  @Get('live')
  @HealthCheck()
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  @Get('ready')
  @HealthCheck()
  ready(): Promise<HealthCheckResult> {
    return this.health.check([
      () => this.member.coordinator('coordinator'),
      () => this.member.fencing('fencing'),
      () => this.member.assignment('assignment'),
      () => this.member.readers('readers'),
      () => this.member.redis('redis'),
    ]);
  }
}
