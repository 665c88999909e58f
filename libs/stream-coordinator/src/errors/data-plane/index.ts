export * from './fenced.error.js';
export * from './reader-connection-closed.error.js';
export * from './reader-stopped.error.js';
export * from './reader-watchdog.error.js';
export * from './shard-read-refused.error.js';
export * from './shard-reader-options.error.js';
export * from './undecodable-entry.error.js';
