GO ?= go
export GOFLAGS ?= -mod=readonly
# go-nvml's header marks calls deprecated that topo avoids or checks; keep cgo builds quiet.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

# Packages whose code shares flags, barriers or buffers across goroutines: always under -race.
RACE_PKGS = ./diag/... ./device/... ./comm/... ./vec/... ./fused/... ./cudagraph/... ./engine/... ./trace/... ./server/...

.PHONY: run test bench lint build

build:
	$(GO) build -o bin/tpslice ./cmd/tpslice

# The main job: the OpenAI-compatible server on the embedded stories260K at TP = 8. It
# prints the URL and a curl that streams tokens; Ctrl-C stops it.
run: build
	./bin/tpslice serve --tp 8

test: lint
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -race $(RACE_PKGS)
	$(GO) test -count=1 -tags noasm ./vec/... ./comm/... ./layers/... ./quant/... ./models/...
	TPSLICE_ISA=avx2 $(GO) test -count=1 ./quant/... ./models/... # the AVX2 kernels on AVX-512 machines too
	CGO_ENABLED=0 $(GO) test -count=1 ./topo/... # the build without NVML

bench:
	$(GO) test -run '^$$' -bench . ./vec/...
	$(GO) test -run '^$$' -bench . -benchtime 200x ./comm/...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
