export * from './invalid-stream-entry-id.error.js';
export * from './invalid-exactly-once-options.error.js';
export * from './exactly-once-transaction-missing.error.js';
export * from './exactly-once-batch.error.js';
export * from './exactly-once-entry-dead-lettered.error.js';
export * from './exactly-once-table-outdated.error.js';
export * from './exactly-once-unsupported-handler.error.js';
