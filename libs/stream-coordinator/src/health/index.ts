/**
 * `@redis-stream-coordinator/nestjs/health`: terminus health indicators of a member (needs
 * `@nestjs/terminus`).
 *
 * @packageDocumentation
 */
export { StreamCoordinatorHealthModule } from './stream-coordinator-health.module.js';
export {
  StreamCoordinatorHealthIndicator,
  type MemberHealthCheck,
} from './stream-coordinator.health.js';
export {
  STREAM_COORDINATOR_HEALTH_OPTIONS,
  type MemberHealthOptions,
} from './member-health-options.interface.js';
