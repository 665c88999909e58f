import { AsyncLocalStorage } from 'node:async_hooks';
import { ForbiddenException, Injectable } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';
import { type ContextId, ContextIdFactory, ExternalContextCreator, ModuleRef } from '@nestjs/core';
import { isObservable, lastValueFrom } from 'rxjs';
import {
  STREAM_SHARD_CONTEXT_TYPE,
  type StreamShardContext,
} from '../context/stream-shard.context.js';
import { InjectStreamCoordinatorOptions } from '../decorators/inject-stream-coordinator-options.decorator.js';
import { EmptyFilterResultError } from '../errors/empty-filter-result.error.js';
import { ForbiddenHandlerError } from '../errors/forbidden-handler.error.js';
import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';
import { plainShardMessage } from '../data-plane/plain-shard-message.js';
import type { ResolvedStreamCoordinatorOptions } from '../interfaces/resolved-stream-coordinator-options.interface.js';
import { probeGlobalEnhancers } from './global-enhancers.probe.js';
import { withReportedFailures } from './reported-batch-failures.js';
import {
  type DeclaredEnhancers,
  type HandlerParameterLayout,
  StreamHandlerMetadataAccessor,
} from './stream-handler-metadata.accessor.js';
import { StreamShardParamsFactory } from './stream-shard-params.factory.js';

/**
 * Calls a handler for one message. Resolves when the message counts as handled (the runtime acks
 * it), rejects when it failed (the runtime retries, then dead-letters it). A handler on the
 * direct path that returned synchronously (no promise, no Observable) gives `undefined` at once
 * instead of a promise — handled — and one that threw synchronously throws: callers `await` the
 * result either way, or skip the await when it is `undefined`.
 */
export type HandlerInvoke = (
  message: StreamShardMessage,
  context: StreamShardContext,
) => Promise<void> | undefined;

/**
 * Calls a batch handler (`batch` option) with one shard's messages, in entry order. Resolves to
 * what the handler returned (after interceptors; a `StreamShardBatchResult` or nothing), rejects
 * when the whole batch failed.
 */
export type BatchHandlerInvoke = (
  messages: readonly StreamShardMessage[],
  context: StreamShardContext,
) => Promise<unknown>;

/** Either invoke, as built (the message argument is one message or a batch). */
type AnyInvoke = (message: unknown, context: StreamShardContext) => Promise<unknown> | undefined;

/**
 * How a handler is called:
 * - `direct`: the bound method itself, when no guard, interceptor, pipe or filter can apply;
 * - `pipeline`: through Nest's `ExternalContextCreator` (guards → interceptors → pipes →
 *   handler, with exception filters around it), as `@nestjs/microservices` calls its handlers.
 */
export type HandlerInvocationPath = 'direct' | 'pipeline';

/**
 * The method a handler is, and where it lives.
 *
 * @internal
 */
export interface HandlerTarget {
  /** The provider or controller instance; `undefined` for a host resolved per message. */
  readonly instance: object | undefined;
  /** The host class's prototype (where the handler's metadata lives). */
  readonly prototype: object;
  /**
   * For a request-scoped or transient host (or one whose dependencies or enhancers are): the
   * host's instance for a message's context id, as Nest builds it for that context.
   */
  readonly resolve?: (contextId: ContextId) => Promise<object>;
  /** The host's dependency tree is durable (a `ContextIdStrategy` shares it per tenant). */
  readonly durable?: boolean;
  readonly methodName: string;
  readonly className: string;
  readonly stream: string;
  /** Id of the host's `InstanceWrapper` (so transient enhancers resolve for this host). */
  readonly hostId: string | undefined;
  /** Key of the host's module in the `ModulesContainer` (enhancer classes resolve there). */
  readonly moduleKey: string | undefined;
}

/**
 * A handler's invoker: `invoke` builds the call path on first use; `prepare` builds it at once
 * (the explorer does so at bootstrap, so setup errors surface there) and tells which path it is.
 *
 * @internal
 */
export interface HandlerInvoker {
  readonly invoke: HandlerInvoke;
  /** The batch call path: the handler's result is kept (see {@link BatchHandlerInvoke}). */
  readonly invokeBatch: BatchHandlerInvoke;
  readonly prepare: () => HandlerInvocationPath;
}

/** Per-invocation state the pipeline's callback reads (the context is not a piped argument). */
interface InvocationFrame {
  readonly context: StreamShardContext;
  reached: boolean;
  /**
   * The method's own calls still running (an interceptor may give up on one, as `timeout()`
   * does, or call it again, as `retry()` does): the invocation settles only after they have.
   */
  readonly running: Set<Promise<unknown>>;
  /** The method's last failure (a filter that handled nothing reports it as the cause). */
  failure?: { readonly error: unknown };
  /**
   * What the method's last successful call resolved to (batch handlers only): failures it
   * reported in `batchItemFailures` count even if an interceptor reshaped the result.
   */
  returned?: { readonly value: unknown } | undefined;
}

/** What `lastValueFrom` resolves to for an Observable that completed without a value. */
const NO_VALUE: unique symbol = Symbol('no value');

/**
 * The message of the `ForbiddenException` that `ExternalContextCreator` throws when a guard
 * returns `false` (`FORBIDDEN_MESSAGE` in `@nestjs/core/guards/constants.js`). Matched by value:
 * if Nest changed it, a denial would reject with Nest's exception instead, still as a failure.
 */
const GUARD_DENIAL_MESSAGE = 'Forbidden resource';

const ALL_ENHANCERS: DeclaredEnhancers = {
  guards: true,
  interceptors: true,
  pipes: true,
  filters: true,
};

type AnyMethod = (this: unknown, ...args: unknown[]) => unknown;

/**
 * Builds the `invoke` function of each handler.
 *
 * Pipeline details:
 * - Execution-context arguments are `[message, StreamShardContext]` and the context type is
 *   `'stream-shard'`, so `host.switchToRpc().getData()/getContext()` work as for microservices.
 * - Pipes run on the message parameter (the implicit first one, or each `@ShardMessage()`), never
 *   on the context: the context reaches the method through an `AsyncLocalStorage` frame rather
 *   than as a piped argument.
 * - A guard returning `false` rejects with {@link ForbiddenHandlerError} (filters see Nest's
 *   `ForbiddenException` first).
 * - What an exception filter returns is awaited, as `@nestjs/microservices` awaits it for an
 *   event: an Observable runs to completion and a promise settles; an error from either (the
 *   documented `return throwError(() => exception)`) rejects the invocation — a failure. So
 *   does an Observable that completes without a value (`return EMPTY`): it handled nothing
 *   ({@link EmptyFilterResultError}; `ServerKafka`'s `lastValueFrom` rejects on it too). A
 *   filter that returns any other value, emits one or resolves handled the error: the
 *   invocation resolves and the message is acked. One that returns nothing (`undefined`)
 *   synchronously did not handle it: Nest rethrows.
 * - An Observable returned by the method is awaited to completion (empty completes too).
 * - The invocation settles only once every call of the method it started has settled, even when
 *   an interceptor settled first (a `timeout()` gave up on the call): a message is finished when
 *   the method is, so a retry or a revoke never overlaps a call still running. The outcome is
 *   the interceptor chain's (a timed-out call is a failure even if the method resolves later).
 * - A host that is not a singleton (request-scoped, transient, or made so by a dependency or a
 *   request-scoped enhancer) is built per message under a fresh context id, with the message's
 *   `StreamShardContext` registered as its `REQUEST`, and the pipeline is built for that context
 *   (so request-scoped enhancers are real instances), as Nest does per HTTP request or event.
 * - When no exception filter exists (none declared, none global), Nest's filter layer is left
 *   out, so failures are not logged twice (the runtime logs them).
 *
 * Direct path: taken when `handlerFastPath` is on (default), the class and method declare no
 * guards/interceptors/pipes/filters, no parameter has pipes or a custom decorator, and the
 * application has no global enhancer (see {@link probeGlobalEnhancers}; unknown counts as
 * present). Behaviour is the same as the pipeline's without enhancers; only the overhead goes.
 *
 * The path is fixed when built (first invocation, or bootstrap): enhancers registered later do
 * not apply, as with Nest's own HTTP routes and microservice handlers.
 *
 * @internal
 */
@Injectable()
export class HandlerInvokerFactory {
  private readonly frames = new AsyncLocalStorage<InvocationFrame>();
  private readonly paramsFactory = new StreamShardParamsFactory();

  constructor(
    private readonly contextCreator: ExternalContextCreator,
    private readonly moduleRef: ModuleRef,
    private readonly accessor: StreamHandlerMetadataAccessor,
    @InjectStreamCoordinatorOptions() private readonly options: ResolvedStreamCoordinatorOptions,
  ) {}

  /**
   * Creates the invoker of one handler (the call path is built lazily); `prepare` builds the
   * batch path for a batch handler.
   */
  create(target: HandlerTarget, batch = false): HandlerInvoker {
    let compiled: { path: HandlerInvocationPath; invoke: HandlerInvoke } | undefined;
    let batchCompiled: { path: HandlerInvocationPath; invoke: AnyInvoke } | undefined;
    const build = () => (compiled ??= this.build(target, false) as typeof compiled & object);
    const buildBatch = () => (batchCompiled ??= this.build(target, true));
    return {
      invoke: (message, context) => (compiled ?? build()).invoke(message, context),
      invokeBatch: (messages, context) =>
        Promise.resolve((batchCompiled ?? buildBatch()).invoke(messages, context)),
      prepare: () => (batch ? buildBatch() : build()).path,
    };
  }

  /**
   * Builds a call path. With `keepResult` (batch handlers) the invocation resolves to the
   * handler's value; without, callers ignore it (a message handler's value means nothing).
   */
  private build(
    target: HandlerTarget,
    keepResult: boolean,
  ): { path: HandlerInvocationPath; invoke: AnyInvoke } {
    const host = target.instance ?? target.prototype;
    const method = (host as Record<string, unknown>)[target.methodName] as AnyMethod;
    const classRef = (target.prototype as { constructor: Function }).constructor;
    const layout = this.accessor.getParameterLayout(
      paramsHostOf(target.prototype, target.methodName),
      target.methodName,
    );
    const declared = this.accessor.getDeclaredEnhancers(classRef, method);
    const global = probeGlobalEnhancers(this.contextCreator) ?? ALL_ENHANCERS;
    const direct =
      this.options.handlerFastPath &&
      !anyEnhancer(declared) &&
      !anyEnhancer(global) &&
      !layout.hasParameterPipes &&
      !layout.hasCustomParameters;
    if (direct && target.instance !== undefined) {
      return { path: 'direct', invoke: directInvoke(target.instance, method, layout, keepResult) };
    }
    return {
      path: 'pipeline',
      invoke: this.pipelineInvoke(
        target,
        method,
        layout,
        declared.filters || global.filters,
        keepResult,
      ),
    };
  }

  private pipelineInvoke(
    target: HandlerTarget,
    method: AnyMethod,
    layout: HandlerParameterLayout,
    withFilters: boolean,
    keepResult: boolean,
  ): AnyInvoke {
    const frames = this.frames;
    const contextIndexes = layout.context;
    const hasRouteArgs = layout.hasRouteArgs;
    const callback = function (this: unknown, ...params: unknown[]): unknown {
      const frame = frames.getStore();
      // Without route-args metadata Nest passes the raw `[message, context]`; the handler then
      // declared only `@ShardContext()` parameters, and every other parameter stays undefined.
      const args = hasRouteArgs ? params : [];
      if (frame === undefined) return settle(method.apply(this, args));
      frame.reached = true;
      for (const index of contextIndexes) args[index] = frame.context;
      let result: unknown;
      const record = (value: unknown): unknown => {
        if (keepResult) frame.returned = { value };
        return value;
      };
      try {
        // an Observable, or one an async method resolves to, runs here to its last value: the
        // chain above sees a value, and the call counts as running until the stream settled
        const returned = settle(method.apply(this, args));
        result = isPromiseLike(returned)
          ? Promise.resolve(returned).then(settle).then(record)
          : record(returned);
      } catch (error) {
        frame.failure = { error };
        frame.returned = undefined;
        throw error;
      }
      if (isPromiseLike(result)) {
        const running = Promise.resolve(result).then(noop, (error: unknown) => {
          frame.failure = { error };
          frame.returned = undefined;
        });
        frame.running.add(running);
        void running.then(() => frame.running.delete(running));
      }
      return result;
    };
    // Guards, interceptors and filters read their metadata from the callback, and user guards
    // read custom metadata from `context.getHandler()`: give the wrapper the method's metadata.
    for (const key of Reflect.getMetadataKeys(method) as unknown[]) {
      Reflect.defineMetadata(key, Reflect.getMetadata(key, method), callback);
    }
    Object.defineProperty(callback, 'name', { value: method.name });

    const creator = contextCreatorFor(this.contextCreator, target.moduleKey);
    const createProxy = (instance: object, contextId?: ContextId) =>
      creator.create(
        instance,
        callback,
        target.methodName,
        ROUTE_ARGS_METADATA,
        this.paramsFactory,
        contextId,
        target.hostId,
        { guards: true, interceptors: true, filters: withFilters },
        STREAM_SHARD_CONTEXT_TYPE,
      );
    const handlerName = `${target.className}.${target.methodName}`;
    const run = async (
      proxy: (...args: unknown[]) => Promise<unknown>,
      message: unknown,
      context: StreamShardContext,
    ): Promise<unknown> => {
      const frame: InvocationFrame = { context, reached: false, running: new Set() };
      let value: unknown;
      try {
        // What an exception filter returns comes back here: an Observable or a promise is
        // awaited (its error is a failure, as `@nestjs/microservices` propagates it), any other
        // value means the filter handled the error (Nest's own filter layer already turned a
        // filter returning `undefined` into a rethrow). Only a filter returns an Observable here
        // (Nest ran the chain's own to its last value): one that completes empty handled nothing.
        const result = await frames.run(frame, proxy, plainData(message), context);
        value = isObservable(result)
          ? await lastValueFrom(result, { defaultValue: NO_VALUE })
          : result;
        if (value === NO_VALUE) {
          throw new EmptyFilterResultError(
            target.stream,
            handlerName,
            context.id,
            frame.failure === undefined ? undefined : { cause: frame.failure.error },
          );
        }
      } catch (error) {
        await settleAll(frame.running);
        if (!frame.reached && isGuardDenial(error)) {
          throw new ForbiddenHandlerError(target.stream, handlerName, context.id, { cause: error });
        }
        throw error;
      }
      await settleAll(frame.running);
      return keepResult ? withReportedFailures(value, frame.returned?.value) : value;
    };
    if (target.instance !== undefined) {
      const proxy = createProxy(target.instance);
      return (message, context) => run(proxy, message, context);
    }
    // A host that is not a singleton: a context id per message, as @nestjs/microservices gives
    // each event, with the message's `StreamShardContext` as its `REQUEST`. Nest builds the host
    // and its request-scoped or transient dependencies and enhancers for that context.
    const resolve = target.resolve as (contextId: ContextId) => Promise<object>;
    // As microservices' `getContextId`: the application's `ContextIdStrategy` (if any) sees the
    // context and may attach a parent (durable providers are then shared per tenant); a durable
    // tree gets the strategy's payload as its `REQUEST`.
    return async (message, context) => {
      const contextId = ContextIdFactory.getByRequest(context);
      const request =
        target.durable === true && contextId.payload !== undefined ? contextId.payload : context;
      this.moduleRef.registerRequestByContextId(request, contextId);
      const instance = await resolve(contextId);
      return run(createProxy(instance, contextId), message, context);
    };
  }
}

/**
 * `ExternalContextCreator` finds the host's module among module *providers* only, so for a
 * controller host it finds none, and enhancer classes (`@UseGuards(SomeGuard)`) would silently
 * resolve to nothing. Its public `getContextModuleKey()` is the fallback it asks then; this view
 * answers it with the module the explorer found the host in. A provider host is found before the
 * fallback is asked, so the view changes nothing for it. (Covered by a controller e2e test.)
 */
function contextCreatorFor(
  contextCreator: ExternalContextCreator,
  moduleKey: string | undefined,
): ExternalContextCreator {
  if (moduleKey === undefined) return contextCreator;
  const view = Object.create(contextCreator) as ExternalContextCreator;
  view.getContextModuleKey = (moduleCtor) =>
    contextCreator.getContextModuleKey(moduleCtor) || moduleKey;
  return view;
}

/**
 * What the pipeline hands to guards, interceptors, pipes, filters and the method as the message
 * (`switchToRpc().getData()`, the message parameter): the message, or each message of a batch, as
 * a plain object with every field (see {@link plainShardMessage}), so that enhancers and pipes that
 * copy it by its own keys (class-transformer, an object spread) keep the payload.
 */
function plainData(message: unknown): unknown {
  return Array.isArray(message)
    ? (message as readonly StreamShardMessage[]).map(plainShardMessage)
    : plainShardMessage(message as StreamShardMessage);
}

/** Calls the bound method with the arguments its parameter layout asks for. */
function directInvoke(
  instance: object,
  method: AnyMethod,
  layout: HandlerParameterLayout,
  keepResult: boolean,
): AnyInvoke {
  const [only] = layout.message;
  const isDefaultLayout =
    layout.message.length === 1 &&
    only?.index === 0 &&
    only.property === undefined &&
    layout.context.length === 1 &&
    layout.context[0] === 1;
  if (isDefaultLayout && keepResult) {
    return async (messages, context) => settle(method.call(instance, messages, context));
  }
  if (isDefaultLayout) {
    // a method that returns synchronously is done: no promise, no extra turn of the event loop
    return (message, context) => settleSync(method.call(instance, message, context));
  }
  const length = Math.max(-1, ...layout.message.map((slot) => slot.index), ...layout.context) + 1;
  return async (message, context) => {
    const args: unknown[] = [];
    args.length = length;
    for (const slot of layout.message) {
      args[slot.index] =
        slot.property === undefined
          ? message
          : (message as unknown as Record<string, unknown>)[slot.property];
    }
    for (const index of layout.context) args[index] = context;
    const value = await settle(method.apply(instance, args));
    return keepResult ? value : undefined;
  };
}

/** Waits for an Observable's completion (an empty one completes too); passes anything else on. */
/**
 * `undefined` when `result` is a plain value (the method finished synchronously), otherwise a
 * promise of its completion (a promise or thenable, an Observable run to completion).
 */
function settleSync(result: unknown): Promise<void> | undefined {
  if (result === undefined || result === null) return undefined;
  if (isObservable(result)) return lastValueFrom(result, { defaultValue: undefined }).then(noop);
  if (typeof (result as { then?: unknown }).then === 'function') {
    return Promise.resolve(result as PromiseLike<unknown>).then(noop);
  }
  return undefined;
}

function noop(): void {}

function settle(result: unknown): unknown {
  return isObservable(result) ? lastValueFrom(result, { defaultValue: undefined }) : result;
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/** Waits until every call in `running` has settled (calls started meanwhile included). */
async function settleAll(running: ReadonlySet<Promise<unknown>>): Promise<void> {
  while (running.size > 0) await Promise.all(running);
}

function isGuardDenial(error: unknown): boolean {
  return error instanceof ForbiddenException && error.message === GUARD_DENIAL_MESSAGE;
}

function anyEnhancer(enhancers: DeclaredEnhancers): boolean {
  return enhancers.guards || enhancers.interceptors || enhancers.pipes || enhancers.filters;
}

/** The class that declares `methodName` (where parameter decorators stored their metadata). */
function paramsHostOf(hostPrototype: object, methodName: string): Function {
  let prototype: object | null = hostPrototype;
  while (prototype !== null && !Object.prototype.hasOwnProperty.call(prototype, methodName)) {
    prototype = Object.getPrototypeOf(prototype) as object | null;
  }
  return (
    (prototype?.constructor as Function | undefined) ??
    (hostPrototype as { constructor: Function }).constructor
  );
}
