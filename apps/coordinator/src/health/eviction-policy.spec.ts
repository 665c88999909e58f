import { describe, expect, it } from 'vitest';
import { evictionVerdict } from './eviction-policy.js';

const policy = (name: string) => ({ reply: ['maxmemory-policy', name] });

describe('evictionVerdict', () => {
  it('is quiet only when every server answered noeviction', () => {
    expect(evictionVerdict([policy('noeviction'), policy('noeviction')])).toEqual({
      maxmemoryPolicy: 'noeviction',
      warning: null,
    });
  });

  it('names the evicting policy of any server', () => {
    const status = evictionVerdict([policy('noeviction'), policy('allkeys-lru')]);
    expect(status.maxmemoryPolicy).toBe('allkeys-lru');
    expect(status.warning).toMatch(/maxmemory-policy is allkeys-lru.*noeviction/);
  });

  it('a Cluster client that knows no master yet is unreadable, not noeviction', () => {
    const status = evictionVerdict([]);
    expect(status.maxmemoryPolicy).toBeNull();
    expect(status.warning).toMatch(/could not read Redis maxmemory-policy \(no Redis server/);
  });

  it('an empty CONFIG GET reply (a proxy hiding the parameter) is unreadable, not "unknown"', () => {
    const status = evictionVerdict([{ reply: [] }]);
    expect(status.maxmemoryPolicy).toBeNull();
    expect(status.warning).toMatch(/could not read.*answered no value/);
  });

  it('one refused server among noeviction ones is still a warning', () => {
    const status = evictionVerdict([policy('noeviction'), { error: 'NOPERM config|get' }]);
    expect(status).toEqual({
      maxmemoryPolicy: null,
      warning: expect.stringMatching(/NOPERM config\|get.*make sure it is noeviction/) as string,
    });
  });
});
