#!/bin/sh
# Prints the Redis ACL file (users.acl) of one deployment: a user per role, each limited to the
# keys and commands its role needs under one KEY_PREFIX (docs/operations.md, "Security" › "Redis";
# the key layout is docs/protocol.md §13).
#
#   KEY_PREFIX=rsc REDIS_COORDINATOR_PASSWORD=… REDIS_WORKER_PASSWORD=… \
#     REDIS_PRODUCER_PASSWORD=… sh docker/redis/users-acl.sh > users.acl
#   redis-server --aclfile users.acl …
#
# Users (passwords are stored as SHA-256 hashes; each must be at least 16 characters):
# - default: off (no unauthenticated access at all);
# - rsc-coordinator: every key and channel under the prefix, no dangerous commands but INFO and
#   CONFIG GET (the coordinator checks maxmemory-policy);
# - rsc-worker: shard streams, read gates and dead-letter streams read-write, shard meta hashes
#   (fences, `state`) read-only, nothing of the control plane (`{@g:…}` group state, `{@m}`
#   catalog), the nudge channels only; the commands the library's reader, scripts and lag
#   sampler send;
# - rsc-producer: append to shard streams through the library's publish script (it reads the meta
#   hash's `state`), nothing else.
# POSIX sh with sha256sum or shasum: runs in the redis:7-alpine image (docker/redis/start.sh).
set -eu

prefix="${KEY_PREFIX:-rsc}"
case "$prefix" in
  '' | *[!A-Za-z0-9._-]*)
    echo "users-acl.sh: KEY_PREFIX must be 1-64 characters of [A-Za-z0-9._-], got '$prefix'" >&2
    exit 2
    ;;
esac
if [ "${#prefix}" -gt 64 ]; then
  echo "users-acl.sh: KEY_PREFIX is longer than 64 characters" >&2
  exit 2
fi

hash() {
  if command -v sha256sum >/dev/null 2>&1; then
    printf '%s' "$1" | sha256sum | cut -d ' ' -f 1
  else
    printf '%s' "$1" | shasum -a 256 | cut -d ' ' -f 1
  fi
}

password() {
  eval "value=\${$1:-}"
  if [ "${#value}" -lt 16 ]; then
    echo "users-acl.sh: $1 must be set to at least 16 characters" >&2
    exit 2
  fi
  case "$value" in
    replace-me*)
      echo "users-acl.sh: $1 is still the shipped placeholder; set a real password" >&2
      exit 2
      ;;
  esac
  hash "$value"
}

coordinator=$(password REDIS_COORDINATOR_PASSWORD)
worker=$(password REDIS_WORKER_PASSWORD)
producer=$(password REDIS_PRODUCER_PASSWORD)

# Data-plane key patterns. `[^@]` keeps the control plane out: its tags start with `@`.
shard="${prefix}:{[^@]*}"
# What every client sends on connect (ioredis: AUTH/HELLO, CLIENT SETNAME, the INFO ready check,
# SELECT; CLUSTER SLOTS/SHARDS and READONLY on Redis Cluster).
connect='+ping +echo +hello +auth +select +info +client|setname +client|getname +client|id +readonly +cluster|slots +cluster|shards +cluster|info +cluster|nodes'

echo 'user default off resetkeys resetchannels -@all'
echo "user rsc-coordinator on #$coordinator resetkeys resetchannels ~${prefix}:* &${prefix}:* +@all -@dangerous +config|get $connect"
echo "user rsc-worker on #$worker resetkeys resetchannels %RW~${shard} %RW~${shard}:gate:* %RW~${shard}:dlq %R~${shard}:meta &${prefix}:nudge:* -@all $connect +evalsha +eval +hget +xreadgroup +xack +xclaim +xpending +xadd +xgroup|create +xgroup|createconsumer +xgroup|delconsumer +xinfo|groups +subscribe +unsubscribe"
echo "user rsc-producer on #$producer resetkeys resetchannels %RW~${shard} %R~${shard}:meta -@all $connect +evalsha +eval +hget +xadd"
