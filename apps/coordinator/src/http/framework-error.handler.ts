import type { ProtocolErrorBody } from '@redis-stream-coordinator/nestjs/protocol';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';

/**
 * Longest path parameter the router accepts. A member id is up to 255 characters that may each
 * be URL-encoded as `%XX`, so 3 × 255 must fit; longer segments are refused with 400 here (the
 * route's own validation names the field for anything shorter).
 */
export const MAX_PATH_PARAM_LENGTH = 1024;

/**
 * Fastify's `frameworkErrors` hook: errors the router raises before any Nest handler runs (a
 * malformed percent-encoding, a path parameter over {@link MAX_PATH_PARAM_LENGTH}) get the
 * protocol's error body `{"error": {"code", "message"}}` instead of Fastify's own.
 */
export function renderFrameworkError(
  error: FastifyError,
  _request: FastifyRequest,
  reply: FastifyReply,
): void {
  const message =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? `a path parameter is longer than ${MAX_PATH_PARAM_LENGTH} characters (names are 1-128 characters, ids 1-255)`
      : `malformed request URL: ${error.message}`;
  const body: ProtocolErrorBody = { error: { code: 'INVALID_REQUEST', message } };
  void reply.status(400).header('Content-Type', 'application/json').send(JSON.stringify(body));
}
