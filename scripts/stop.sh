#!/usr/bin/env bash
# Stops the clusters that `make run`, `make test` and `make bench` started.
source "$(dirname "$0")/lib.sh"

# The worker agent make run started: SIGTERM (it hands back what runs and exits), SIGKILL after
# 15 s. `stop.sh agent` stops only the agent (and the page).
pidfile="$(cluster_dir run)/agent.pid"
if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    if [ -n "$pid" ] && grep -qa pg_jobs_agent "/proc/$pid/cmdline" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
fi
# The SCHED page make run started.
pidfile="$(cluster_dir run)/web.pid"
if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    if [ -n "$pid" ] && grep -qa pg_jobs_web "/proc/$pid/cmdline" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
fi
[ "${1:-}" = agent ] && exit 0

for name in run test bench; do stop_cluster "$name"; done
