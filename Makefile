# The README's commands. Each one installs what it needs first.
.PHONY: run test bench stop package install

run:
	./scripts/run.sh

test:
	./scripts/test.sh

bench:
	./scripts/bench.sh

stop:
	./scripts/stop.sh

package:
	./scripts/package.sh

install:
	./scripts/setup.sh
