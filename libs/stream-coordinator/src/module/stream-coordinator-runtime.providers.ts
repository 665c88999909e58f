import type { Provider } from '@nestjs/common';
import { StreamCoordinatorMetricsService } from '../metrics/stream-coordinator-metrics.service.js';
import { StreamProducer } from '../producer/stream-producer.js';
import { MemberRuntime } from '../runtime/member-runtime.js';
import { MemberRuntimeEvents } from '../runtime/member-runtime-events.js';
import { StreamCoordinatorConnections } from '../runtime/stream-coordinator-connections.js';

/**
 * ─── Extension point for the runtime ───────────────────────────────────────────────────────────
 * Providers of the member runtime, the producer, health and metrics go here. The module spreads
 * this array into both its `providers` and its `exports`, after the discovery providers, so:
 * - they can inject `StreamHandlerRegistry` and `STREAM_COORDINATOR_OPTIONS`;
 * - the registry is complete when their `onApplicationBootstrap` runs (it is filled during the
 *   module's `onModuleInit`; read it in `onApplicationBootstrap`, not in a constructor).
 *
 * @internal
 */
export const STREAM_COORDINATOR_RUNTIME_PROVIDERS: Provider[] = [
  StreamCoordinatorConnections,
  MemberRuntimeEvents,
  MemberRuntime,
  StreamProducer,
  StreamCoordinatorMetricsService,
];
