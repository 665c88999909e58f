import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { InjectStreamCoordinatorOptions } from '../decorators/inject-stream-coordinator-options.decorator.js';
import type { ResolvedStreamCoordinatorOptions } from '../interfaces/resolved-stream-coordinator-options.interface.js';
import { CONNECTION_CLOSED_EVENT, closeConnection } from '../redis/close-connection.js';
import { createReaderConnection } from '../redis/create-reader-connection.js';
import {
  type ConnectionErrorLog,
  createRedisConnection,
} from '../redis/create-redis-connection.js';
import type { ReaderRedis, RedisConnection } from '../redis/redis-connection.types.js';

/**
 * Owns every Redis connection of one application: the shared command connection (producer,
 * short commands) and the subscriber, created on first use, plus a factory for the dedicated
 * reader connections. All are closed in `onApplicationShutdown`, after the runtime has drained
 * its handlers and left the group (`beforeApplicationShutdown`), so handlers that publish while
 * draining still can.
 *
 * @internal
 */
@Injectable()
export class StreamCoordinatorConnections implements OnApplicationShutdown {
  private command: RedisConnection | undefined;
  private readonly owned = new Set<ReaderRedis>();
  /** One error log for every reader connection: an outage warns once, not once per connection. */
  private readonly readerErrors: ConnectionErrorLog = { quiet: false };

  constructor(
    @InjectStreamCoordinatorOptions() private readonly options: ResolvedStreamCoordinatorOptions,
  ) {}

  /** The shared command connection. */
  commands(): RedisConnection {
    this.command ??= this.track(
      createRedisConnection(this.options.redis, 'command', {
        connectionName: 'rsc-command',
        logger: this.options.logger,
      }),
    );
    return this.command;
  }

  /** A new pub/sub connection (closed with the application). */
  subscriber(): RedisConnection {
    return this.track(
      createRedisConnection(this.options.redis, 'subscriber', {
        connectionName: 'rsc-nudges',
        logger: this.options.logger,
      }),
    );
  }

  /** A new dedicated reader connection; the reader closes it, the application closes leftovers. */
  reader(): ReaderRedis {
    const connection = createReaderConnection(this.options.redis, {
      connectionName: 'rsc-reader',
      logger: this.options.logger,
      readerClient: this.options.readerClient,
      errorLog: this.readerErrors,
    });
    this.track(connection);
    const forget = (): void => {
      this.owned.delete(connection);
    };
    connection.once('end', forget);
    // closed by its reader while ioredis was reconnecting it: inert, and never `end`
    connection.once(CONNECTION_CLOSED_EVENT, forget);
    return connection;
  }

  /** How many connections this application holds open (diagnostics, tests). */
  get trackedConnections(): number {
    return this.owned.size;
  }

  private track<T extends ReaderRedis>(connection: T): T {
    this.owned.add(connection);
    return connection;
  }

  /** Closes every connection still open (see {@link closeConnection}: never waits long). */
  async onApplicationShutdown(): Promise<void> {
    const all = [...this.owned];
    this.owned.clear();
    this.command = undefined;
    await Promise.allSettled(all.map((c) => closeConnection(c)));
  }
}
