import { describe, expect, it } from 'vitest';
import { groupFigures } from '../metrics/shard-lag-sampler.js';
import { parseXinfoGroups } from './xinfo-groups.js';

const REPLY = [
  ['name', 'g1', 'consumers', 1, 'pending', 3, 'last-delivered-id', '5-0', 'lag', 2],
  [Buffer.from('name'), Buffer.from('g2'), 'pending', 0, 'last-delivered-id', '0-0', 'lag', null],
];

describe('parseXinfoGroups', () => {
  it('reads every group of an XINFO GROUPS reply by name', () => {
    expect([...parseXinfoGroups(REPLY).values()]).toEqual([
      { name: 'g1', pending: 3, lastDeliveredId: '5-0', lag: 2 },
      { name: 'g2', pending: 0, lastDeliveredId: '0-0', lag: null },
    ]);
    expect(parseXinfoGroups('not a list').size).toBe(0);
  });

  it('gives groupFigures the lag and pending of one group', () => {
    expect(groupFigures(REPLY, 'g1')).toEqual({ lag: 2, pending: 3 });
    expect(groupFigures(REPLY, 'g2')).toEqual({ lag: null, pending: 0 });
    expect(groupFigures(REPLY, 'none')).toBeNull();
  });
});
