import type { ProtocolErrorBody } from '@redis-stream-coordinator/nestjs/protocol';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isHealthRoute } from '../http/http-edge.js';
import type { ServingState } from './serving-state.js';

/**
 * A Fastify `onRequest` hook: until the start-up completed (docs/protocol.md §2.7), every route
 * but `/health/*` answers 503 `COORDINATOR_NOT_AVAILABLE` with `Retry-After: 1` and the reason.
 */
export function startupGate(
  serving: ServingState,
): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  return async (request, reply) => {
    if (serving.started || isHealthRoute(request)) return;
    const body: ProtocolErrorBody = {
      error: {
        code: 'COORDINATOR_NOT_AVAILABLE',
        message: `the coordinator has not finished starting (${serving.reason}); retry with backoff`,
      },
    };
    await reply
      .status(503)
      .header('Retry-After', '1')
      .header('Content-Type', 'application/json')
      .send(JSON.stringify(body));
  };
}
