export * from './backoff.js';
export * from './concurrency-limiter.js';
export * from './data-plane-logger.interface.js';
export * from './dead-letter.js';
export * from './entry-codec.js';
export * from './fenced.error.js';
export * from './json-payload.serializer.js';
export {
  ReaderConnectionClosedError,
  ReaderStoppedError,
  ReaderWatchdogError,
} from './reader-connection.js';
export * from './shard-commands.js';
export * from './shard-message.js';
export * from './shard-read-refused.error.js';
export * from './shard-reader.js';
export * from './shard-reader.options.js';
export type * from './shard-reader.types.js';
export type * from './raw-entry.types.js';
