export * from './batch-item-failed.error.js';
export * from './invalid-batch-result.error.js';
export * from './unsupported-batch-handler.error.js';
