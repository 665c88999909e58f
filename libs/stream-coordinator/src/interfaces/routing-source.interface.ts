import type { StreamRouting } from '../protocol/wire.types.js';

/**
 * Where routing metadata comes from: the coordinator's `GET /v1/streams/{stream}` (the module
 * implements it over HTTP). Rejects when the stream is unknown or the coordinator unreachable.
 */
export interface RoutingSource {
  fetchRouting(stream: string): Promise<StreamRouting>;
}
