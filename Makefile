# WebServ — see README.md. `make test` and `make run` set up what they need
# first (scripts/setup.sh: Debian's chromium, Go), so both work on a fresh
# Debian 12 machine as root.

GO      ?= go
# Debian's golang may pin GOTOOLCHAIN=local in its go.env; go.mod's toolchain
# must be fetchable through the module proxy when the installed go is older.
export GOTOOLCHAIN ?= auto
# Statically linked binaries (tests' too): the server's own executable runs
# commands inside site containers as the exec helper (incusmgr/exechelper.go),
# which must start in any image.
export CGO_ENABLED ?= 0
BIN     := bin/webserv
GOFMT    = $$($(GO) env GOROOT)/bin/gofmt
PYTHON  ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python

.PHONY: all setup setup-test tools venv-run lint-go lint-py lint-py-run test-build build test venv run bench bench-protocol bench-mcp bench-rl bench-system bench-step bench-scale bench-density bench-route bench-ui bench-recovery bench-vec bench-peer bench-miniwob bench-miniwob-saturate bench-settle bench-trace bench-ray bench-all fuzz lint vulncheck clean

all: build

# What the server and the demo need (Chromium, Go, python3-venv).
setup:
	@bash scripts/setup.sh

# The above and what only the tests use (PostgreSQL, MariaDB, Incus).
setup-test:
	@bash scripts/setup.sh --all

# -buildvcs=auto: `webserv version` names the commit even where a GOFLAGS
# default turns VCS stamping off (and builds outside a checkout still work).
build: setup
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/webserv

# The Python package, installed from the repository root as users install it:
# venv-run with no extras (the demo), venv with every extra the tests use.
venv-run: setup
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check .

# AgentLab (webserv.agentlab, python/tests/test_agentlab.py) goes in without its declared
# dependencies: they include torch, Ray[default] and gradio, and one of them builds an old numpy
# from source on Python 3.11 (fails). What its agents and runner import is the agentlab extra;
# pip extras cannot say --no-deps, hence the second line.
AGENTLAB = agentlab==0.4.2

venv: setup
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(PY) -m pip install -q '.[test,bench,ray,miniwob,yaml,agentlab]'
	$(PY) -m pip install -q --no-deps $(AGENTLAB)

# lint-go and lint-py share nothing: `make lint` (and `make test`) run them
# side by side, so that the venv's downloads overlap the Go compiles.
lint: setup
	@$(MAKE) --no-print-directory --output-sync=target -j2 lint-go lint-py

# The lint tools (staticcheck, govulncheck), pinned in tools/go.mod, a
# module of their own: built by one `go build`, they share one build of
# golang.org/x/tools (about 37 CPU-s less than two `go run pkg@version`
# on an empty build cache). To bump one: cd tools && go get -tool PKG@VERSION.
tools: setup
	$(GO) build -C tools -o ../bin/tools/ honnef.co/go/tools/cmd/staticcheck golang.org/x/vuln/cmd/govulncheck

lint-go: setup tools
	@out=$$($(GOFMT) -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	bin/tools/staticcheck ./...
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	@GO=$(GO) bash scripts/vulncheck.sh

lint-py: venv
	@$(MAKE) --no-print-directory lint-py-run

# lint-py without installing the venv first (make test has just installed it).
lint-py-run:
	$(VENV)/bin/ruff check python bench examples scripts setup.py
	$(VENV)/bin/ruff format --check python bench examples scripts setup.py
	$(VENV)/bin/ty check python/webserv

# Every package's test binary, built and not run (-exec /bin/true), then
# the server's binary, linked from what that compiled: one go command
# compiles each package once (two side by side on an empty cache compile the
# shared ones twice, about 100 CPU-s), and the tests' first phase does not
# wait on compiles one package at a time.
test-build: setup
	@$(GO) test -count=1 -vet=off -exec /bin/true ./... >/dev/null || $(GO) test -count=1 -vet=off -exec /bin/true ./...
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/webserv

# Known vulnerabilities that the code calls and a release fixes fail (the
# database is built offline from a pinned golang.org/x/vulndb; see
# scripts/vulncheck.sh to bump it).
vulncheck: setup tools
	@GO=$(GO) bash scripts/vulncheck.sh

# Every test runs against the real Debian Chromium; fuzz seeds in
# testdata/fuzz run as ordinary tests. The Python suite drives a real
# `webserv serve` (bin/webserv) over its WebSocket.
# First what the tests need (the venv, the compiled tests and server, the
# lint tools), side by side; then scripts/test.sh runs the tests in two
# phases (docs/testing.md), `make lint` beside the first at the lowest CPU
# priority, and ends with a table of the most expensive tests.
test: setup-test
	@$(MAKE) --no-print-directory --output-sync=target -j3 venv test-build tools
	@bash scripts/test.sh $(GO) $(CURDIR)/$(BIN) $(VENV)/bin/pytest "$(MAKE) --no-print-directory --output-sync=target -j2 lint-go lint-py-run"

# The main demo: `webserv serve` on the bundled shop; six environments in
# parallel solve bundled tasks with their oracle policies, one runs a random
# policy; rewards, steps and timings are printed.
run: build venv-run
	WEBSERV_BIN=$(CURDIR)/$(BIN) $(PY) examples/demo.py

# Extraction time and per-step overhead beyond the idle window (medians).
bench: setup
	$(GO) test ./envcore/... -run '^$$' -bench . -benchtime 40x

# Protocol overhead and steps/second with 1, 10 and 50 environments.
bench-protocol: build venv
	WEBSERV_BIN=$(CURDIR)/$(BIN) $(PY) bench/protocol_bench.py

# Per-step time of the MCP path against the WebSocket path, same run (bench/results/mcp.md).
bench-mcp: build venv
	WEBSERV_BIN=$(CURDIR)/$(BIN) $(PY) bench/mcp_bench.py

# Group reset, fork and TRL tool latency.
bench-rl: build venv
	WEBSERV_BIN=$(CURDIR)/$(BIN) $(PY) bench/rl_bench.py

# The benchmark suites (bench/README.md): each writes bench/results/<suite>.{json,md,png}.
# system: the paper's Table 2 (Incus copy-on-write vs full copy, 1 and 6 GiB).
bench-system: build
	$(GO) build -o bin/webserv-bench ./bench/cmd/webserv-bench
	bin/webserv-bench system
# step: per-action latency (action, settle, extraction) at idle 500 and 200 ms.
bench-step: build
	$(GO) build -o bin/webserv-bench ./bench/cmd/webserv-bench
	bin/webserv-bench step
# scale: N = 1, 8, 32, 64, 128 environments at once.
bench-scale: build
	$(GO) build -o bin/webserv-bench ./bench/cmd/webserv-bench
	bin/webserv-bench scale
# density: environment pairs (browser context + Incus container of the shop) held open at once until a bound breaks.
bench-density: build
	$(GO) build -o bin/webserv-bench ./bench/cmd/webserv-bench
	bin/webserv-bench density
# route: netroute's per-context proxies against direct connections, same run.
bench-route: build
	$(GO) build -o bin/webserv-bench ./bench/cmd/webserv-bench
	bin/webserv-bench route
# ui: step latency with the web UI off, on with nobody watching, and with one viewer.
bench-ui: build
	$(GO) build -o bin/webserv-bench ./bench/cmd/webserv-bench
	bin/webserv-bench ui
# recovery: a browser process killed under 16 environments with 1, 2, 4 browser processes; their cost at 32.
bench-recovery: build
	$(GO) build -o bin/webserv-bench ./bench/cmd/webserv-bench
	bin/webserv-bench recovery
# peer: the same episodes through BrowserGym and WebServ.
bench-peer: build venv
	WEBSERV_BIN=$(CURDIR)/$(BIN) $(PY) bench/peer_bench.py
# miniwob: MiniWoB++ through BrowserGym and WebServ: goals, rewards, steps/s and CPU per step at N=1 and 8.
bench-miniwob: build venv
	WEBSERV_BIN=$(CURDIR)/$(BIN) $(PY) bench/miniwob_bench.py
# miniwob at saturation: each system's N raised until its episodes/s stop rising (issue 58).
bench-miniwob-saturate: build venv
	WEBSERV_BIN=$(CURDIR)/$(BIN) $(PY) bench/miniwob_bench.py --saturate
# settle: observation correctness of three settle strategies on SPA cases.
bench-settle: build venv
	WEBSERV_BIN=$(CURDIR)/$(BIN) $(PY) bench/settle_bench.py

# make_vec N=8 against eight gymnasium.make envs stepped from threads (and SyncVectorEnv), same run.
# Step latency with each episode's network trace (HAR) recorded, against
# without, same run.
bench-trace: build venv
	WEBSERV_BIN=$(CURDIR)/$(BIN) $(PY) bench/trace_bench.py

bench-vec: build venv
	WEBSERV_BIN=$(CURDIR)/$(BIN) $(PY) bench/vector_bench.py --sync

# ray: episodes/s through a webserv.ray fleet against the same servers as a URL list, same run.
bench-ray: build venv
	WEBSERV_BIN=$(CURDIR)/$(BIN) $(PY) bench/ray_bench.py --rounds 6

bench-all: bench-system bench-step bench-scale bench-route bench-ui bench-recovery bench-vec bench-peer bench-miniwob bench-settle bench-trace bench-protocol bench-rl bench-ray

fuzz: setup
	$(GO) test ./envcore -run '^$$' -fuzz FuzzParseAction -fuzztime 60s
	$(GO) test ./trajectory -run '^$$' -fuzz FuzzDelta -fuzztime 60s

clean:
	rm -rf bin $(VENV) build python/*.egg-info
