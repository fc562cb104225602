# Every target uses Go 1.27 (generic methods); the go command fetches it once.
export GOTOOLCHAIN := go1.27.3

PACKAGES := ./core/... ./conformance/... ./driver/sqlite/... ./driver/postgres/... ./driver/mysql/... ./contrib/dsn/... ./contrib/otel/... ./contrib/fx/... ./contrib/cli/... ./contrib/console/... ./contrib/avro/... ./contrib/protobuf/... ./contrib/jsonschema/... ./contrib/ccompat/... ./examples/... ./.tests/drivers/... ./.tests/e2e/... ./.tests/scaleout/... ./.tests/release/...
# $(shell) does not see exported variables before GNU make 4.4: name the
# toolchain, or this is the system gofmt, which cannot parse generic methods.
GOFMT = $(shell GOTOOLCHAIN=$(GOTOOLCHAIN) go env GOROOT)/bin/gofmt

.PHONY: demo test vet fmt race bench bench-scale scale-chart services release release-check release-lint tidy

## demo: run the quickstart on an embedded SQLite file (no set-up needed)
demo:
	go run ./examples/quickstart

## test: install and start what the tests need where missing (services), vet,
## then every test on every driver, then the release check (the modules as a
## user outside the repository gets them)
test: services vet
	go test -count=1 -timeout 45m $(PACKAGES)
	$(MAKE) --no-print-directory release-check

# staticcheck, pinned; its configuration is staticcheck.conf (each disabled
# check with its reason).
STATICCHECK = go run honnef.co/go/tools/cmd/staticcheck@v0.8.2

vet: release-lint
	@out=$$($(GOFMT) -l core conformance driver contrib examples .tests 2>&1); if [ -n "$$out" ]; then echo "gofmt needed (or failed):"; echo "$$out"; exit 1; fi
	go vet $(PACKAGES)
	$(STATICCHECK) $(PACKAGES)

fmt:
	$(GOFMT) -w core conformance driver contrib examples .tests

race:
	go test -count=1 -race -timeout 40m $(PACKAGES)

## bench: the benchmarks of every driver, each sqlstreams figure beside its
## raw baseline from the same run (x-raw); one op of Produce100/Consume100 is
## 100 messages, so each moves 20,000 per round; five rounds, about 2 minutes
bench:
	go test -p 1 -run '^$$' -bench 'BenchmarkSQLite$$|BenchmarkPostgres$$|BenchmarkMySQL$$' -benchtime 200x -count 5 -timeout 20m ./.tests/drivers/sqlite ./.tests/drivers/postgres ./.tests/drivers/mysql

## bench-scale: what one claim, poll, Health read and maintenance pass cost
## at two sizes of the work behind them (keys, partitions, retry backlog, log
## size), on every driver
bench-scale:
	go test -p 1 -run '^$$' -bench 'BenchmarkScaleSQLite$$|BenchmarkScalePostgres$$|BenchmarkScaleMySQL$$' -benchtime 20x -timeout 30m ./.tests/drivers/sqlite ./.tests/drivers/postgres ./.tests/drivers/mysql

## scale-chart: bench-scale, then the scale table (printed) and
## docs/benchmarks/scale.svg from its output (kept in SCALE_OUT)
SCALE_OUT ?= /tmp/scale.txt
scale-chart:
	bash -o pipefail -c '$(MAKE) --no-print-directory bench-scale | tee $(SCALE_OUT)'
	go run ./conformance/cmd/scalechart < $(SCALE_OUT)

## services: install and start PostgreSQL and MariaDB when missing
services:
	bash .ci/services.sh

# The release tool builds on its own (GOWORK=off): it must work while the
# workspace is being changed under it.
RELEASE_TOOL = $(CURDIR)/.tests/release/bin/release
$(RELEASE_TOOL): $(wildcard .tests/release/*.go .tests/release/go.mod .tests/release/outside/*/*)
	cd .tests/release && GOWORK=off go build -o $(RELEASE_TOOL) .

## release-lint: published go.mod files carry no replace directive and
## require their siblings at the version in VERSION (part of make vet)
release-lint: $(RELEASE_TOOL)
	$(RELEASE_TOOL) lint

## release-check: publish every module at VERSION into a file-system proxy
## built from the working tree, then, outside the repository with no
## workspace: build and run a program on core + driver/sqlite, go install
## the CLI by version, and run the whole conformance suite from a
## third-party driver module (see CONTRIBUTING.md)
release-check: $(RELEASE_TOOL)
	$(RELEASE_TOOL) check

## release: VERSION=v0.2.0 sets the version of every module, tidies them,
## runs the release check and prints the tags to push (CONTRIBUTING.md)
release: $(RELEASE_TOOL)
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=v0.2.0"; exit 2; }
	$(RELEASE_TOOL) bump $(VERSION)
	$(RELEASE_TOOL) tidy
	$(RELEASE_TOOL) check
	@echo "Commit, then push these tags (one commit, every module):"
	@$(RELEASE_TOOL) tags

## tidy: go mod tidy every module against the working tree's modules
tidy: $(RELEASE_TOOL)
	$(RELEASE_TOOL) tidy
