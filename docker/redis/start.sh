#!/bin/sh
# Entrypoint of the Redis container (docker/compose.yml, docker/k8s/base/redis.yaml): writes the
# ACL file from KEY_PREFIX and the REDIS_*_PASSWORD variables (users-acl.sh, next to this file),
# then runs the image's entrypoint with the container's command plus `--aclfile`. The passwords
# stay in the environment of the Redis container only; the file holds their SHA-256 hashes.
set -eu
acl="${REDIS_ACL_FILE:-/tmp/redis-acl/users.acl}"
mkdir -p "$(dirname "$acl")"
umask 077
sh "$(dirname "$0")/users-acl.sh" >"$acl"
exec docker-entrypoint.sh "$@" --aclfile "$acl"
