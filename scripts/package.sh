#!/usr/bin/env bash
# make package: a Debian package of the extension, laid out as Debian's own extension packages
# are (postgresql-15-cron, say): the library in /usr/lib/postgresql/15/lib, the control file and
# SQL script in /usr/share/postgresql/15/extension, depending on postgresql-15. It installs with
# `apt install ./postgresql-15-pg-jobs_<version>_<arch>.deb` on a machine without Rust. Prints
# the package's path last.
source "$(dirname "$0")/lib.sh"
# make test has run setup.sh already (and runs clusters that a reinstall would disturb).
[ "${PG_JOBS_SETUP_DONE:-}" = 1 ] || "$ROOT/scripts/setup.sh"

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n 1)
arch=$(dpkg --print-architecture)
name=postgresql-15-pg-jobs
out="$ROOT/target/package"
tree="$out/${name}_${version}_${arch}"

log "cargo pgrx package"
cd "$ROOT"
cargo pgrx package --pg-config "$PG_CONFIG" >/dev/null
built="$ROOT/target/release/pg_jobs-pg15"

rm -rf "$tree"
mkdir -p "$tree/DEBIAN" "$tree/usr/share/doc/$name"
cp -a "$built/usr" "$tree/"
# The upgrade scripts of released versions (README: Upgrades), beside the installation script.
shopt -s nullglob
for script in "$ROOT"/sql/upgrade/pg_jobs--*--*.sql; do
    cp "$script" "$tree/usr/share/postgresql/15/extension/"
done
shopt -u nullglob
cp "$ROOT/README.md" "$tree/usr/share/doc/$name/README.md"
cp "$ROOT/monitoring/postgres_exporter.yml" "$tree/usr/share/doc/$name/postgres_exporter.yml"
cat >"$tree/usr/share/doc/$name/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: pg_jobs
License: PostgreSQL
COPYRIGHT
size=$(du -sk "$tree/usr" | cut -f1)
cat >"$tree/DEBIAN/control" <<CONTROL
Package: $name
Version: $version
Architecture: $arch
Maintainer: pg_jobs developers <pg_jobs@localhost>
Depends: postgresql-15, libc6, libgcc-s1
Section: database
Priority: optional
Installed-Size: $size
Description: job system inside PostgreSQL 15
 pg_jobs: a lease queue any client can claim from, cron and routine schedules
 run by a background worker, SQL jobs, a compute scheduler with row-level
 security, and batch jobs for a worker agent. Add pg_jobs to
 shared_preload_libraries, restart, and CREATE EXTENSION pg_jobs CASCADE.
CONTROL
dpkg-deb --root-owner-group -Zxz --build "$tree" "$tree.deb" >/dev/null
echo "$tree.deb"
