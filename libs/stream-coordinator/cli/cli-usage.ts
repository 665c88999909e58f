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

Options:
  --json           machine-readable output (events: one JSON object per line)
  --url URL        coordinator base URL (default: $COORDINATOR_URL, else http://127.0.0.1:7400)
  --token TOKEN    bearer token (default: $COORDINATOR_ADMIN_TOKEN, else $COORDINATOR_TOKEN, else
                   $COORDINATOR_VIEWER_TOKEN: enough for the read commands)
  --timeout MS     per-request timeout (default 10000)
  -h, --help       this text

Exit codes: 0 success, 1 the request failed (the coordinator's error code and message are
printed), 2 bad command line.`;
