import { BadRequestException } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { NonRetryableError } from '../errors/non-retryable.error.js';
import type { StreamShardContext } from '../context/stream-shard.context.js';
import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';
import type { HandlerInvoke } from './handler-invoker.factory.js';
import { withNonRetryable } from './non-retryable-failures.js';

const message = {} as StreamShardMessage;
const context = {} as StreamShardContext;

async function failureOf(invoke: HandlerInvoke): Promise<unknown> {
  try {
    await invoke(message, context);
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

describe('withNonRetryable', () => {
  it('returns the invoke itself when no class is listed', () => {
    const invoke: HandlerInvoke = () => undefined;
    expect(withNonRetryable(invoke, [])).toBe(invoke);
  });

  it('turns a listed exception (itself or in its cause chain) into a NonRetryableError keeping message and stack', async () => {
    const original = new BadRequestException('payload.id is required');
    const direct = await failureOf(
      withNonRetryable(() => Promise.reject(original), [BadRequestException]),
    );
    expect(direct).toBeInstanceOf(NonRetryableError);
    expect(direct).toMatchObject({ message: 'payload.id is required', cause: original });
    expect((direct as Error).stack).toBe(original.stack);

    const wrapped = new Error('filter wrapped it', { cause: original });
    const viaCause = await failureOf(
      withNonRetryable(() => Promise.reject(wrapped), [BadRequestException]),
    );
    expect(viaCause).toBeInstanceOf(NonRetryableError);
    expect((viaCause as Error).cause).toBe(wrapped);
  });

  it('keeps a synchronous throw synchronous, and leaves other failures as they are', () => {
    const other = new TypeError('boom');
    const invoke = withNonRetryable(() => {
      throw other;
    }, [BadRequestException]);
    expect(() => invoke(message, context)).toThrow(other);
    const listed = withNonRetryable(() => {
      throw new BadRequestException('bad');
    }, [BadRequestException]);
    expect(() => listed(message, context)).toThrow(NonRetryableError);
    expect(withNonRetryable(() => undefined, [BadRequestException])(message, context)).toBe(
      undefined,
    );
  });

  it('stops at a cause cycle', async () => {
    const a = new Error('a') as Error & { cause?: unknown };
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect(await failureOf(withNonRetryable(() => Promise.reject(a), [BadRequestException]))).toBe(
      a,
    );
  });
});
