import { Injectable, Module, type OnModuleDestroy } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';

/** Something that must finish before any other provider of the application is torn down. */
export type DrainTask = () => Promise<void>;

/**
 * Runs the drain of the member runtime before every other `onModuleDestroy` of the application.
 *
 * Nest runs the teardown hooks module by module in ascending distance from the root module, and a
 * global module (this library's) has the largest distance: every user module's `onModuleDestroy`
 * would run first, closing the database pools and clients that handlers still use. This provider
 * lives in a module of its own whose distance it sets below every other module's while the
 * application is being created (before Nest orders the modules for the hooks, at `init()`), so
 * its `onModuleDestroy` is the first teardown hook of the application — on `app.close()` and on a
 * signal with `enableShutdownHooks()` alike. It has no other hook, so nothing else moves.
 *
 * @internal
 */
@Injectable()
export class ShutdownDrain implements OnModuleDestroy {
  private readonly tasks: DrainTask[] = [];

  constructor(modules: ModulesContainer) {
    const own = [...modules.values()].filter((m) => m.metatype === StreamCoordinatorDrainModule);
    const others = [...modules.values()].filter((m) => m.metatype !== StreamCoordinatorDrainModule);
    const lowest = Math.min(1, ...others.map((m) => m.distance));
    for (const m of own) m.distance = lowest - 1;
  }

  /** Registers a task the first teardown hook awaits (it must not reject: it logs its own failures). */
  register(task: DrainTask): void {
    this.tasks.push(task);
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.allSettled(this.tasks.map((task) => task()));
  }
}

/**
 * Holds {@link ShutdownDrain} (see there why it is a module of its own).
 *
 * @internal
 */
@Module({ providers: [ShutdownDrain], exports: [ShutdownDrain] })
export class StreamCoordinatorDrainModule {}
