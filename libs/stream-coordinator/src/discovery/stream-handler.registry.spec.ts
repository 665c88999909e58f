import { describe, expect, it } from 'vitest';
import { DuplicateStreamHandlerError } from '../errors/duplicate-stream-handler.error.js';
import { resolveStreamCoordinatorOptions } from '../options/stream-coordinator-options.validation.js';
import type { StreamHandlerRegistration } from './stream-handler.registry.js';
import { StreamHandlerRegistry } from './stream-handler.registry.js';

const options = resolveStreamCoordinatorOptions({
  coordinatorUrl: 'http://127.0.0.1:7400',
  token: 't',
  redis: 'redis://127.0.0.1:6379',
  group: 'g',
  memberId: 'm',
});

function registration(
  stream: string,
  className: string,
  methodName = 'handle',
): StreamHandlerRegistration {
  return {
    stream,
    className,
    methodName,
    options: options.handlerDefaults,
    invoke: async () => undefined,
  };
}

describe('StreamHandlerRegistry', () => {
  it('looks handlers up by stream and lists streams in name order', () => {
    const registry = new StreamHandlerRegistry(options);
    registry.register(registration('payments', 'PaymentsHandler'));
    registry.register(registration('orders', 'OrdersHandler'));
    expect(registry.streams()).toEqual(['orders', 'payments']);
    expect(registry.get('orders')?.className).toBe('OrdersHandler');
    expect(registry.has('refunds')).toBe(false);
    expect(registry.size).toBe(2);
    expect(registry.definitions().map((definition) => definition.stream)).toEqual([
      'orders',
      'payments',
    ]);
  });

  it('rejects a second handler for a stream, naming both', () => {
    const registry = new StreamHandlerRegistry(options);
    registry.register(registration('orders', 'OrdersHandler'));
    const attempt = () =>
      registry.register(registration('orders', 'LegacyOrdersHandler', 'onOrder'));
    expect(attempt).toThrow(DuplicateStreamHandlerError);
    expect(attempt).toThrow(
      'Stream "orders" has two @StreamShardHandler methods: OrdersHandler.handle and LegacyOrdersHandler.onOrder.',
    );
  });

  it('is publish-only without handlers, or when told so', () => {
    const empty = new StreamHandlerRegistry(options);
    expect(empty.isPublishOnly()).toBe(true);
    empty.register(registration('orders', 'OrdersHandler'));
    expect(empty.isPublishOnly()).toBe(false);
    const producerOnly = new StreamHandlerRegistry({ ...options, publishOnly: true });
    producerOnly.register(registration('orders', 'OrdersHandler'));
    expect(producerOnly.isPublishOnly()).toBe(true);
    const noHandlers = new StreamHandlerRegistry({ ...options, publishOnly: false });
    expect(noHandlers.isPublishOnly()).toBe(true);
  });

  it('keeps separate state per instance', () => {
    const first = new StreamHandlerRegistry(options);
    const second = new StreamHandlerRegistry(options);
    first.register(registration('orders', 'OrdersHandler'));
    expect(second.streams()).toEqual([]);
  });

  it('prepares call paths and reports them', () => {
    const registry = new StreamHandlerRegistry(options);
    let prepared = 0;
    registry.register({
      ...registration('orders', 'OrdersHandler'),
      prepare: () => (prepared++, 'direct'),
    });
    registry.prepare();
    expect(registry.invocationPath('orders')).toBe('direct');
    expect(prepared).toBe(1);
    expect(registry.invocationPath('nope')).toBeUndefined();
  });
});
