import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { STREAM_SHARD_HANDLER_METADATA } from '../constants/stream-coordinator.constants.js';
import {
  classDeclaresExactlyOnce,
  methodExactlyOnceDeclaration,
} from '../discovery/exactly-once-declaration.js';
import { ExactlyOnceUnsupportedHandlerError } from '../errors/postgres/exactly-once-unsupported-handler.error.js';

/**
 * Refuses exactly-once anywhere but on a `@StreamShardHandler` (at `onModuleInit`): on an
 * `@EventPattern` handler of the microservice transport the interceptor would get no stream entry
 * (every message would fail, then be dead-lettered without the offsets table being read), and
 * Nest chains two `@EventPattern` handlers of one stream into one call, which would share one
 * offset row; on an HTTP route or a method the application calls itself it would fail or do
 * nothing. Looks at every method's own declaration, and at a controller's class-level
 * `@UseInterceptors(ExactlyOnceInterceptor)` for its decorated methods (its routes and patterns;
 * an undecorated helper is never called through Nest's pipeline).
 *
 * @internal
 */
@Injectable()
export class ExactlyOnceHostsCheck implements OnModuleInit {
  private readonly scanner = new MetadataScanner();

  constructor(private readonly discovery: DiscoveryService) {}

  onModuleInit(): void {
    const seen = new Set<object>();
    const hosts: Array<[InstanceWrapper, boolean]> = [
      ...this.discovery
        .getControllers()
        .map((wrapper): [InstanceWrapper, boolean] => [wrapper, true]),
      ...this.discovery
        .getProviders()
        .map((wrapper): [InstanceWrapper, boolean] => [wrapper, false]),
    ];
    for (const [wrapper, controller] of hosts) {
      const prototype = prototypeOf(wrapper);
      if (prototype === undefined || seen.has(prototype)) continue;
      seen.add(prototype);
      const className =
        (prototype as { constructor?: { name?: string } }).constructor?.name ??
        String(wrapper.token);
      const classLevel =
        controller && classDeclaresExactlyOnce((prototype as { constructor: object }).constructor);
      for (const methodName of this.scanner.getAllMethodNames(prototype)) {
        const method = (prototype as Record<string, unknown>)[methodName];
        if (typeof method !== 'function') continue;
        if (Reflect.getMetadata(STREAM_SHARD_HANDLER_METADATA, method) !== undefined) continue;
        const declared =
          methodExactlyOnceDeclaration(method) ??
          (classLevel && Reflect.getMetadataKeys(method).length > 0
            ? '@UseInterceptors(ExactlyOnceInterceptor) on its class'
            : undefined);
        if (declared !== undefined) {
          throw new ExactlyOnceUnsupportedHandlerError(className, methodName, declared);
        }
      }
    }
  }
}

/** The instance's prototype, or a class provider's own when it has no static instance. */
function prototypeOf(wrapper: InstanceWrapper): object | undefined {
  if (wrapper.isAlias) return undefined;
  const instance = wrapper.instance as unknown;
  if (typeof instance === 'object' && instance !== null) {
    return (Object.getPrototypeOf(instance) as object | null) ?? undefined;
  }
  const metatype = wrapper.metatype as unknown;
  return typeof metatype === 'function'
    ? (metatype as { prototype?: object }).prototype
    : undefined;
}
