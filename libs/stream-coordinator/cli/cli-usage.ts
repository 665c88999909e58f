/** `rsc --help`. */
export const CLI_USAGE = `rsc — operate a Redis Stream Coordinator

Usage: rsc <command> [arguments] [options]

Commands:
  groups list                              every group: state, epoch, member count
  groups describe <group>                  members with state, epoch, assignment, revoking, target
  streams list                             every stream: shards, routing epoch, reshard progress
  streams describe <stream>                shard keys, routing, reshard progress per old shard
  streams create <stream> --shards N       create a stream (idempotent for the same N)       [admin]
  streams reshard <stream> --shards M      change the shard count                            [admin]
  streams abandon <stream> <group>         give up a group's unread messages in the old shards
                                           of the running reshard (they are deleted)          [admin]
  members remove <group> <member>          remove a member as if its session expired          [admin]
  events tail <group> [-n N] [--after ID] [--follow] [--interval MS] [--all]
                                           the last N events (default 20) or every event after ID;
                                           --follow keeps printing new ones until interrupted
  dlq list <stream> [filters] [--replayed | --not-replayed] [-n N] [--after ID]
                                           dead letters, oldest first (default 50 a page)
  dlq show <stream> <id>                   one dead letter: key, payload, headers, error, stack
  dlq replay <stream> --ids ID,… | [filters] [--limit N] | --all
                                           re-publish by key through the current routing,
                                           each entry once (--all: every one not yet replayed) [admin]
  dlq purge <stream> --ids ID,… | [filters] | --all --yes
                                           delete dead letters for good                       [admin]

  dlq filters: --group G, --reason max-deliveries|undecodable|non-retryable, --error TEXT
  (message or error class, any case), --since T, --until T (T: 30m, 2h, 7d ago, ISO-8601, or ms)

Options:
  --json           machine-readable output (events: one JSON object per line)
  --url URL        coordinator base URL (default: $COORDINATOR_URL, else http://127.0.0.1:7400)
  --token TOKEN    bearer token (default: $COORDINATOR_ADMIN_TOKEN, else $COORDINATOR_TOKEN, else
                   $COORDINATOR_VIEWER_TOKEN: enough for the read commands)
  --timeout MS     per-request timeout (default 10000)
  -h, --help       this text

Exit codes: 0 success, 1 the request failed (the coordinator's error code and message are
printed), 2 bad command line.`;
