import { Controller, Get, Header, Inject } from '@nestjs/common';
import type { Registry } from 'prom-client';
import { RequireRole } from '../http/roles.decorator.js';
import { COORDINATOR_METRICS_REGISTRY } from './metrics.tokens.js';

/**
 * `GET /metrics`: Prometheus text exposition (docs/protocol.md §15.2); public unless `METRICS_TOKEN`
 * is set, then that token (or an admin token) is needed.
 */
@Controller('metrics')
export class MetricsController {
  constructor(@Inject(COORDINATOR_METRICS_REGISTRY) private readonly registry: Registry) {}

  @Get()
  @RequireRole('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}
