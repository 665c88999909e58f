import { describe, expect, it } from 'vitest';
import { formatEvent } from './events.command.js';

describe('rsc events: formatEvent', () => {
  it('shows which assignor a group asked for and which one ran instead', () => {
    const line = formatEvent({
      id: '1-0',
      type: 'ASSIGNOR_FALLBACK',
      at: '2026-01-01T00:00:00.000Z',
      groupEpoch: 7,
      data: {
        assignmentEpoch: 7,
        requested: 'active-standby',
        used: 'uniform',
        membersNaming: 2,
        members: ['a', 'b'],
      },
    });
    expect(line).toBe(
      '2026-01-01T00:00:00.000Z  epoch   7  ASSIGNOR_FALLBACK          requested=active-standby not configured, used=uniform membersNaming=2',
    );
  });
});
