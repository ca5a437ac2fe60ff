# The two commands a new machine needs:
#   make demo   the main job: a local ZooKeeper, three local coordinators, each strategy at work
#   make test   gofmt, go vet, staticcheck and the race-enabled tests (what CI runs)

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BENCHSTAT   ?= golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

# Each fuzz target's budget, in inputs rather than seconds: with a duration,
# Go 1.26's fuzzing coordinator can report its own deadline as the target's
# failure when a worker is mid-input as time runs out (golang/go#75804,
# fixed in Go 1.27). 250,000 inputs take 1 to 15 s a target on 2 cores.
FUZZTIME    ?= 250000x

# The Go of the interop/trino module (trino-go-client v1.5.0 needs 1.27):
# the toolchain line of its go.mod, the one place that names it; the main
# module stays on the Go it names. Exported: interop/realservers runs that
# module's probe on it.
INTEROP_TOOLCHAIN ?= $(shell sed -n 's/^toolchain //p' interop/trino/go.mod)
export INTEROP_TOOLCHAIN

.PHONY: all demo test deps demo-deps test-deps fmt-check vet staticcheck unit importer fuzz bench dist

all: test

# What the demo needs that Go does not fetch itself: Debian's zookeeper
# package (and its Java runtime), for the local ZooKeeper it starts.
demo-deps:
	bash scripts/install-zookeeper.sh

# What the tests need besides: Debian's nginx (the nginx test rig's tests
# and the gateway's benchmarks against it), tmux (the test of the
# interactive query shell), chromium (the headless browser test of the
# gateway's status page) and the real Trino and PrestoDB servers.
test-deps: demo-deps
	bash scripts/install-nginx.sh
	bash scripts/install-tmux.sh
	bash scripts/install-chromium.sh
	cd interop/importer && $(GO) mod download
	# The npm clients that interop/node runs (Node.js and npm from Debian
	# when missing): presto-client and trino-client, as its lock file pins.
	bash scripts/install-npmclients.sh
	# The real coordinators interop/realservers starts: Trino 476 (on a
	# Java 24+ JDK) and PrestoDB 0.287 (Java 17), through Maven, cached.
	bash scripts/fetch-real-servers.sh
	# The Python clients interop/realservers runs through the gateway
	# (trino with its SQLAlchemy dialect, presto-python-client), pinned,
	# in a virtual environment of their own.
	bash scripts/install-python-clients.sh

# Everything either needs.
deps: test-deps

demo: demo-deps
	$(GO) run ./cmd/zkpresto-lab demo

test: test-deps fmt-check vet staticcheck unit importer fuzz

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	cd interop/trino && GOTOOLCHAIN=$(INTEROP_TOOLCHAIN) $(GO) vet ./...

staticcheck:
	$(GO) run $(STATICCHECK) ./...
	cd interop/trino && GOTOOLCHAIN=$(INTEROP_TOOLCHAIN) $(GO) run $(STATICCHECK) ./...

unit:
	$(GO) test -race -count=1 -timeout 20m -skip '^TestDevRealServers$$' $$($(GO) list ./... | grep -v -e /realserver -e /interop/node)
	# The real Trino and PrestoDB servers, in a step of their own: their
	# JVMs' start-up would take the two cores from the timed tests above.
	# interop/node starts one server of each flavour for the npm clients.
	# interop/realservers alone runs 15 to 20 minutes on two cores (the
	# authentication matrix: password, JWT, OAuth2 through two replicas;
	# docs/development.md says where the time goes).
	$(GO) test -race -count=1 -timeout 40m -p 1 ./interop/realservers/ ./zkprestotest/realserver/ ./interop/node/
	$(GO) test -race -count=1 -timeout 10m -run '^TestDevRealServers$$' ./cmd/zkpresto-lab/internal/devenv/
	# Allocation counts, which the race detector's instrumentation changes.
	$(GO) test -count=1 -run 'Allocs' ./internal/gateway/token/ ./internal/pool/
	# trino-go-client v1.5.0, which needs Go 1.27, against the gateway, the
	# simulator and a real Trino it starts: a module of its own
	# (docs/interop.md), on the Go toolchain the go command fetches as a
	# module, for this step only; alone, as a real-server step.
	cd interop/trino && GOTOOLCHAIN=$(INTEROP_TOOLCHAIN) $(GO) test -race -count=1 -timeout 10m ./...

# A program that imports the driver from a module of its own, with no
# replace of presto-go-client: what the driver fixes reaches its users.
# Offline, from the module cache deps fills.
importer:
	cd interop/importer && GOPROXY=off GOFLAGS=-mod=readonly $(GO) vet ./...
	cd interop/importer && GOPROXY=off GOFLAGS=-mod=readonly $(GO) test -race -count=1 ./...

# Each fuzz target for a bounded number of inputs (FUZZTIME), seeded from real formats.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseDSN$$' -fuzztime $(FUZZTIME) ./dsn/
	$(GO) test -run '^$$' -fuzz '^FuzzParseZnode$$' -fuzztime $(FUZZTIME) ./discovery/
	$(GO) test -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime $(FUZZTIME) ./internal/gateway/token/
	$(GO) test -run '^$$' -fuzz '^FuzzRewrite$$' -fuzztime $(FUZZTIME) ./internal/gateway/rewrite/
	$(GO) test -run '^$$' -fuzz '^FuzzInterpolateKeepsTokens$$' -fuzztime $(FUZZTIME) ./driver/

# Every figure in BENCHMARKS.md, in one go (about 15 minutes on 2 cores):
# pick and rebuild costs, consistent hashing, the driver's cost per
# statement against the bare Presto client, the discovery path against a
# new ZooKeeper session per connect, membership latency, and the balance
# simulation (tables and docs/loadsim-p99.svg), and the gateway against
# nginx (added latency, statements/s, streaming MB/s, memory per query).
BENCHCOUNT ?= 6
bench:
	bash scripts/install-zookeeper.sh
	$(GO) test -run '^$$' -bench '^Benchmark(Pick|PickParallel|PickWithReport|PickWeightedExpanded|Build)$$' -benchmem -count $(BENCHCOUNT) ./strategy/ | tee bench-strategy.txt
	$(GO) run $(BENCHSTAT) bench-strategy.txt
	$(GO) test -run 'TestConsistentHashFigures' -v -count 1 ./strategy/
	$(GO) test -c -o bench-driver.test ./driver/
	rm -f bench-driver.txt
	for i in $$(seq $(BENCHCOUNT)); do (cd driver && ../bench-driver.test -test.run '^$$' -test.bench 'Statement' -test.benchtime 2000x -test.count 1 -test.benchmem) | tee -a bench-driver.txt; done
	$(GO) run $(BENCHSTAT) -col /client bench-driver.txt
	$(GO) test -run '^$$' -bench 'PageMemory' -benchtime 3x -count 3 ./driver/ | tee bench-driver-memory.txt
	$(GO) test -run '^$$' -bench 'DiscoveryPath|MembershipLatency' -benchtime 300x -count $(BENCHCOUNT) ./discovery/ | tee bench-discovery.txt
	$(GO) run $(BENCHSTAT) -col /scheme bench-discovery.txt
	$(GO) run ./cmd/zkpresto-lab simulate --markdown --svg docs/loadsim-p99.svg
	bash scripts/install-nginx.sh
	$(GO) test -run '^$$' -bench '^BenchmarkGatewayAddedLatency$$' -benchtime 1000x -count $(BENCHCOUNT) ./gateway/ | tee bench-gateway-added.txt
	$(GO) run $(BENCHSTAT) bench-gateway-added.txt
	$(GO) test -run '^$$' -bench '^BenchmarkGateway(RoundTrip|Throughput)$$' -benchtime 1000x -count $(BENCHCOUNT) ./gateway/ | tee bench-gateway.txt
	$(GO) run $(BENCHSTAT) -col /path bench-gateway.txt
	$(GO) test -run '^$$' -bench '^BenchmarkGatewayStream$$' -benchtime 20x -count $(BENCHCOUNT) ./gateway/ | tee bench-gateway-stream.txt
	$(GO) run $(BENCHSTAT) -col /path bench-gateway-stream.txt
	$(GO) test -run '^$$' -bench '^BenchmarkGatewayMemory$$' -benchtime 1x -count $(BENCHCOUNT) ./gateway/ | tee bench-gateway-memory.txt
	$(GO) run $(BENCHSTAT) -col /path bench-gateway-memory.txt
	$(GO) test -run '^$$' -bench '^BenchmarkGatewayStatementsMemory$$' -benchtime 1x -count 1 ./gateway/ | tee bench-gateway-statements-memory.txt

# Release binaries of zkpresto (register, nodes, query, gateway) for Linux
# and macOS on amd64 and arm64, static, with the version stamped into
# `zkpresto --version`: VERSION, by default what git describe says of the
# checkout. They go to dist/, with their SHA-256 sums.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

dist:
	rm -rf dist && mkdir -p dist
	set -e; for p in $(DIST_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; \
		echo "dist/zkpresto-$(VERSION)-$$os-$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath \
			-ldflags "-s -w -X main.version=$(VERSION)" \
			-o dist/zkpresto-$(VERSION)-$$os-$$arch ./cmd/zkpresto; \
	done
	cd dist && sha256sum zkpresto-* > SHA256SUMS
