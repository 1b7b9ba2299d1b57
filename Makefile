GO ?= go
export GOFLAGS ?= -mod=readonly
# go-nvml's header marks calls deprecated that topo avoids or checks; keep cgo builds quiet.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

# Packages whose code shares flags, barriers or buffers across goroutines: always under -race.
RACE_PKGS = ./diag/... ./device/... ./internal/ipc/... ./internal/shmring/... ./executor/... ./comm/... ./vec/... ./fused/... ./cudagraph/... ./engine/... ./trace/... ./server/... ./bench/...

.PHONY: run test fuzz bench lint build docs-img

build:
	$(GO) build -o bin/tpslice ./cmd/tpslice

# The main job: the OpenAI-compatible server on the embedded stories260K at TP = 8. It
# prints the URL and a curl that streams tokens; Ctrl-C stops it.
run: build
	./bin/tpslice serve --tp 8

test: lint
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -race -timeout 20m $(RACE_PKGS)
	$(GO) test -count=1 -tags noasm ./vec/... ./comm/... ./layers/... ./quant/... ./models/...
	TPSLICE_ISA=avx2 $(GO) test -count=1 ./quant/... ./models/... # the AVX2 kernels on AVX-512 machines too
	CGO_ENABLED=0 $(GO) test -count=1 ./topo/... # the build without NVML

# Every Fuzz target of the repository (the test binaries list them, so new ones join), each
# for FUZZTIME inputs: a count, the same work on every machine. A package's test binary is
# built once; each target starts from its seed corpus and testdata/fuzz alone (a fresh
# -test.fuzzcachedir, the flag go test passes itself), so a run does not depend on the
# inputs earlier runs cached. A failing input is written to the package's testdata/fuzz.
# CI runs it after test.
FUZZTIME ?= 500x
fuzz:
	@dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && \
	for pkg in $$(git grep -l '^func Fuzz' -- '*_test.go' | xargs -n1 dirname | sort -u); do \
		bin=$$dir/$$(echo $$pkg | tr / _).test; \
		$(GO) test -c -fuzz . -o $$bin ./$$pkg || exit 1; \
		for target in $$(cd $$pkg && $$bin -test.list '^Fuzz'); do \
			t0=$$(date +%s.%N); \
			(cd $$pkg && $$bin -test.run '^$$' -test.fuzz "^$$target$$" -test.fuzztime $(FUZZTIME) \
				-test.fuzzcachedir $$dir/cache/$$target) >$$dir/log 2>&1 || { cat $$dir/log; exit 1; }; \
			echo "fuzz: $$pkg $$target: $$(grep -o 'execs: [0-9]*' $$dir/log | tail -1 | cut -d' ' -f2) execs in $$(echo "$$t0 $$(date +%s.%N)" | awk '{printf "%.1f", $$2-$$1}') s"; \
		done; \
	done

bench:
	$(GO) test -run '^$$' -bench . ./vec/...
	$(GO) test -run '^$$' -bench . -benchtime 200x ./comm/...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# The trace pictures of docs/collectives.md: one all-reduce call of each algorithm, 64 KiB
# over 8 ranks, on this machine's device runtime, drawn as SVG timelines (allreduce-bench
# --trace); the ring's under each protocol at 4 KiB. Run it on a quiet machine.
IMG = docs/img/collectives
ARB = ./bin/tpslice allreduce-bench -g 8 --select default --rounds 5 --budget 200ms
docs-img: build
	@mkdir -p $(IMG)
	for a in oneshot twoshot nvls lamport star; do $(ARB) -b 64K -e 64K --algo $$a --trace $(IMG)/$$a.svg >/dev/null || exit 1; done
	for a in ring tree; do $(ARB) -b 64K -e 64K --algo $$a --proto Simple --trace $(IMG)/$$a.svg >/dev/null || exit 1; done
	$(ARB) -b 64K -e 64K --hosts 2 --algo twolevel --trace $(IMG)/twolevel.svg >/dev/null
	$(ARB) -b 4K -e 4K --algo ring --proto LL,LL128,Simple --trace $(IMG)/protocols.svg >/dev/null
