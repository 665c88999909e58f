export type * from './stream-shard-message.interface.js';
export type * from './stream-shard-handler-options.interface.js';
export type * from './redis-connection-options.interface.js';
export type * from './payload-serializer.interface.js';
export type * from './stream-shard-batch.interface.js';
