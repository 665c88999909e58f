import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Logger } from '@nestjs/common';
import type { FastifyInstance } from 'fastify';

/** The header a caller may set its request id in; every response carries the id used. */
export const REQUEST_ID_HEADER = 'x-request-id';

/** What an incoming request id must look like to be kept (else the coordinator makes one). */
const VALID_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/**
 * Fastify server options for request ids: a caller's `X-Request-Id` is kept when it is 1–128
 * characters of `[A-Za-z0-9._:@/+=-]` (a proxy's or load balancer's id, so one request can be
 * followed across them); any other value, or none, gets a random UUID.
 */
export function requestIdOptions(): {
  requestIdHeader: false;
  genReqId: (request: IncomingMessage) => string;
} {
  return {
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers[REQUEST_ID_HEADER];
      return typeof given === 'string' && VALID_REQUEST_ID.test(given) ? given : randomUUID();
    },
  };
}

/**
 * Echoes the request id on every response (refusals by the edge included) and writes one access
 * line per response: `debug` level, or `log` for a 5xx; with `LOG_FORMAT=json` its fields
 * (`requestId`, `method`, `url`, `statusCode`, `durationMs`) are fields of the JSON record.
 * Register it first, so the id is set before any other hook can answer.
 */
export function registerAccessLog(
  fastify: FastifyInstance,
  logger = new Logger('HttpAccess'),
): void {
  fastify.addHook('onRequest', (request, reply, done) => {
    void reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    const statusCode = reply.statusCode;
    const durationMs = Math.round(reply.elapsedTime * 10) / 10;
    const fields = {
      requestId: request.id,
      method: request.method,
      url: request.url,
      statusCode,
      durationMs,
    };
    const line = `${request.method} ${request.url} ${statusCode} ${durationMs} ms`;
    if (statusCode >= 500) logger.log(line, fields);
    else logger.debug(line, fields);
    done();
  });
}
