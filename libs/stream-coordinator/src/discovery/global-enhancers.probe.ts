import { ApplicationConfig, type ExternalContextCreator } from '@nestjs/core';
import type { DeclaredEnhancers } from './stream-handler-metadata.accessor.js';

/**
 * Reads which global enhancers (`app.useGlobal*()` and `APP_GUARD`/`APP_INTERCEPTOR`/`APP_PIPE`/
 * `APP_FILTER` providers, static or request-scoped) the application has.
 *
 * Nest exposes no public way to reach the application's `ApplicationConfig`, so this reads the
 * container the injected `ExternalContextCreator` was built from (`ExternalContextCreator
 * .fromContainer()` keeps it). If that shape ever changes, the answer is `undefined` ("unknown"),
 * and callers must then assume global enhancers exist: the probe can cost speed, never correctness.
 *
 * @internal
 */
export function probeGlobalEnhancers(
  contextCreator: ExternalContextCreator,
): DeclaredEnhancers | undefined {
  const container = (contextCreator as unknown as { container?: unknown }).container;
  if (typeof container !== 'object' || container === null) return undefined;
  const config = (container as { applicationConfig?: unknown }).applicationConfig;
  if (!(config instanceof ApplicationConfig)) return undefined;
  try {
    return {
      guards: config.getGlobalGuards().length + config.getGlobalRequestGuards().length > 0,
      interceptors:
        config.getGlobalInterceptors().length + config.getGlobalRequestInterceptors().length > 0,
      pipes: config.getGlobalPipes().length + config.getGlobalRequestPipes().length > 0,
      filters: config.getGlobalFilters().length + config.getGlobalRequestFilters().length > 0,
    };
  } catch {
    return undefined;
  }
}
