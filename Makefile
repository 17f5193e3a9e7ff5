# WebServ — see README.md. `make test` and `make run` set up what they need
# first (scripts/setup.sh: Debian's chromium, Go), so both work on a fresh
# Debian 12 machine as root.

GO      ?= go
# Debian's golang may pin GOTOOLCHAIN=local in its go.env; go.mod's toolchain
# must be fetchable through the module proxy when the installed go is older.
export GOTOOLCHAIN ?= auto
BIN     := bin/webserv
GOFMT    = $$($(GO) env GOROOT)/bin/gofmt

.PHONY: all setup build test run bench fuzz lint clean

all: build

setup:
	@bash scripts/setup.sh

build: setup
	$(GO) build -o $(BIN) ./cmd/webserv

lint:
	@out=$$($(GOFMT) -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Every test runs against the real Debian Chromium; fuzz seeds in
# testdata/fuzz run as ordinary tests.
test: setup lint
	$(GO) test -count=1 -timeout 30m ./...

# The main demo: a scripted episode on a bundled shop, every step printed.
run: build
	./$(BIN) demo

# Extraction time and per-step overhead beyond the idle window (medians).
bench: setup
	$(GO) test ./envcore -run '^$$' -bench . -benchtime 40x

fuzz: setup
	$(GO) test ./envcore -run '^$$' -fuzz FuzzParseAction -fuzztime 60s

clean:
	rm -rf bin
