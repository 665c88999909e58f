export * from './ack-before-read.script.js';
export * from './ack.script.js';
export * from './acquire.script.js';
export * from './claim.script.js';
export * from './redeliver.script.js';
export * from './release-consumer.script.js';
export * from './uncount.script.js';
