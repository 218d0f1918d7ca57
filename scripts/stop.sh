#!/usr/bin/env bash
# Stops the clusters that `make run`, `make test` and `make bench` started.
source "$(dirname "$0")/lib.sh"
for name in run test bench; do stop_cluster "$name"; done
