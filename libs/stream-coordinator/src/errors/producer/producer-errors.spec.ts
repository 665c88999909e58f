import { describe, expect, it } from 'vitest';
import { StreamCoordinatorError } from '../stream-coordinator.error.js';
import { PublishArgumentError } from './publish-argument.error.js';
import { PublishError } from './publish.error.js';
import { InvalidRoutingError } from './invalid-routing.error.js';
import { RoutingFetchError } from './routing-fetch.error.js';
import { StaleRoutingError } from './stale-routing.error.js';

describe('producer errors', () => {
  const cause = new Error('boom');
  const ids = ['1-0', undefined];
  const cases: Array<[string, Error]> = [
    ['PublishArgumentError', new PublishArgumentError('the routing key must be a string')],
    ['PublishError', new PublishError('orders', cause, ids)],
    ['RoutingFetchError', new RoutingFetchError('orders', cause, ids)],
    ['InvalidRoutingError', new InvalidRoutingError('orders', 'no shards', ids)],
    ['StaleRoutingError', new StaleRoutingError('orders', 5, 'k', { cause, publishedIds: ids })],
  ];

  it.each(cases)('%s extends the library base error and keeps its name', (name, error) => {
    expect(error).toBeInstanceOf(StreamCoordinatorError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe(name);
    expect(String(error)).toMatch(new RegExp(`^${name}: `));
  });

  it('keep their details: cause, stream, publishedIds', () => {
    const publish = new PublishError('orders', cause, ids);
    expect(publish.cause).toBe(cause);
    expect(publish.message).toBe('Publishing to stream orders failed: boom');
    expect(publish.publishedIds).toEqual(ids);
    const stale = new StaleRoutingError('orders', 5, 'k', { cause, publishedIds: ids });
    expect(stale.cause).toBe(cause);
    expect(stale.publishedIds).toEqual(ids);
    expect(new RoutingFetchError('orders', cause).cause).toBe(cause);
    expect(new InvalidRoutingError('orders', 'no shards').problem).toBe('no shards');
  });
});
