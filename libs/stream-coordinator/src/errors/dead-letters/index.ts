export * from './dead-letter-argument.error.js';
