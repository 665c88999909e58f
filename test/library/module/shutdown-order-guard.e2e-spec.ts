import { Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { describe, expect, it } from 'vitest';
import { bootContext } from './fixtures.js';
import { ShutdownOrderError } from './library.js';

const DRAIN_MODULE = 'StreamCoordinatorDrainModule';

// Issue 15 item 2 relies on Module.distance deciding Nest's teardown order (there is no public
// "first teardown hook"). If a Nest version decided that order otherwise — e.g. recomputed the
// distances after the providers were created — the drain would silently run after the user's
// onModuleDestroy again. The bootstrap must fail loudly instead.
describe('module: the drain module stays the first teardown hook, or bootstrap fails', () => {
  it('comes before every other module of a real application', async () => {
    @Module({})
    class FeatureModule {}
    const app = await bootContext({ imports: [FeatureModule] });
    try {
      const modules = [...app.get(ModulesContainer).values()];
      const drain = modules.filter((m) => m.name === DRAIN_MODULE);
      expect(drain).toHaveLength(1);
      const others = modules.filter((m) => m.name !== DRAIN_MODULE);
      expect(others.length).toBeGreaterThan(2);
      for (const m of others) expect(m.distance, m.name).toBeGreaterThan(drain[0]!.distance);
    } finally {
      await app.close();
    }
  });

  it('refuses to start when a module comes before it once the hook order is fixed', async () => {
    // stands for a Nest that recomputes distances after the providers were created
    @Injectable()
    class Recompute implements OnModuleInit {
      constructor(private readonly modules: ModulesContainer) {}
      onModuleInit(): void {
        for (const m of this.modules.values()) if (m.name === 'EarlyModule') m.distance = -1_000;
      }
    }
    @Module({ providers: [Recompute] })
    class EarlyModule {}
    const booting = bootContext({ imports: [EarlyModule] });
    await expect(booting).rejects.toBeInstanceOf(ShutdownOrderError);
    await expect(booting).rejects.toThrow(/EarlyModule \(distance -1000\)/);
  });
});
