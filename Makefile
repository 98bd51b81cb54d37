# sitebus: `make run` brings up a local site (simulated Waldur, RabbitMQ,
# sitebus with embedded NATS); `make test` runs every test.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c

SITEBUS_CACHE ?= $(HOME)/.cache/sitebus
export SITEBUS_CACHE
BUF := $(SITEBUS_CACHE)/tools/buf-1.75.0/node_modules/.bin/buf
GOLANGCI_VERSION := v2.15.0
GOLANGCI := $(SITEBUS_CACHE)/tools/golangci-lint-$(GOLANGCI_VERSION)/golangci-lint
MODULES := pkg services e2e
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: all build run test test-repeat unit e2e lint generate check-generated deps bench bench-orders bench-cluster-pass bench-cluster-create bench-vcluster k8s-binaries vault fmt image manifests soak bench-replicas fuzz storm bench-drift

all: build

deps:
	@.ci/deps.sh

build:
	go build -ldflags "-X main.version=$(VERSION)" -o bin/sitebus ./services/cmd/sitebus
	go build -o bin/waldursim ./e2e/cmd/waldursim

## image: the container image (linux/amd64, non-root, distroless/static-like
## base) as an OCI layout tarball, without a container engine.
image:
	go run ./e2e/cmd/imagebuild -version $(VERSION) -o bin/sitebus-image.tar

## manifests: regenerate the kustomize base deploy/kubernetes from the Helm
## chart deploy/helm/sitebus (default values); e2e/deploy fails when stale.
manifests:
	go test -count=1 ./e2e/deploy/ -run TestKustomizeBaseIsTheChart -update

## run: a local site: RabbitMQ, the Waldur simulator (new demo orders every
## few seconds), sitebus with an embedded NATS, and the event stream on screen.
run: deps k8s-binaries build
	go run ./e2e/cmd/sitebus-dev -sitebus bin/sitebus

generate: deps
	PATH="$(dir $(BUF)):$$PATH" $(BUF) generate

## check-generated fails when the committed generated code is not what the
## protos produce.
check-generated: generate
	@git diff --exit-code -- pkg/gen || { echo "generated code is stale: run 'make generate' and commit" >&2; exit 1; }
	@test -z "$$(git status --porcelain -- pkg/gen)" || { echo "untracked generated files: run 'make generate' and commit" >&2; git status --porcelain -- pkg/gen >&2; exit 1; }

fmt:
	gofmt -w $(MODULES)

lint: deps
	$(BUF) lint
	@out=$$(gofmt -l $(MODULES)); test -z "$$out" || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	go vet ./pkg/... ./services/... ./e2e/...
	@test -x $(GOLANGCI) || GOBIN=$(dir $(GOLANGCI)) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)
	for m in $(MODULES); do (cd $$m && $(GOLANGCI) run --allow-parallel-runners --config ../.ci/golangci.yml ./...); done

## test: generated code current, lint (buf, gofmt, vet, golangci-lint), unit
## tests, then the end-to-end tests against real RabbitMQ, NATS, Kubernetes
## API server processes and the Waldur and Keycloak simulators.
test: deps k8s-binaries vault tilt check-generated lint
	go test -count=1 ./pkg/... ./services/...
	go test -count=1 -timeout 20m ./e2e/...

## test-repeat: the unit tests five times over with the race detector (a
## test that passes once by luck rarely passes five times), then the
## end-to-end tests once, as make test runs them.
test-repeat: deps k8s-binaries vault
	go test -race -count=5 -timeout 30m ./pkg/... ./services/...
	go test -count=1 -timeout 20m ./e2e/...

unit:
	go test ./pkg/... ./services/...

## fuzz: every fuzz target for FUZZTIME (default 1m) each, one after the
## other (go test fuzzes one target per package per run). `make test`
## already runs each target's seeds and committed corpus
## (testdata/fuzz/<target>/) as ordinary tests; a failure found here is
## written there: commit it with the fix. FUZZFLAGS adds go test flags
## (e.g. -parallel 1 on a shared machine). FUZZMINIMIZETIME bounds the
## shrinking of each new interesting input, which go test otherwise gives
## up to 60 s, counted in FUZZTIME: a short run would mostly shrink.
## FUZZTIME also takes a count (e.g. 3000x), which CI uses: with a
## duration, Go 1.26 can fail a target with "context deadline exceeded"
## and no crasher at the end of the time on a loaded machine
## (golang/go#75804); a count has no deadline to race.
FUZZTIME ?= 1m
FUZZMINIMIZETIME ?= 5s
FUZZFLAGS ?=
# FUZZ_TARGETS is <package dir>:<target> for every `func FuzzX` in a
# _test.go file, found by grep so that a new target runs without being
# listed here (`go test -list` would say the same but compile every test
# binary first).
FUZZ_TARGETS ?= $(shell grep -rHoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' $(MODULES) | sed -E 's|/[^/]+:func |:|' | sort)
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		dir=$${t%%:*}; name=$${t##*:}; \
		echo "== fuzz $$name ($$dir, $(FUZZTIME))"; \
		go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $(FUZZFLAGS) ./$$dir/ || exit 1; \
	done

e2e: deps k8s-binaries vault
	go test -count=1 -timeout 20m -v ./e2e/...

## bench: bus throughput against raw JetStream (ratio), and sitebus's memory
## and start-up time, as printed figures.
bench: deps
	go test -run '^$$' -bench Ingest -benchtime 10x -count 3 ./services/stompbridge/
	go run ./e2e/cmd/benchproc

## bench-orders: create-order latency (STOMP frame → set_state_done) over
## 200 orders on a real kube-apiserver, and external calls per order.
bench-orders: deps k8s-binaries
	go test -run '^$$' -bench 'CreateOrder(Latency|Burst)' -benchtime 1x -timeout 20m ./e2e/orders/ ./e2e/rancher/

## bench-cluster-pass: one cluster pass over 50 one-zone clusters against
## the simulators: ms, OpenStack calls and Rancher calls per pass.
bench-cluster-pass: deps k8s-binaries vault
	go test -run '^$$' -bench ClusterPass50Clusters -benchtime 2x -timeout 20m ./e2e/provisioner/

## bench-drift: one drift pass over 1,000 ManagedNamespaces with their
## Keycloak groups against a real kube-apiserver and the Waldur and Keycloak
## simulators: time and calls per peer (Kubernetes, Waldur, Keycloak).
bench-drift: deps k8s-binaries
	go test -run '^$$' -bench DriftPass1000Resources -benchtime 2x -timeout 30m ./e2e/usage/

## bench-cluster-create: a 3-zone × 5-node managed create with VMs booting
## 20 s after their create, VMs made one after another (cluster_vm_concurrency
## 1) then 5 at once: create time of each, their ratio, calls per create by
## peer (OpenStack, Rancher, Vault).
bench-cluster-create: deps k8s-binaries vault
	go test -run '^$$' -bench ClusterCreate3x5 -benchtime 1x -timeout 20m -v ./e2e/provisioner/

## bench-vcluster: virtual cluster creates (team of two) through sitebus
## against the Rancher, Keycloak and Waldur simulators and two real
## kube-apiservers (host, virtual cluster): time per create and calls per
## create by peer (Rancher, host API server, virtual cluster's API server,
## Keycloak, Waldur).
bench-vcluster: deps k8s-binaries
	go test -run '^$$' -bench VClusterCreate -benchtime 3x -timeout 20m ./e2e/vcluster/

## soak: the chaos soak's full profile: 1,000 orders (creates, updates,
## terminations, role and flag changes) on the distributed topology while a
## seeded schedule kills service processes, restarts a NATS node and
## RabbitMQ and freezes the API server (make test runs 120 orders).
## SITEBUS_SOAK_SEED=<seed> replays a run.
soak: deps k8s-binaries
	SITEBUS_SOAK_ORDERS=$${SITEBUS_SOAK_ORDERS:-1000} go test -count=1 -timeout 60m -v -run '^TestChaosSoak$$' ./e2e/distributed/

## storm: the malformed-frame storm's full size: 10,000 bad frames (random,
## truncated, oversized, wrongly encoded, repeated) through real RabbitMQ
## between 200 valid orders, after the same 200 orders without the storm;
## prints the dead-letter count, sitebus's peak RSS and the orders' latency
## with and without the storm (make test runs 2,000 frames, 40 orders).
## SITEBUS_STORM_SEED=<seed> replays a run.
storm: deps k8s-binaries
	SITEBUS_STORM_FRAMES=$${SITEBUS_STORM_FRAMES:-10000} SITEBUS_STORM_ORDERS=$${SITEBUS_STORM_ORDERS:-200} go test -count=1 -timeout 60m -v -run '^TestMalformedFrameStorm$$' ./e2e/storm/

## bench-replicas: create orders per second with 1, 2 and 4 order-service
## replicas on the distributed topology, Waldur answering in 50 ms.
bench-replicas: deps k8s-binaries
	SITEBUS_BENCH_REPLICAS=1 go test -count=1 -timeout 30m -v -run '^TestReplicaThroughput$$' ./e2e/distributed/

## k8s-binaries: kube-apiserver and kube-controller-manager v1.36.3, built
## once into $(SITEBUS_CACHE).
k8s-binaries:
	@.ci/k8s-binaries.sh

## tilt: tilt v0.34.0 (`tilt up`, see README; the e2e/tilt tests run it),
## built once into $(SITEBUS_CACHE).
.PHONY: tilt
tilt:
	@.ci/tilt.sh

## vault: the Vault server v1.21.0 (real AppRole, KV v2 and policies for the
## cluster-provisioner tests), built once into $(SITEBUS_CACHE).
vault:
	@.ci/vault.sh
