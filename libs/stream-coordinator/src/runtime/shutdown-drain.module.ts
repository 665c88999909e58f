import { Injectable, Module, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { ShutdownOrderError } from '../errors/shutdown-order.error.js';

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
 * signal with `enableShutdownHooks()` alike. It has no other teardown hook, so nothing else moves.
 *
 * Nest has no public API for "first teardown hook"; this relies on `Module.distance` (public on
 * Nest's module class) deciding the hook order from `init()` on. `onModuleInit` (which Nest runs
 * after it fixed that order) checks the module is still the nearest one and fails the bootstrap
 * with a {@link ShutdownOrderError} if not, so a Nest change makes this fail loudly, not silently.
 *
 * @internal
 */
@Injectable()
export class ShutdownDrain implements OnModuleInit, OnModuleDestroy {
  private readonly tasks: DrainTask[] = [];

  constructor(private readonly modules: ModulesContainer) {
    const { own, others } = this.partition();
    const lowest = Math.min(1, ...others.map((m) => m.distance));
    for (const m of own) {
      m.distance = lowest - 1;
      if (m.distance !== lowest - 1)
        throw new ShutdownOrderError(
          `Nest ignored the distance set on ${StreamCoordinatorDrainModule.name} (${lowest - 1}; reads ${m.distance})`,
        );
    }
  }

  /** Checks (once Nest fixed the hook order) that the drain module still comes first. */
  onModuleInit(): void {
    const { own, others } = this.partition();
    const highest = Math.max(...own.map((m) => m.distance));
    const before = others.filter((m) => m.distance <= highest);
    if (before.length > 0)
      throw new ShutdownOrderError(
        `module(s) ${before.map((m) => `${m.name} (distance ${m.distance})`).join(', ')} would be torn down before or with ${StreamCoordinatorDrainModule.name} (distance ${highest})`,
      );
  }

  private partition() {
    const all = [...this.modules.values()];
    return {
      own: all.filter((m) => m.metatype === StreamCoordinatorDrainModule),
      others: all.filter((m) => m.metatype !== StreamCoordinatorDrainModule),
    };
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
