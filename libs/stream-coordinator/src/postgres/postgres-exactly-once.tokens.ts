/** Injection token of the module's options. @internal */
export const POSTGRES_EXACTLY_ONCE_OPTIONS = Symbol('POSTGRES_EXACTLY_ONCE_OPTIONS');

export { EXACTLY_ONCE_METADATA } from '../constants/stream-coordinator.constants.js';
