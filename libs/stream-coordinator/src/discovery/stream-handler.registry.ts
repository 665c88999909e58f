import { Injectable } from '@nestjs/common';
import { InjectStreamCoordinatorOptions } from '../decorators/inject-stream-coordinator-options.decorator.js';
import { DuplicateStreamHandlerError } from '../errors/duplicate-stream-handler.error.js';
import type { ResolvedStreamCoordinatorOptions } from '../interfaces/resolved-stream-coordinator-options.interface.js';
import type { HandlerInvocationPath } from './handler-invoker.factory.js';
import type { StreamHandlerDefinition } from './stream-handler-definition.interface.js';

/**
 * A definition as registered, with the hook that builds its call path ahead of the first message.
 *
 * @internal
 */
export interface StreamHandlerRegistration extends StreamHandlerDefinition {
  /** Builds the call path now and says which one it is. */
  readonly prepare?: () => HandlerInvocationPath;
}

/**
 * The stream handlers of one application: stream → handler. Filled by the explorer during
 * `onModuleInit` of the module, complete from `onApplicationBootstrap` on. An instance per
 * application (no static state), so two applications in one process never see each other's
 * handlers.
 */
@Injectable()
export class StreamHandlerRegistry {
  private readonly handlers = new Map<string, StreamHandlerRegistration>();
  private readonly paths = new Map<string, HandlerInvocationPath>();

  constructor(
    @InjectStreamCoordinatorOptions() private readonly options: ResolvedStreamCoordinatorOptions,
  ) {}

  /**
   * Adds a handler.
   *
   * @throws DuplicateStreamHandlerError when the stream already has one (naming both).
   */
  register(registration: StreamHandlerRegistration): void {
    const existing = this.handlers.get(registration.stream);
    if (existing !== undefined) {
      throw new DuplicateStreamHandlerError(
        registration.stream,
        `${existing.className}.${existing.methodName}`,
        `${registration.className}.${registration.methodName}`,
      );
    }
    this.handlers.set(registration.stream, registration);
  }

  /** The handler of a stream, if any. */
  get(stream: string): StreamHandlerDefinition | undefined {
    return this.handlers.get(stream);
  }

  /** Whether a stream has a handler. */
  has(stream: string): boolean {
    return this.handlers.has(stream);
  }

  /** The handled streams, in name order (the order the coordinator uses). */
  streams(): string[] {
    return [...this.handlers.keys()].sort();
  }

  /** Every handler, in stream name order. */
  definitions(): StreamHandlerDefinition[] {
    return this.streams().map((stream) => this.handlers.get(stream)!);
  }

  /** Number of handlers. */
  get size(): number {
    return this.handlers.size;
  }

  /**
   * Whether this application only produces: `publishOnly: true`, or no handler at all (an
   * application without handlers never joins the group, whatever `publishOnly` says).
   */
  isPublishOnly(): boolean {
    return this.options.publishOnly === true || this.handlers.size === 0;
  }

  /**
   * Builds every handler's call path now (the explorer calls this at bootstrap so setup errors
   * surface there rather than on the first message).
   */
  prepare(): void {
    for (const [stream, registration] of this.handlers) {
      if (registration.prepare !== undefined) this.paths.set(stream, registration.prepare());
    }
  }

  /** How a stream's handler is called, once prepared: `direct` or `pipeline`. */
  invocationPath(stream: string): HandlerInvocationPath | undefined {
    return this.paths.get(stream) ?? this.handlers.get(stream)?.prepare?.();
  }
}
