export * from './stream-coordinator.error.js';
export * from './invalid-module-options.error.js';
export * from './invalid-stream-handler.error.js';
export * from './duplicate-stream-handler.error.js';
export * from './forbidden-handler.error.js';
export * from './non-retryable.error.js';
export * from './event-handler-failed.error.js';
export * from './empty-filter-result.error.js';
