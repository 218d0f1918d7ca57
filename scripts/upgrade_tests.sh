# The upgrade test: a release's package installed, filled with rows of every kind
# (tests/upgrade/fill.sql), the server stopped, the new package unpacked over it (library,
# control file, scripts, the upgrade scripts among them), the server started, ALTER EXTENSION
# pg_jobs UPDATE; then every table's rows are as they were (tests/upgrade/fingerprint.sql), the
# version is the new one, and the API works on the old rows (tests/upgrade/check.sql).
# PG_JOBS_UPGRADE_FROM names the previous release's .deb; until the first release (README:
# Upgrades) both ends are the current package. Sourced by package_tests.sh.

run_upgrade_tests() {
    local from=$1 to=$2 port=$3 root before after version expected
    local fill="$ROOT/tests/upgrade/fill.sql" fingerprint="$ROOT/tests/upgrade/fingerprint.sql"
    expected=$(dpkg-deb -f "$to" Version)
    root=$(package_root)
    package_unpack "$root" "$from"
    # In a database of its own: the launcher works in postgres, and would change the rows.
    cp "$fill" "$fingerprint" "$ROOT/tests/upgrade/check.sql" "$root/"
    if package_start "$root" "$port" &&
        package_psql "$root" "$port" postgres -c "CREATE DATABASE upgrade" &&
        package_psql "$root" "$port" upgrade -c "CREATE EXTENSION pg_jobs CASCADE" -f "$root/fill.sql" >"$OUT/upgrade-fill.log" 2>&1 &&
        before=$(package_psql "$root" "$port" upgrade -f "$root/fingerprint.sql") &&
        package_stop "$root" && package_unpack "$root" "$to" && package_start "$root" "$port" &&
        package_psql "$root" "$port" upgrade -c "ALTER EXTENSION pg_jobs UPDATE" >>"$OUT/upgrade-fill.log" 2>&1 &&
        after=$(package_psql "$root" "$port" upgrade -f "$root/fingerprint.sql") &&
        version=$(package_psql "$root" "$port" upgrade -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_jobs'"); then
        echo "upgrade: $(dpkg-deb -f "$from" Version) filled, then ALTER EXTENSION pg_jobs UPDATE with $expected ... ok"
        count 1 0
        if [ -n "$before" ] && [ "$before" = "$after" ] && [ "$(grep -c . <<<"$before")" -gt 40 ]; then
            echo "upgrade: every row of every table as it was ($(grep -c . <<<"$before") tables) ... ok"
            count 1 0
        else
            diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") | head -n 20
            echo "upgrade: every row of every table as it was ... FAILED"
            count 0 1
        fi
        if [ "$version" = "$expected" ]; then
            echo "upgrade: the extension's version is $expected ... ok"
            count 1 0
        else
            echo "upgrade: the extension's version is $expected ... FAILED: $version"
            count 0 1
        fi
        if package_psql "$root" "$port" upgrade -f "$root/check.sql" >"$OUT/upgrade-check.log" 2>&1; then
            echo "upgrade: the API works on the rows made before (keys, claims, history, schedules, batch, routines, compute) ... ok"
            count 1 0
        else
            cat "$OUT/upgrade-check.log"
            echo "upgrade: the API works on the rows made before ... FAILED"
            count 0 1
        fi
    else
        tail -n 20 "$OUT/upgrade-fill.log" "$root/server.log" 2>/dev/null
        echo "upgrade: filled, then ALTER EXTENSION pg_jobs UPDATE ... FAILED"
        count 0 1
    fi
    package_stop "$root"
    rm -rf "$root"
}
