export type * from './stream-shard-message.interface.js';
export type * from './stream-shard-handler-options.interface.js';
