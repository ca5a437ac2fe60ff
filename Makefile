# The two commands a new machine needs:
#   make demo   the main job: a local ZooKeeper, three local coordinators, each strategy at work
#   make test   gofmt, go vet, staticcheck and the race-enabled tests (what CI runs)

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BENCHSTAT   ?= golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

FUZZTIME    ?= 15s

.PHONY: all demo test deps fmt-check vet staticcheck unit fuzz bench

all: test

# Installs what the tests and the demo need that Go does not fetch itself:
# Debian's zookeeper package (and its Java runtime).
deps:
	bash scripts/install-zookeeper.sh

demo: deps
	$(GO) run ./cmd/zkpresto demo

test: deps fmt-check vet staticcheck unit fuzz

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) run $(STATICCHECK) ./...

unit:
	$(GO) test -race -count=1 -timeout 20m ./...

# Each fuzz target for a bounded time (FUZZTIME), seeded from real formats.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseDSN$$' -fuzztime $(FUZZTIME) ./driver/
	$(GO) test -run '^$$' -fuzz '^FuzzParseZnode$$' -fuzztime $(FUZZTIME) ./discovery/
