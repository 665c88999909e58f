import { describe, expect, it } from 'vitest';
import { isShardMetaField } from './legacy-key-layout.js';

describe('isShardMetaField (splitting an old shared {g:<n>}:meta hash)', () => {
  it.each(['state', 'origin', 'opener', 'owner:0', 'gate:shop', 'fence-order:0'])(
    '%s belongs to the shard',
    (field) => expect(isShardMetaField(field)).toBe(true),
  );
  it.each(['version', 'commitId', 'groupEpoch', 'createdAt', 'pendingFences', 'incarnationFloor'])(
    '%s belongs to the group',
    (field) => expect(isShardMetaField(field)).toBe(false),
  );
});
