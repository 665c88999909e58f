/**
 * One member-side metric: its name without the prefix, type, labels and help text. The single
 * source for the metrics the library registers and for the README's table.
 *
 * @publicApi
 */
export interface MemberMetricDefinition {
  /** Name without the configured prefix (`stream_coordinator_` by default). */
  readonly name: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly labels: readonly string[];
  readonly help: string;
}

/**
 * Every member-side metric (docs/protocol.md §15.2). Label cardinality is bounded: `group` is the
 * one group of the application, `stream` one of its handled streams, `shard` a shard id of such a
 * stream (at most the stream's shard count; only the shards this member holds now have series: a
 * shard's series are removed when the member releases it); `reason`, `kind`, `cause` and `phase`
 * take the few values listed in the help. No member ids, message ids or keys are ever labels.
 *
 * @publicApi
 */
export const MEMBER_METRICS = {
  messagesHandled: {
    name: 'messages_handled_total',
    type: 'counter',
    labels: ['group', 'stream', 'shard'],
    help: 'Messages whose handler resolved (they are then acknowledged).',
  },
  handlerDuration: {
    name: 'handler_duration_seconds',
    type: 'histogram',
    labels: ['group', 'stream'],
    help: 'Time the handler took for messages it handled.',
  },
  handlerFailures: {
    name: 'handler_failures_total',
    type: 'counter',
    labels: ['group', 'stream', 'shard'],
    help: 'Handler calls that threw (the message is retried, then dead-lettered).',
  },
  retries: {
    name: 'message_retries_total',
    type: 'counter',
    labels: ['group', 'stream', 'shard'],
    help: 'Redeliveries of failed messages (each one is a Redis delivery).',
  },
  deadLettered: {
    name: 'messages_dead_lettered_total',
    type: 'counter',
    labels: ['group', 'stream', 'shard', 'reason'],
    help: 'Messages written to the dead-letter stream, by reason (max-deliveries, undecodable, non-retryable).',
  },
  dropped: {
    name: 'messages_dropped_total',
    type: 'counter',
    labels: ['group', 'stream', 'shard', 'reason'],
    help: 'Messages given up without a dead letter (dead-lettering off), by reason (max-deliveries, undecodable, non-retryable).',
  },
  shardsLost: {
    name: 'shards_lost_total',
    type: 'counter',
    labels: ['group', 'stream'],
    help: 'Shards given up because the data-plane fence named another member.',
  },
  readerErrors: {
    name: 'reader_errors_total',
    type: 'counter',
    labels: ['group', 'stream', 'kind'],
    help: 'Redis calls of shard readers that failed (kind=connection) or did not answer in time (kind=watchdog).',
  },
  assignmentChanges: {
    name: 'assignment_changes_total',
    type: 'counter',
    labels: ['group'],
    help: 'Heartbeat responses that changed the set of shards this member may process.',
  },
  fenced: {
    name: 'fenced_total',
    type: 'counter',
    labels: ['group', 'cause'],
    help: 'Times this member dropped every shard: fenced by the coordinator (cause=coordinator) or on its own because the coordinator could not be reached (cause=self).',
  },
  ownedShards: {
    name: 'owned_shards',
    type: 'gauge',
    labels: ['group', 'stream'],
    help: 'Shards this member holds a reader for (starting, claiming or reading).',
  },
  assignedShards: {
    name: 'assigned_shards',
    type: 'gauge',
    labels: ['group', 'stream'],
    help: 'Shards the coordinator lets this member process.',
  },
  shardLag: {
    name: 'shard_lag',
    type: 'gauge',
    labels: ['group', 'stream', 'shard'],
    help: 'Entries of an owned shard not yet delivered to the group (XINFO GROUPS lag), sampled periodically; absent while Redis cannot tell.',
  },
  shardPending: {
    name: 'shard_pending',
    type: 'gauge',
    labels: ['group', 'stream', 'shard'],
    help: 'Entries of an owned shard delivered to the group and not yet acknowledged (XINFO GROUPS pending), sampled periodically.',
  },
  heartbeatAge: {
    name: 'heartbeat_age_seconds',
    type: 'gauge',
    labels: ['group'],
    help: 'Seconds since the last heartbeat the coordinator answered was sent.',
  },
  memberEpoch: {
    name: 'member_epoch',
    type: 'gauge',
    labels: ['group'],
    help: "This member's epoch (0 while joining or after being fenced).",
  },
  memberPhase: {
    name: 'member_phase',
    type: 'gauge',
    labels: ['group', 'phase'],
    help: "1 for the member runtime's current phase (idle, joining, active, self-fenced, failing, leaving, stopped), 0 for the others.",
  },
} as const satisfies Record<string, MemberMetricDefinition>;

/** Buckets of the handler duration histogram, in seconds. @publicApi */
export const HANDLER_DURATION_BUCKETS: readonly number[] = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];
