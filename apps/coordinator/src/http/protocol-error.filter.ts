import {
  type ArgumentsHost,
  Catch,
  type ExceptionFilter,
  HttpException,
  Logger,
} from '@nestjs/common';
import {
  PROTOCOL_ERROR_STATUS,
  PROTOCOL_LIMITS,
  type ProtocolErrorBody,
  type ProtocolErrorCode,
} from '@redis-stream-coordinator/nestjs/protocol';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CoordinatorError } from '../core/coordinator-error.js';
import { isHealthRoute } from './http-edge.js';
import { StatusOverrideError } from './status-override.error.js';

const STATUS_CODES: Partial<Record<number, ProtocolErrorCode>> = {
  400: 'INVALID_REQUEST',
  401: 'UNAUTHENTICATED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'INVALID_REQUEST',
};

const TOO_LARGE = `request body is over the limit of ${PROTOCOL_LIMITS.maxBodyBytes} bytes (1 MiB)`;

/**
 * Renders every failure as `{"error": {"code", "message"}}` with the status docs/protocol.md §2.3
 * assigns.
 * Storage failures (Redis unreachable) and anything unexpected become 503
 * COORDINATOR_NOT_AVAILABLE with `Retry-After`, so clients back off and retry.
 */
@Catch()
export class ProtocolErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('HTTP');

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    if (exception instanceof HttpException && isHealthRoute(request)) {
      // Terminus's own body (status, info, error, details) for the health routes.
      void reply.status(exception.getStatus()).send(exception.getResponse());
      return;
    }
    const { status, body } = this.render(exception);
    if (status === 503) void reply.header('Retry-After', '1');
    void reply.status(status).header('Content-Type', 'application/json').send(JSON.stringify(body));
  }

  private render(exception: unknown): { status: number; body: ProtocolErrorBody } {
    if (exception instanceof StatusOverrideError) {
      return { status: exception.status, body: errorBody(exception.code, exception.message) };
    }
    if (exception instanceof CoordinatorError) {
      return {
        status: PROTOCOL_ERROR_STATUS[exception.code],
        body: errorBody(exception.code, exception.message),
      };
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const code =
        STATUS_CODES[status] ?? (status >= 500 ? 'COORDINATOR_NOT_AVAILABLE' : 'INVALID_REQUEST');
      const message =
        status === 404 ? 'no such route' : status === 413 ? TOO_LARGE : exception.message;
      return { status: PROTOCOL_ERROR_STATUS[code], body: errorBody(code, message) };
    }
    const fastifyStatus = (exception as { statusCode?: unknown } | null)?.statusCode;
    if (typeof fastifyStatus === 'number' && fastifyStatus >= 400 && fastifyStatus < 500) {
      const code = STATUS_CODES[fastifyStatus] ?? 'INVALID_REQUEST';
      const message =
        code === 'PAYLOAD_TOO_LARGE'
          ? TOO_LARGE
          : exception instanceof Error
            ? exception.message
            : 'bad request';
      return { status: PROTOCOL_ERROR_STATUS[code], body: errorBody(code, message) };
    }
    this.logger.warn(
      `request failed: ${exception instanceof Error ? (exception.stack ?? exception.message) : String(exception)}`,
    );
    return {
      status: 503,
      body: errorBody(
        'COORDINATOR_NOT_AVAILABLE',
        // the cause (a Redis error names hosts, keys, scripts) goes to the log, not to the caller
        'the coordinator cannot serve this request now; retry with backoff',
      ),
    };
  }
}

function errorBody(code: ProtocolErrorCode, message: string): ProtocolErrorBody {
  return { error: { code, message } };
}
