import { describe, expect, it } from 'vitest';
import {
  BenchNodeFlagError,
  interleaveBySlot,
  listedMajors,
  parseNodeFlag,
} from './bench-nodes.js';

describe('listedMajors', () => {
  it('reads the majors of .ci/node-versions, skipping comments', () => {
    const text = [
      '# Node.js releases the suite runs on',
      '# One line each: major, exact version, integrity, ioredis major',
      '20 system - 6',
      '22 22.23.5 sha512-abc 5',
      '24 24.22.3 sha512-def 6',
      '',
    ].join('\n');
    expect(listedMajors(text)).toEqual([20, 22, 24]);
  });
});

describe('parseNodeFlag', () => {
  const listed = [20, 22, 24];

  it('is undefined without the flag (the default run is unchanged)', () => {
    expect(parseNodeFlag(['--only=throughput', '--full'], listed)).toBeUndefined();
  });

  it('keeps the majors in the order given', () => {
    expect(parseNodeFlag(['--only=latency', '--node=24,20'], listed)).toEqual([24, 20]);
    expect(parseNodeFlag(['--node=20, 22'], listed)).toEqual([20, 22]);
  });

  it.each([
    ['--node=', /"" is not a Node major/],
    ['--node=v24', /"v24" is not a Node major/],
    ['--node=20,,24', /"" is not a Node major/],
    ['--node=18', /Node 18 is not in \.ci\/node-versions \(listed: 20, 22, 24\)/],
    ['--node=24,24', /Node 24 given twice/],
  ])('rejects %s with a clear error', (flag, message) => {
    expect(() => parseNodeFlag([flag], listed)).toThrow(BenchNodeFlagError);
    expect(() => parseNodeFlag([flag], listed)).toThrow(message);
  });

  it('rejects the flag given twice', () => {
    expect(() => parseNodeFlag(['--node=20', '--node=24'], listed)).toThrow(/give --node= once/);
  });
});

describe('interleaveBySlot', () => {
  it('alternates the releases side by side', () => {
    expect(
      interleaveBySlot([
        ['ours20', 'io5-20', 'io6-20'],
        ['ours24', 'io5-24', 'io6-24'],
      ]),
    ).toEqual(['ours20', 'ours24', 'io5-20', 'io5-24', 'io6-20', 'io6-24']);
  });

  it('keeps one release as it is and takes uneven lists whole', () => {
    expect(interleaveBySlot([['a', 'b']])).toEqual(['a', 'b']);
    expect(interleaveBySlot([['a'], ['x', 'y']])).toEqual(['a', 'x', 'y']);
    expect(interleaveBySlot([])).toEqual([]);
  });
});
