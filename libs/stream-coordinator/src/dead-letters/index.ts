export * from './dead-letter-entry.js';
export * from './dead-letter.service.js';
