import { INTERCEPTORS_METADATA } from '@nestjs/common/constants.js';
import {
  EXACTLY_ONCE_INTERCEPTOR_MARKER,
  EXACTLY_ONCE_METADATA,
} from '../constants/stream-coordinator.constants.js';

/**
 * How a handler method asks for exactly-once, as the explorer's refusal names it: by
 * `@ExactlyOnce()`, or by `ExactlyOnceInterceptor` in the method's or its class's
 * `@UseInterceptors()` (recognised by its marker, so discovery does not import `/postgres`).
 * `undefined` when it does not.
 *
 * @internal
 */
export function exactlyOnceDeclaration(hostPrototype: object, method: object): string | undefined {
  const classRef = (hostPrototype as { constructor: object }).constructor;
  return (
    methodExactlyOnceDeclaration(method) ??
    (classDeclaresExactlyOnce(classRef) ? '@UseInterceptors(ExactlyOnceInterceptor)' : undefined)
  );
}

/**
 * How a method itself asks for exactly-once (`@ExactlyOnce()`, or `ExactlyOnceInterceptor` in
 * its own `@UseInterceptors()`); `undefined` when it does not.
 *
 * @internal
 */
export function methodExactlyOnceDeclaration(method: object): string | undefined {
  if (Reflect.getMetadata(EXACTLY_ONCE_METADATA, method) === true) return '@ExactlyOnce()';
  return interceptorsOf(method).some(isExactlyOnceInterceptor)
    ? '@UseInterceptors(ExactlyOnceInterceptor)'
    : undefined;
}

/** Whether a class's `@UseInterceptors()` holds `ExactlyOnceInterceptor`. @internal */
export function classDeclaresExactlyOnce(classRef: object): boolean {
  return interceptorsOf(classRef).some(isExactlyOnceInterceptor);
}

function interceptorsOf(target: object): unknown[] {
  const interceptors = Reflect.getMetadata(INTERCEPTORS_METADATA, target) as unknown;
  return Array.isArray(interceptors) ? interceptors : [];
}

/** The class itself, or an instance of it (`@UseInterceptors(new ExactlyOnceInterceptor(…))`). */
function isExactlyOnceInterceptor(interceptor: unknown): boolean {
  const type =
    typeof interceptor === 'function'
      ? interceptor
      : typeof interceptor === 'object' && interceptor !== null
        ? interceptor.constructor
        : undefined;
  return (
    (type as { [EXACTLY_ONCE_INTERCEPTOR_MARKER]?: unknown } | undefined)?.[
      EXACTLY_ONCE_INTERCEPTOR_MARKER
    ] === true
  );
}
