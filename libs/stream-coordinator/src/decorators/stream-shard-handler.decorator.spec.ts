import 'reflect-metadata';
import { Injectable, Query, type PipeTransform } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';
import { describe, expect, it } from 'vitest';
import { InvalidStreamHandlerError } from '../errors/invalid-stream-handler.error.js';
import type { StreamShardHandlerOptions } from '../interfaces/stream-shard-handler-options.interface.js';
import {
  SHARD_CONTEXT_PARAMS_METADATA,
  SHARD_MESSAGE_PARAMTYPE,
  STREAM_SHARD_HANDLER_METADATA,
} from '../constants/stream-coordinator.constants.js';
import { ShardContext } from './shard-context.decorator.js';
import { ShardMessage } from './shard-message.decorator.js';
import { StreamShardHandler } from './stream-shard-handler.decorator.js';

function thrown(define: () => unknown): InvalidStreamHandlerError {
  try {
    define();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidStreamHandlerError);
    return error as InvalidStreamHandlerError;
  }
  throw new Error('expected the decorator to throw');
}

class UpperPipe implements PipeTransform {
  transform(value: unknown): unknown {
    return value;
  }
}

describe('@StreamShardHandler', () => {
  it('records the stream and a copy of the options on the method', () => {
    const options: StreamShardHandlerOptions = { batchSize: 10, retry: { multiplier: 3 } };
    @Injectable()
    class OrdersHandler {
      @StreamShardHandler('orders', options)
      handle(): void {}
    }
    const metadata = Reflect.getMetadata(
      STREAM_SHARD_HANDLER_METADATA,
      Object.getOwnPropertyDescriptor(OrdersHandler.prototype, 'handle')?.value as object,
    ) as unknown;
    expect(metadata).toEqual({ stream: 'orders', options });
    expect((metadata as { options: unknown }).options).not.toBe(options);
  });

  it('records the implicit (message, context) layout when no parameter is decorated', () => {
    class OrdersHandler {
      @StreamShardHandler('orders')
      handle(): void {}
    }
    expect(Reflect.getMetadata(ROUTE_ARGS_METADATA, OrdersHandler, 'handle')).toEqual({
      [`${SHARD_MESSAGE_PARAMTYPE}:0`]: { index: 0, data: undefined, pipes: [] },
    });
    expect(Reflect.getMetadata(SHARD_CONTEXT_PARAMS_METADATA, OrdersHandler, 'handle')).toEqual([
      1,
    ]);
  });

  it('keeps explicit @ShardMessage/@ShardContext parameters as declared', () => {
    class OrdersHandler {
      @StreamShardHandler('orders')
      handle(
        @ShardContext() _context: unknown,
        @ShardMessage('payload', UpperPipe) _payload: unknown,
      ): void {}
    }
    expect(Reflect.getMetadata(ROUTE_ARGS_METADATA, OrdersHandler, 'handle')).toEqual({
      [`${SHARD_MESSAGE_PARAMTYPE}:1`]: { index: 1, data: 'payload', pipes: [UpperPipe] },
    });
    expect(Reflect.getMetadata(SHARD_CONTEXT_PARAMS_METADATA, OrdersHandler, 'handle')).toEqual([
      0,
    ]);
  });

  it('treats a pipe as first @ShardMessage argument as a pipe, not a property', () => {
    const pipe = new UpperPipe();
    class OrdersHandler {
      @StreamShardHandler('orders')
      handle(@ShardMessage(pipe) _message: unknown): void {}
    }
    expect(Reflect.getMetadata(ROUTE_ARGS_METADATA, OrdersHandler, 'handle')).toEqual({
      [`${SHARD_MESSAGE_PARAMTYPE}:0`]: { index: 0, data: undefined, pipes: [pipe] },
    });
  });

  it('rejects an invalid stream name, naming Class.method', () => {
    const error = thrown(() => {
      class OrdersHandler {
        @StreamShardHandler('orders/eu')
        handle(): void {}
      }
      return OrdersHandler;
    });
    expect(error.message).toBe(
      '@StreamShardHandler on OrdersHandler.handle: the stream name must be a name of 1–128 characters from [A-Za-z0-9._-] (got "orders/eu")',
    );
    expect(error).toMatchObject({ className: 'OrdersHandler', memberName: 'handle' });
  });

  it('rejects invalid options, naming Class.method and the option', () => {
    const error = thrown(() => {
      class OrdersHandler {
        @StreamShardHandler('orders', { batchSize: 0, concurency: 2 } as StreamShardHandlerOptions)
        handle(): void {}
      }
      return OrdersHandler;
    });
    expect(error.message).toBe(
      '@StreamShardHandler on OrdersHandler.handle: option "batchSize" must be an integer between 1 and 10000 (got 0); also: option "concurency" is not a known option; did you mean "concurrency"?',
    );
  });

  it('rejects a bad ordering or maxConcurrency with InvalidStreamHandlerError', () => {
    const error = thrown(() => {
      class OrdersHandler {
        @StreamShardHandler('orders', {
          ordering: 'per-key',
          maxConcurrency: 0,
        } as unknown as StreamShardHandlerOptions)
        handle(): void {}
      }
      return OrdersHandler;
    });
    expect(error.message).toBe(
      '@StreamShardHandler on OrdersHandler.handle: option "ordering" must be "shard" or "key" (got "per-key"); also: option "maxConcurrency" must be an integer between 1 and 1024 (got 0)',
    );
  });

  it('keeps the nonRetryable exception classes themselves; rejects anything but classes', () => {
    class DomainError extends Error {}
    @Injectable()
    class OrdersHandler {
      @StreamShardHandler('orders', { nonRetryable: [DomainError] })
      handle(): void {}
    }
    const metadata = Reflect.getMetadata(
      STREAM_SHARD_HANDLER_METADATA,
      Object.getOwnPropertyDescriptor(OrdersHandler.prototype, 'handle')?.value as object,
    ) as { options: StreamShardHandlerOptions };
    expect(metadata.options.nonRetryable?.[0]).toBe(DomainError);

    const error = thrown(() => {
      class BadHandler {
        @StreamShardHandler('orders', {
          nonRetryable: ['BadRequestException'],
        } as unknown as StreamShardHandlerOptions)
        handle(): void {}
      }
      return BadHandler;
    });
    expect(error.message).toBe(
      '@StreamShardHandler on BadHandler.handle: option "nonRetryable[0]" must be an array of exception classes, for example [BadRequestException] (got "BadRequestException")',
    );
  });

  it('rejects a property', () => {
    const error = thrown(() => {
      class OrdersHandler {
        // @ts-expect-error: a method decorator on a property
        @StreamShardHandler('orders')
        handler: (() => void) | undefined;
      }
      return OrdersHandler;
    });
    expect(error.message).toMatch(
      /^@StreamShardHandler on OrdersHandler\.handler: the decorator applies to instance methods only, but was applied to a property/,
    );
  });

  it('rejects a class', () => {
    const error = thrown(() => {
      // @ts-expect-error: a method decorator on a class
      @StreamShardHandler('orders')
      class OrdersHandler {}
      return OrdersHandler;
    });
    expect(error.message).toMatch(/^@StreamShardHandler on OrdersHandler: .* applied to a class/);
  });

  it('rejects a static method and an accessor', () => {
    expect(
      thrown(() => {
        class OrdersHandler {
          @StreamShardHandler('orders')
          static handle(): void {}
        }
        return OrdersHandler;
      }).message,
    ).toMatch(/^@StreamShardHandler on OrdersHandler\.handle: .* applied to a static method/);
    expect(
      thrown(() => {
        class OrdersHandler {
          @StreamShardHandler('orders')
          get handle(): () => void {
            return () => undefined;
          }
        }
        return OrdersHandler;
      }).message,
    ).toMatch(/^@StreamShardHandler on OrdersHandler\.handle: .* applied to an accessor/);
  });

  it('rejects two decorators on one method', () => {
    const error = thrown(() => {
      class OrdersHandler {
        @StreamShardHandler('payments')
        @StreamShardHandler('orders')
        handle(): void {}
      }
      return OrdersHandler;
    });
    expect(error.message).toBe(
      '@StreamShardHandler on OrdersHandler.handle: the method has two @StreamShardHandler decorators ("orders" and "payments"); a method handles one stream',
    );
  });

  it('rejects parameter decorators the library cannot fill', () => {
    const error = thrown(() => {
      class OrdersHandler {
        @StreamShardHandler('orders')
        handle(@Query() _query: unknown): void {}
      }
      return OrdersHandler;
    });
    expect(error.message).toMatch(
      /^@StreamShardHandler on OrdersHandler\.handle: parameter 0 has a parameter decorator the library cannot fill/,
    );
  });

  it('rejects a parameter with both @ShardMessage and @ShardContext', () => {
    const error = thrown(() => {
      class OrdersHandler {
        @StreamShardHandler('orders')
        handle(@ShardMessage() @ShardContext() _both: unknown): void {}
      }
      return OrdersHandler;
    });
    expect(error.message).toBe(
      '@StreamShardHandler on OrdersHandler.handle: parameter 0 has both @ShardMessage() and @ShardContext(); keep one',
    );
  });

  it('rejects @ShardMessage and @ShardContext on constructor parameters', () => {
    expect(
      thrown(() => {
        class OrdersHandler {
          constructor(@ShardMessage() readonly message: unknown) {}
        }
        return OrdersHandler;
      }).message,
    ).toBe(
      '@StreamShardHandler on OrdersHandler.constructor: @ShardMessage() applies to parameters of a @StreamShardHandler method, not to constructor parameters',
    );
    expect(
      thrown(() => {
        class OrdersHandler {
          constructor(@ShardContext() readonly context: unknown) {}
        }
        return OrdersHandler;
      }).name,
    ).toBe('InvalidStreamHandlerError');
  });
});
