import {
  Inject,
  Injectable,
  type OnApplicationBootstrap,
  type OnModuleInit,
  Optional,
  Scope,
} from '@nestjs/common';
import {
  type ContextId,
  DiscoveryService,
  MetadataScanner,
  ModuleRef,
  ModulesContainer,
} from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { InjectStreamCoordinatorOptions } from '../decorators/inject-stream-coordinator-options.decorator.js';
import { InvalidStreamHandlerError } from '../errors/invalid-stream-handler.error.js';
import type { ResolvedStreamCoordinatorOptions } from '../interfaces/resolved-stream-coordinator-options.interface.js';
import {
  EXACTLY_ONCE_NEEDS_SHARD_ORDER,
  INVALID_HANDLER_OPTIONS,
  NON_STATIC_HOST,
} from '../constants/stream-coordinator.messages.js';
import { EXACTLY_ONCE_APPLIED_CHECK } from '../constants/stream-coordinator.constants.js';
import type { ExactlyOnceAppliedCheck } from '../interfaces/exactly-once-applied-check.interface.js';
import { exactlyOnceDeclaration } from './exactly-once-declaration.js';
import { mergeHandlerOptions } from '../options/stream-coordinator-options.validation.js';
import { HandlerInvokerFactory } from './handler-invoker.factory.js';
import { withNonRetryable, withNonRetryableBatch } from './non-retryable-failures.js';
import { StreamHandlerMetadataAccessor } from './stream-handler-metadata.accessor.js';
import { StreamHandlerRegistry } from './stream-handler.registry.js';

/**
 * Finds every `@StreamShardHandler` method on the application's providers and controllers in
 * `onModuleInit`, validates it and registers it; builds their call paths in
 * `onApplicationBootstrap`. A host that is not a singleton (request-scoped, transient, or made so
 * by a dependency or an enhancer) is resolved per message. Fails the bootstrap on invalid merged
 * options and on two handlers for one stream.
 *
 * @internal
 */
@Injectable()
export class StreamHandlerExplorer implements OnModuleInit, OnApplicationBootstrap {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly modules: ModulesContainer,
    private readonly accessor: StreamHandlerMetadataAccessor,
    private readonly invokers: HandlerInvokerFactory,
    private readonly registry: StreamHandlerRegistry,
    @InjectStreamCoordinatorOptions() private readonly options: ResolvedStreamCoordinatorOptions,
    @Optional()
    @Inject(EXACTLY_ONCE_APPLIED_CHECK)
    private readonly appliedCheck?: ExactlyOnceAppliedCheck,
  ) {}

  onModuleInit(): void {
    this.explore();
  }

  onApplicationBootstrap(): void {
    this.registry.prepare();
  }

  /** Key of the module that holds a wrapper, in the `ModulesContainer`. */
  private moduleKeyOf(wrapper: InstanceWrapper): string | undefined {
    for (const [key, moduleRef] of this.modules) if (moduleRef === wrapper.host) return key;
    return undefined;
  }

  /** Scans the application and registers its handlers. */
  explore(): void {
    // One object can sit behind several wrappers (a `useValue` shared by two modules, an export
    // re-provided); it hosts its handlers once.
    const seen = new Set<object>();
    const wrappers = [...this.discovery.getControllers(), ...this.discovery.getProviders()];
    for (const wrapper of wrappers) {
      if (wrapper.isAlias) continue;
      const prototype = hostPrototype(wrapper);
      if (prototype === undefined) continue;
      const instance = wrapper.instance as unknown;
      if (typeof instance === 'object' && instance !== null && wrapper.isDependencyTreeStatic()) {
        if (seen.has(instance)) continue;
        seen.add(instance);
      }
      for (const methodName of this.scanner.getAllMethodNames(prototype)) {
        const method = (prototype as Record<string, unknown>)[methodName];
        const metadata = this.accessor.getHandlerMetadata(method);
        if (metadata === undefined) continue;
        const className = describeHost(wrapper, prototype);
        const scope = nonStaticScope(wrapper);
        const resolve = scope === undefined ? undefined : contextualResolver(wrapper);
        const singleton =
          scope === undefined && typeof instance === 'object' && instance !== null
            ? instance
            : undefined;
        if (singleton === undefined && resolve === undefined) {
          throw new InvalidStreamHandlerError(
            className,
            methodName,
            NON_STATIC_HOST(className, scope ?? 'not instantiated'),
          );
        }
        const merged = mergeHandlerOptions(this.options.handlerDefaults, metadata.options);
        if (merged.issues.length > 0) {
          throw new InvalidStreamHandlerError(
            className,
            methodName,
            INVALID_HANDLER_OPTIONS(merged.issues),
          );
        }
        const batch = merged.options.batch !== undefined;
        const exactlyOnce = exactlyOnceDeclaration(prototype, method as object);
        if (exactlyOnce !== undefined && (merged.options.ordering === 'key' || batch)) {
          throw new InvalidStreamHandlerError(
            className,
            methodName,
            EXACTLY_ONCE_NEEDS_SHARD_ORDER(batch ? 'batch' : 'ordering', exactlyOnce),
          );
        }
        const invoker = this.invokers.create(
          {
            instance: singleton,
            prototype,
            ...(resolve === undefined
              ? {}
              : { resolve, durable: wrapper.isDependencyTreeDurable() }),
            methodName,
            className,
            stream: metadata.stream,
            hostId: wrapper.id,
            moduleKey: this.moduleKeyOf(wrapper),
          },
          batch,
        );
        this.registry.register({
          stream: metadata.stream,
          options: merged.options,
          invoke: withNonRetryable(invoker.invoke, merged.options.nonRetryable),
          ...(batch
            ? {
                invokeBatch: withNonRetryableBatch(
                  invoker.invokeBatch,
                  merged.options.nonRetryable,
                ),
              }
            : {}),
          prepare: invoker.prepare,
          ...(exactlyOnce !== undefined && this.appliedCheck !== undefined
            ? { alreadyApplied: this.appliedCheck.settle.bind(this.appliedCheck) }
            : {}),
          className,
          methodName,
        });
      }
    }
  }
}

/**
 * The prototype to scan: the instance's, or for a class provider not instantiated statically
 * (request-scoped) the class's own, so such hosts are found (and resolved per message).
 */
function hostPrototype(wrapper: InstanceWrapper): object | undefined {
  const instance = wrapper.instance as unknown;
  if (typeof instance === 'object' && instance !== null) {
    return (Object.getPrototypeOf(instance) as object | null) ?? undefined;
  }
  const metatype = wrapper.metatype as unknown;
  if (
    (wrapper.inject === undefined || wrapper.inject === null) &&
    typeof metatype === 'function' &&
    !wrapper.isDependencyTreeStatic()
  ) {
    return (metatype as { prototype?: object }).prototype;
  }
  return undefined;
}

function describeHost(wrapper: InstanceWrapper, prototype: object): string {
  const ctor = (prototype as { constructor?: { name?: string } }).constructor;
  if (ctor?.name) return ctor.name;
  return typeof wrapper.token === 'function' ? wrapper.token.name : String(wrapper.token);
}

/**
 * Resolves a non-singleton host for a context id through its own module's `ModuleRef` (the
 * public way, which also builds the host's request-scoped and transient dependencies and
 * enhancers for that context); `undefined` when its module cannot be found.
 */
function contextualResolver(
  wrapper: InstanceWrapper,
): ((contextId: ContextId) => Promise<object>) | undefined {
  const moduleRef = wrapper.host?.providers.get(ModuleRef)?.instance as ModuleRef | undefined;
  if (moduleRef === undefined) return undefined;
  const token = wrapper.token;
  return (contextId) => moduleRef.resolve<unknown, object>(token, contextId, { strict: true });
}

/** `undefined` for a singleton host; else how it is scoped. */
function nonStaticScope(wrapper: InstanceWrapper): string | undefined {
  if (wrapper.scope === Scope.REQUEST) return 'request-scoped';
  if (wrapper.isTransient) return 'transient';
  if (!wrapper.isDependencyTreeStatic()) return 'request-scoped through one of its dependencies';
  return undefined;
}
