import { InvalidRoutingError } from '../errors/producer/invalid-routing.error.js';
import { RoutingFetchError } from '../errors/producer/routing-fetch.error.js';
import { CompiledRouting } from './compiled-routing.js';
import type { RoutingSource } from '../interfaces/routing-source.interface.js';

interface Flight {
  generation: number;
  promise: Promise<CompiledRouting>;
}

/**
 * Routing metadata per stream, fetched once through a {@link RoutingSource} and kept until
 * invalidated (a write refused with `STALE_ROUTING` invalidates it). Concurrent callers share
 * one fetch (single flight).
 */
export class RoutingCache {
  private readonly entries = new Map<string, CompiledRouting>();
  private readonly flights = new Map<string, Flight>();
  private readonly generations = new Map<string, number>();

  constructor(private readonly source: RoutingSource) {}

  /** The cached routing of `stream`, if any (no fetch). */
  peek(stream: string): CompiledRouting | undefined {
    return this.entries.get(stream);
  }

  /**
   * The routing of `stream`, fetched if it is not cached.
   *
   * @throws RoutingFetchError when the source fails; InvalidRoutingError when its answer is
   *   inconsistent.
   */
  get(stream: string): Promise<CompiledRouting> {
    const cached = this.entries.get(stream);
    if (cached !== undefined) return Promise.resolve(cached);
    const generation = this.generations.get(stream) ?? 0;
    const flight = this.flights.get(stream);
    if (flight !== undefined && flight.generation === generation) return flight.promise;
    // Deferred one tick, so the flight is registered before the fetch can settle.
    const promise = Promise.resolve().then(() => this.fetch(stream, generation));
    this.flights.set(stream, { generation, promise });
    return promise;
  }

  /**
   * Drops the cached routing of `stream`, so the next `get` fetches it again. With
   * `staleEpoch`, only when the cached routing is not already newer than that epoch (another
   * caller refreshed it meanwhile).
   */
  invalidate(stream: string, staleEpoch?: number): void {
    const cached = this.entries.get(stream);
    if (staleEpoch !== undefined && cached !== undefined && cached.routingEpoch > staleEpoch)
      return;
    this.entries.delete(stream);
    this.generations.set(stream, (this.generations.get(stream) ?? 0) + 1);
  }

  private async fetch(stream: string, generation: number): Promise<CompiledRouting> {
    try {
      let compiled: CompiledRouting;
      try {
        compiled = new CompiledRouting(await this.source.fetchRouting(stream));
      } catch (error) {
        throw error instanceof InvalidRoutingError ? error : new RoutingFetchError(stream, error);
      }
      if (compiled.stream !== stream) {
        throw new InvalidRoutingError(
          stream,
          `the coordinator answered for stream ${compiled.stream}`,
        );
      }
      if ((this.generations.get(stream) ?? 0) === generation) this.entries.set(stream, compiled);
      return compiled;
    } finally {
      if (this.flights.get(stream)?.generation === generation) this.flights.delete(stream);
    }
  }
}
