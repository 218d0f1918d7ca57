# Shared by the scripts in this folder: where things are, and how to run as the database's user.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# PG_BIN may name another PostgreSQL 15 installation (a relocated copy, for instance).
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PG_CONFIG=$PG_BIN/pg_config
PGXS_TEST=$(cd "$PG_BIN/../lib/pgxs/src/test" && pwd)
PGRX_VERSION=0.18.1

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Postgres refuses to run as root; as root we run the server as the OS user postgres.
as_db_user() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# A folder under target/ the server's user can write; if that user cannot reach target/ (a
# checkout inside a private home folder), a folder under /var/tmp keyed by the checkout instead.
cluster_dir() {
    local name=$1 dir="$ROOT/target/$1"
    mkdir -p "$ROOT/target"
    if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$ROOT/target"; then
        dir="/var/tmp/pg_jobs-$(printf %s "$ROOT" | md5sum | cut -c1-8)/$name"
    fi
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
    printf %s "$dir"
}

# start_cluster NAME PORT [DATABASE]: a cluster made on first use, with pg_jobs preloaded and its
# background worker in DATABASE (default pg_jobs); DATABASE "-" means not preloaded at all.
start_cluster() {
    local dir port=$2 database=${3:-pg_jobs} preload
    preload="shared_preload_libraries = 'pg_jobs'
pg_jobs.database_name = '$database'"
    [ "$database" = - ] && preload="# pg_jobs deliberately not preloaded"
    dir=$(cluster_dir "$1")
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        as_db_user "$PG_BIN/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log"
        cat >>"$dir/data/postgresql.conf" <<CONF
port = $port
listen_addresses = 'localhost'
unix_socket_directories = '/tmp'
$preload
max_connections = 200
log_min_messages = warning
CONF
    fi
    # The port given wins over the one the cluster was made with (BENCH_PORT on an old cluster).
    if ! as_db_user "$PG_BIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        as_db_user "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-p $port" -w start >/dev/null
    fi
    printf %s "$dir"
}

# install_extension: the release build into PG_BIN's PostgreSQL. Every file is written beside its
# place and renamed over it, never overwritten in place: a running server that preloads the
# library keeps the file it has mapped (an overwrite crashed it: "unrecognized function API
# version", then a segfault) and loads the new one when it restarts.
install_extension() {
    local built file
    cargo pgrx package --pg-config "$PG_CONFIG" >/dev/null
    built="$ROOT/target/release/pg_jobs-pg15"
    (cd "$built" && find . -type f) | while read -r file; do
        file=${file#.}
        as_root install -D -m "$([ "${file##*.}" = so ] && echo 755 || echo 644)" "$built$file" "$file.new" &&
            as_root mv -f "$file.new" "$file" || exit 1
    done
}

stop_cluster() {
    local dir
    dir=$(cluster_dir "$1")
    if [ -f "$dir/data/PG_VERSION" ]; then
        as_db_user "$PG_BIN/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
    fi
}
