GO ?= go
export GOFLAGS ?= -mod=readonly

# Packages whose code shares flags, barriers or buffers across goroutines: always under -race.
RACE_PKGS = ./device/... ./comm/... ./vec/... ./fused/... ./cudagraph/... ./engine/... ./trace/...

.PHONY: run test bench lint build

build:
	$(GO) build -o bin/tpslice ./cmd/tpslice

# The main job on the embedded default. Until the server exists: the all-reduce family,
# checked against a float64 reference, on 8 ranks.
run: build
	./bin/tpslice allreduce-bench -g 8 -b 8 -e 16M -f 4 --algo all --check

test: lint
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -race $(RACE_PKGS)
	$(GO) test -count=1 -tags noasm ./vec/... ./comm/...

bench:
	$(GO) test -run '^$$' -bench . ./vec/...
	$(GO) test -run '^$$' -bench . -benchtime 200x ./comm/...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
