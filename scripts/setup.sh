#!/usr/bin/env bash
# Installs what building and running pg_jobs needs; quick when everything is already there.
source "$(dirname "$0")/lib.sh"

# chromium and chromium-driver: the SCHED page's browser tests (scripts/web_tests.sh).
packages=(postgresql-15 postgresql-server-dev-15 libclang-dev clang sudo make chromium chromium-driver)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Debian starts a cluster of its own on the default port; ours use other ports, so it may stay.

if ! cargo pgrx --version 2>/dev/null | grep -q "$PGRX_VERSION"; then
    log "installing cargo-pgrx $PGRX_VERSION (about 5 minutes)"
    cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
fi

if ! grep -qs "pg15 = \"$PG_CONFIG\"" "${PGRX_HOME:-$HOME/.pgrx}/config.toml"; then
    log "pointing pgrx at PostgreSQL 15"
    cargo pgrx init --pg15 "$PG_CONFIG" >/dev/null
fi

log "building and installing the extension"
cd "$ROOT"
install_extension
