import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';

// Placeholder entry point; replaced by the coordinator bootstrap.
console.log(new KeySpace(process.env.KEY_PREFIX ?? 'rsc').groupsIndexKey());
