#!/usr/bin/env bash
# Start a throwaway PostgreSQL server on 127.0.0.1 for the example tests.
#
#   eval "$(bash scripts/start-postgres.sh)"      # sets POOLSPLIT_PG_DSN, POOLSPLIT_PG_DIR
#   bash scripts/start-postgres.sh stop "$POOLSPLIT_PG_DIR"
#
# Installs the Debian server package when no initdb is found (root only), runs
# the server as the unprivileged "postgres" user when started as root (initdb
# refuses root), in a fresh temporary directory, on a free port, with trust
# authentication on loopback only. Durability is off: it is test data.
# stdout carries only the export lines; progress goes to stderr.
set -euo pipefail

find_bin() {
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        if [ -x "$dir/initdb" ]; then echo "$dir"; return 0; fi
    done
    command -v initdb >/dev/null 2>&1 && dirname "$(command -v initdb)" && return 0
    return 1
}

as_owner() {  # run a command as the owner of the data directory
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

if [ "${1:-}" = "stop" ]; then
    dir=${2:?usage: start-postgres.sh stop DIR}
    bin=$(find_bin)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast stop >&2 || true
    rm -rf "$dir"
    exit 0
fi

if ! bin=$(find_bin); then
    if [ "$(id -u)" != 0 ]; then
        echo "start-postgres: no initdb found and not root, cannot install" >&2
        exit 1
    fi
    echo "start-postgres: installing postgresql-15" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q --no-install-recommends postgresql-15 >&2
    bin=$(find_bin)
fi

dir=$(mktemp -d /tmp/poolsplit-pg.XXXXXX)
chmod 755 "$dir"
if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown postgres "$dir"
fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

as_owner "$bin/initdb" -D "$dir/data" -U poolsplit -A trust -E UTF8 --no-sync >&2
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    start >&2

echo "export POOLSPLIT_PG_DSN=postgresql://poolsplit@127.0.0.1:$port/postgres"
echo "export POOLSPLIT_PG_DIR=$dir"
