package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/cometbft"
	"github.com/cip11/cip11/adapters/executor"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/blockexec"
	"github.com/prometheus/client_golang/prometheus"
)

func logger(stderr io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log %q: %w", level, err)
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: l})), nil
}

// signalContext is a context that SIGINT or SIGTERM cancels, with the
// signal as its cause (signalExit). After the first signal the default
// action is restored: a second Ctrl-C ends the process at once.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		defer signal.Stop(ch)
		select {
		case s := <-ch:
			cancel(signalCause{s})
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// signalCause is a signalContext's cancellation cause.
type signalCause struct{ sig os.Signal }

func (s signalCause) Error() string { return "received " + s.sig.String() }

// signalExit is the exit status of a command a signal stopped: 128 + the
// signal's number (130 for SIGINT, 143 for SIGTERM), 130 without one.
func signalExit(ctx context.Context) int {
	var sc signalCause
	if errors.As(context.Cause(ctx), &sc) {
		if s, ok := sc.sig.(syscall.Signal); ok {
			return 128 + int(s)
		}
	}
	return 130
}

// runnerList is the repeatable -runner ADDRESS[:STAKE] flag of genesis;
// an address given twice is an error.
type runnerList struct {
	rs   []node.GenesisRunner
	seen map[cip11.Address]bool
}

func (l *runnerList) String() string { return "" }

func (l *runnerList) Set(s string) error {
	r, err := node.ParseGenesisRunner(s)
	if err != nil {
		return err
	}
	if l.seen == nil {
		l.seen = make(map[cip11.Address]bool)
	}
	if l.seen[r.Address] {
		return fmt.Errorf("%s given twice", r.Address)
	}
	l.seen[r.Address] = true
	l.rs = append(l.rs, r)
	return nil
}

// cip11 genesis: write a devnet genesis and its key files.
func runGenesis(args []string, stdout, stderr io.Writer) int {
	c := newCommand("genesis", "[-o DIR] [-runners N] [-seed N] [-phase N] [-runner ADDRESS[:STAKE]]... [-runners-file FILE] [-force] [flags]\n       cip11 genesis -validators N [-o DIR] [-runners N] [-seed N] [-phase N] [-hosts H0,H1,… | -hosts-file FILE] [-base-port P] [-timeout-commit D] [-chain-id N] [-reconfigure [-in-band] [-add-at H] [-remove-at H] [-overlap N]]", `
With -validators N: write a network of N validators run by CometBFT
(D29–D33), one home per validator in DIR/v0 … DIR/v<N-1> (cip11.json,
validator.key, config/config.toml with every other validator as a
persistent peer, config/genesis.json, config/node_key.json,
config/priv_validator_key.json) and the runner key files in DIR. Validator
i listens on -base-port + 10·i (CometBFT p2p, TCP), + 1 (QUIC, UDP) and + 2
(HTTP API) on 127.0.0.1; cip11 validator -home DIR/v<i> runs it. For a
network across machines, -hosts (or -hosts-file, one host a line, #
comments) names each home's host, an IP address or a DNS name, one per
home in order (v0, v1, …; the -reconfigure joiner last): home v<i> listens
on its host and every peer and runner dials it there (copy DIR/v<i> to
that machine). Validators on distinct hosts all use -base-port, + 1 and + 2;
a host named k times before gets -base-port + 10·k (docs/network.md). Every key, the
threshold shares included, is derived from -seed: DEVNET ONLY. A network is
never overwritten (remove DIR to start over); -quic, -http, -runner,
-runners-file and -force do not apply. -reconfigure (DEVNET ONLY) writes one
more home, DIR/v<N>, and schedules two reconfigurations in the genesis
(§5.3–§5.4, docs/network.md): v<N> joins the set at height -add-at and v0
leaves it at -remove-at, with OVERLAP_BLOCKS = -overlap. With -in-band the
genesis schedules neither: it names a devnet admin, DIR/dealer.json holds
the admin's key and the planned epochs' shares, and cip11 reconfigure
submits each epoch while the network runs (SPEC-NOTES C11). Run every home,
the joiner included (it follows the chain as a full node until it joins).

Without -validators: write a single-validator devnet genesis
(DIR/genesis.json), the validator's key file (DIR/validator.key) and one key
file per derived runner (DIR/runner-NNNN.key), as described in
docs/genesis.md. Every key is derived from -seed: DEVNET ONLY. Runners
whose keys are elsewhere are registered with -runner and -runners-file (no
key file is written for them). -phase sets the
§14 delivery flags: 0 none (no QUIC, poll only), 1 CIP11_TRANSPORT_ENABLED
(push alongside poll), 2 also CIP11_PRESENT_FIRST_ENABLED (push primary, poll
fallback), 3 also CIP11_POLL_DISABLED (push only, poll 410).

An existing genesis or key file in DIR is never replaced without -force: a new
genesis orphans the chain the old one started. No positional arguments.`)
	dir := c.strVar("o", "devnet", nil, "write genesis.json, validator.key and runner-NNNN.key into `DIR`")
	runners := c.intVar("runners", 4, 0, 100_000, "`N` derived genesis runners, each with a key file (0 to 100000)")
	seed := c.uint64Var("seed", 1, 0, "key derivation seed `N` (DEVNET ONLY: the keys are a function of it)")
	chainID := c.uint64Var("chain-id", 7011, 1, "chain_id `N` (≥ 1)")
	quicAddr := c.strVar("quic", "127.0.0.1:7011", hostPort, "the validator's QUIC UDP address `HOST:PORT`")
	httpAddr := c.strVar("http", "127.0.0.1:8011", hostPort, "the validator's HTTP API address `HOST:PORT`")
	phase := c.intVar("phase", 2, 0, 3, "§14 phase `N` (0 to 3): the delivery flags the genesis sets (0: no QUIC, poll only; 1: push alongside poll; 2: push primary, poll fallback; 3: push only)")
	pollDisabled := c.fs.Bool("poll-disabled", false, "the same as -phase 3 (CIP11_POLL_DISABLED: the poll endpoint answers 410 Gone)")
	force := c.fs.Bool("force", false, "overwrite an existing genesis and its key files (orphans the chain's data directory)")
	validators := c.intVarText("validators", 0, 0, 64, "0 (a single-validator genesis) or a count from 1 to 64",
		"write a network of `N` validators run by CometBFT, one home each in DIR/v<i> (1 to 64; 0: a single-validator genesis)")
	rc := addReconfigFlags(c, "one more home, joining at -add-at; v0 leaves at -remove-at")
	inBand := c.fs.Bool("in-band", false, "with -reconfigure: the genesis names a devnet admin and schedules nothing; submit each epoch with cip11 reconfigure (DEVNET, SPEC-NOTES C11)")
	basePort := c.intVar("base-port", 26600, 1024, 65535, "with -validators: a validator listens on `P` + 10·k (p2p), + 1 (QUIC) and + 2 (HTTP), k the homes before it on its host (1024 to 65535)")
	rpc := c.fs.Bool("rpc", false, "with -validators: every home also serves CometBFT's RPC on -base-port + 10·k + 3 (TCP), which a joining validator's state sync reads light blocks from (cip11 validator -state-sync)")
	timeoutCommit := c.durVar("timeout-commit", 0, 0, time.Minute, "with -validators: CometBFT's timeout_commit `D` in every home (0 to 1m; 0: the next height starts as soon as a block commits; the block interval is about the consensus round plus D)")
	hostsFlag := c.strVar("hosts", "", hostList, "with -validators: each home's host `H0,H1,…` (an IP address or a DNS name, one per home, in order; default 127.0.0.1 for all)")
	hostsFile := c.strVar("hosts-file", "", nonEmpty, "with -validators: read the homes' hosts from `FILE`, one a line (# comments), after any -hosts")
	var extra runnerList
	c.fs.Var(&extra, "runner", "register a runner whose key this genesis does not hold: `ADDRESS[:STAKE]` is 40 hex digits and a stake in wei (default 10^15, not 0); repeatable")
	runnersFile := c.strVar("runners-file", "", func(string) error { return nil }, "register the runners listed in `FILE`: one \"ADDRESS [STAKE]\" per line, # comments")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if code, ok := c.nargs(stderr, 0, 0); !ok {
		return code
	}
	if *pollDisabled {
		phaseSet := false
		c.fs.Visit(func(f *flag.Flag) { phaseSet = phaseSet || f.Name == "phase" })
		if phaseSet && *phase != 3 {
			return c.usageError(stderr, "-poll-disabled is phase 3, but -phase is %d", *phase)
		}
		*phase = 3
	}
	if *validators > 0 {
		if code, ok := c.notWith(stderr, "with -validators (a network's addresses follow -base-port, its runners are derived, and it is never overwritten)",
			"quic", "http", "runner", "runners-file", "force"); !ok {
			return code
		}
		o := cometbft.NetworkOptions{Validators: *validators, Runners: *runners, Seed: *seed, ChainID: *chainID, BasePort: *basePort, RPC: *rpc, TimeoutCommit: *timeoutCommit}
		if code, ok := rc.check(c, stderr); !ok {
			return code
		}
		if *rc.on {
			o.Members, o.Epochs = cometbft.AddThenRemove(*validators, uint64(*rc.addAt), uint64(*rc.removeAt))
		}
		if *inBand {
			lead := blockexec.ReconfigureLeadBlocks + 2
			switch {
			case !*rc.on:
				return c.usageError(stderr, "-in-band needs -reconfigure")
			case *rc.addAt < lead || *rc.removeAt < *rc.addAt+max(*rc.overlap, lead):
				return c.usageError(stderr, "-reconfigure -in-band: -add-at %d must be at least %d and -remove-at %d at least -add-at + max(-overlap %d, %d) (each transaction goes in at least 8 blocks ahead, SPEC-NOTES C11)",
					*rc.addAt, lead, *rc.removeAt, *rc.overlap, lead)
			}
			o.InBand = true
		}
		if code, ok := rc.spacing(c, stderr); !ok {
			return code
		}
		hosts, err := genesisHosts(c, *hostsFlag, *hostsFile, max(o.Members, *validators), *rc.on)
		if err != nil {
			return c.usageError(stderr, "%v", err)
		}
		o.Hosts = hosts
		perHost := max(o.Members, *validators) // every home on 127.0.0.1
		if hosts != nil {
			perHost = cometbft.MaxPerHost(hosts)
		}
		if *basePort+10*perHost > 65535 {
			return c.usageError(stderr, "-base-port %d leaves no room for %d validators on one host (ports up to -base-port + 10·N must be at most 65535)", *basePort, perHost)
		}
		var ov uint64
		if *rc.on {
			ov = uint64(*rc.overlap)
		}
		return writeNetwork(stdout, stderr, *dir, o, node.Phase(*phase), ov)
	}
	if code, ok := c.notWith(stderr, "without -validators (a single-validator genesis listens on -quic and -http, and has no set to reconfigure)", "base-port", "hosts", "hosts-file", "timeout-commit", "reconfigure", "in-band", "add-at", "remove-at", "overlap"); !ok {
		return code
	}
	if *runnersFile != "" {
		f, err := os.Open(*runnersFile)
		if err != nil {
			return c.usageError(stderr, "-runners-file: %v", err)
		}
		rs, err := node.ReadGenesisRunners(f)
		f.Close()
		if err != nil {
			return c.usageError(stderr, "-runners-file %s: %v", *runnersFile, err)
		}
		for _, r := range rs {
			if extra.seen[r.Address] {
				return c.usageError(stderr, "-runners-file %s: %s is also given by -runner", *runnersFile, r.Address)
			}
			extra.rs = append(extra.rs, r)
		}
	}
	p, err := node.WithPhase(node.DefaultGenesisParams(), node.Phase(*phase))
	if err != nil {
		return c.usageError(stderr, "-phase: %v", err)
	}
	d, err := node.GenerateGenesis(node.GenesisOptions{ChainID: *chainID, Seed: *seed, Runners: *runners, QUIC: *quicAddr, HTTP: *httpAddr, Params: &p, Extra: extra.rs})
	if err == nil {
		if *force {
			err = d.Overwrite(*dir, *seed)
		} else {
			err = d.Write(*dir, *seed)
		}
	}
	if errors.Is(err, node.ErrGenesisExists) {
		fmt.Fprintf(stderr, "cip11 genesis: %v\n(-force overwrites them; a validator data directory of the old chain no longer opens)\n", err)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "cip11 genesis: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s/genesis.json (phase %s), %s/validator.key and %d runner key files", *dir, node.Phase(*phase), *dir, *runners)
	if len(extra.rs) > 0 {
		fmt.Fprintf(stdout, "; %d more runners registered without key files", len(extra.rs))
	}
	fmt.Fprintln(stdout)
	return 0
}

// cip11 validator: a single-validator chain node.
func runValidator(args []string, stdout, stderr io.Writer) int {
	c := newCommand("validator", "[-genesis FILE] [-key FILE] [-data DIR] [-block-time D] [flags]\n       cip11 validator -home DIR [-http ADDR] [-no-fsync] [-log LEVEL] [-comet-log LEVEL]", `
Run a single-validator chain node: it produces a block every -block-time,
pushes assignments to connected runners over QUIC (no QUIC in §14 phase 0,
set by the genesis flags: runners poll), serves the HTTP API
(docs/http-api.md) with metrics, and keeps its state in -data (Pebble). It
runs until SIGINT or SIGTERM. No positional arguments.

With -home DIR: run one validator of a network that cip11 genesis
-validators wrote (DIR is its home, e.g. net/v0): CometBFT, in the same
process, agrees on every block with the other validators (its persistent
peers), and the validator executes it, pushes assignments to the runners
it holds over QUIC and serves the HTTP API on the genesis validator.http
(-http overrides). Its state and block log are in DIR/node, CometBFT's in
DIR/data; restarted on the same home it catches up from its peers.
-genesis, -key, -data, -block-time, -skip-per-mille, -listen and
-push-window do not apply (the home and consensus decide them).`)
	gpath := c.strVar("genesis", "devnet/genesis.json", nil, "genesis `FILE`")
	kpath := c.strVar("key", "devnet/validator.key", nil, "validator key `FILE`")
	data := c.fs.String("data", "", "data `DIR` (Pebble state, block log); empty: a fresh temporary directory")
	blockTime := c.durVar("block-time", time.Second, time.Millisecond, maxBlock, "block interval `D` (1ms to 1h)")
	skip := c.intVar("skip-per-mille", 0, 0, 1000, "`N` nullified views per thousand, 0 to 1000 (§9.2 seed rules)")
	listen := c.strVar("listen", "", optHostPort, "QUIC UDP address `HOST:PORT` (default: the genesis validator.quic)")
	httpAddr := c.strVar("http", "", hostPortOrOff, "HTTP API address `HOST:PORT` (default: the genesis validator.http; \"off\" disables)")
	noSync := c.fs.Bool("no-fsync", false, "do not fsync blocks")
	pushWindow := c.intVarText("push-window", 0, -1, 1<<20, "-1 (all at once), 0 (automatic) or a count from 1 to 1048576",
		"`N` unanswered assignments in flight per block push; 0: 256 when the UDP receive buffer is under 2 MiB (an unprivileged host), else all at once; -1: all at once")
	level := c.strVar("log", "info", logLevel, "log `LEVEL` (debug, info, warn, error)")
	home := c.strVar("home", "", nil, "run one validator of a network from its home `DIR` (cip11 genesis -validators writes DIR/v<i>)")
	cometLevelFlag := c.strVar("comet-log", "none", cometLevel, "with -home: CometBFT's own log `LEVEL` on stderr (none, error, info, debug)")
	stallBlocks := c.intVar("stall-blocks", node.DefaultStallBlocks, 1, 1_000_000,
		"`N` nominal block intervals (-block-time, or with -home one CometBFT round: timeout_propose + timeout_prevote + timeout_precommit + timeout_commit) without a new block after which /status and /healthz say stalled (1 to 1000000)")
	snapEvery := c.uint64Var("snapshot-interval", 0, 0, "write a snapshot of the state every `N` blocks into DATA/snapshots (docs/storage.md \"Snapshots (node)\"); peers state-sync from them, -keep-blocks prunes behind them (0: none)")
	snapKeep := c.intVar("snapshot-keep", node.DefaultSnapshotKeep, 1, 1000, "keep the newest `N` snapshots (1 to 1000)")
	keepBlocks := c.uint64Var("keep-blocks", 0, 0, "retention: keep at least the last `N` blocks and prune the block log, the job archive and CometBFT's blocks behind the newest snapshot that old (0: keep everything; else at least 256 and at least -snapshot-interval; docs/storage.md \"Retention\")")
	stateSync := c.strVar("state-sync", "", rpcList, "with -home: an empty home restores from a peer's snapshot instead of replaying every block; `RPC,RPC` are CometBFT RPC addresses (HOST:PORT) of validators whose homes serve RPC (cip11 genesis -rpc) that the light client verifies the snapshot against")
	trustHeight := c.uint64Var("trust-height", 0, 0, "with -state-sync: the light client's trusted height `H` (0: the latest block of the first -state-sync server, trusting that server)")
	trustHash := c.strVar("trust-hash", "", hexHash, "with -state-sync and -trust-height: the trusted block's `HASH` (64 hex digits)")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if code, ok := c.nargs(stderr, 0, 0); !ok {
		return code
	}
	if *keepBlocks > 0 && (*snapEvery == 0 || *snapEvery > *keepBlocks || *keepBlocks < node.MinKeepBlocks) {
		return c.usageError(stderr, "-keep-blocks %d needs -snapshot-interval from 1 to %d, and at least %d", *keepBlocks, *keepBlocks, node.MinKeepBlocks)
	}
	if (*trustHeight == 0) != (*trustHash == "") {
		return c.usageError(stderr, "-trust-height and -trust-hash go together")
	}
	if *trustHeight > 0 && *stateSync == "" {
		return c.usageError(stderr, "-trust-height needs -state-sync")
	}
	if *home == "" {
		if code, ok := c.notWith(stderr, "without -home (state sync restores one validator of a network)", "state-sync"); !ok {
			return code
		}
	}
	snaps := snapshotFlags{interval: *snapEvery, keep: *snapKeep, keepBlocks: *keepBlocks}
	if *home != "" {
		if code, ok := c.notWith(stderr, "with -home (the home holds the genesis, the keys and the data; consensus sets the pace)",
			"genesis", "key", "data", "block-time", "skip-per-mille", "listen", "push-window"); !ok {
			return code
		}
	} else if code, ok := c.notWith(stderr, "without -home (a single-validator node has no CometBFT)", "comet-log"); !ok {
		return code
	}
	log, err := logger(stderr, *level)
	if err != nil {
		fmt.Fprintf(stderr, "cip11 validator: %v\n", err)
		return 2
	}
	if *home != "" {
		nv := netValidator{home: *home, httpAddr: *httpAddr, noSync: *noSync, log: log, cometLevel: *cometLevelFlag,
			stallBlocks: *stallBlocks, snaps: snaps}
		if *stateSync != "" {
			nv.stateSync = &cometbft.StateSyncOptions{RPCServers: strings.Split(*stateSync, ","), TrustHeight: int64(*trustHeight), TrustHash: *trustHash}
		}
		return runNetworkValidator(stdout, stderr, nv)
	}
	fail := func(err error) int { fmt.Fprintf(stderr, "cip11 validator: %v\n", err); return 1 }
	g, err := node.LoadGenesis(*gpath)
	if err != nil {
		return fail(genesisFirst(err, singleGenesisCmd(*gpath)))
	}
	keys, err := node.LoadValidatorKeys(*kpath)
	if err != nil {
		return fail(genesisFirst(err, singleGenesisCmd(*kpath)))
	}
	reg, m, vm, err := validatorMetrics()
	if err != nil {
		return fail(err)
	}
	v, err := node.NewValidator(node.ValidatorConfig{Genesis: g, Keys: keys, DataDir: *data, Listen: *listen, BlockTime: *blockTime,
		SkipPerMille: uint32(*skip), PushWindow: *pushWindow, NoSync: *noSync, Logger: log, Metrics: vm, Registerer: reg, StallBlocks: *stallBlocks,
		SnapshotInterval: snaps.interval, SnapshotKeep: snaps.keep, KeepBlocks: snaps.keepBlocks})
	if err != nil {
		return fail(err)
	}
	defer v.Close()
	httpURL, stop, err := serveAPI(v, g, *httpAddr, reg, m, log)
	if err != nil {
		return fail(err)
	}
	defer stop()
	printBanner(stdout, v, httpURL, nil)
	ctx, cancel := signalContext()
	defer cancel()
	if err := v.Run(ctx); err != nil {
		return fail(err)
	}
	return 0
}

// validatorMetrics registers the HTTP API's and the validator's metrics
// on a new registry (GET /metrics).
func validatorMetrics() (*prometheus.Registry, *httpapi.Metrics, *node.Metrics, error) {
	reg := prometheus.NewRegistry()
	m, err := httpapi.PrometheusMetrics(reg)
	if err != nil {
		return nil, nil, nil, err
	}
	vm, err := node.PrometheusMetrics(reg)
	if err != nil {
		return nil, nil, nil, err
	}
	return reg, m, vm, nil
}

// serveAPI serves v's HTTP API (docs/http-api.md) and the metrics in reg
// on addr: empty is the genesis validator.http, "off" serves nothing. It
// returns the API's URL ("off") and the function that shuts it down.
func serveAPI(v *node.Validator, g *node.Genesis, addr string, reg *prometheus.Registry, m *httpapi.Metrics, log *slog.Logger) (string, func(), error) {
	if addr == "" {
		addr = g.Validator.HTTP
	}
	if addr == "off" || addr == "" {
		return "off", func() {}, nil
	}
	h, err := httpapi.NewHandler(node.Backend{V: v}, httpapi.Options{PollDisabled: g.P().PollDisabled, Gatherer: reg, Metrics: m, Logger: log})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	srv := node.ServeHTTP(ln, h, log)
	return "http://" + ln.Addr().String(), func() { _ = srv.Shutdown(node.DefaultHTTPShutdown) }, nil
}

// printBanner prints the validator's start-up summary; pre are extra
// "name value" lines printed first.
func printBanner(w io.Writer, v *node.Validator, httpURL string, pre [][2]string) {
	st := v.Status()
	window := "all at once"
	if pw := v.PushWindow(); pw > 0 {
		window = fmt.Sprintf("%d in flight", pw)
	}
	if v.Addr() == nil {
		window = "none (poll only)"
	}
	fmt.Fprintln(w, "cip11 validator")
	for _, l := range pre {
		fmt.Fprintf(w, "  %-19s %s\n", l[0], l[1])
	}
	fmt.Fprintf(w, "  chain_id            %d\n  phase               %s\n  quic                %s\n  peer_pubkey         %s\n  validator_set_hash  %s\n  subset_epoch        %d\n  http                %s\n  data                %s\n  height              %d\n  push                %s\n",
		st.ChainID, v.Phase(), st.QUICAddr, st.PeerKey, st.ValidatorSetHash, st.SubsetEpoch, httpURL, v.Dir(), st.Height, window)
}

// cip11 runner: a runner process.
func runRunner(args []string, stdout, stderr io.Writer) int {
	c := newCommand("runner", "[-genesis FILE] [-key FILE] [-api URL] [flags]", `
Run a runner process: it connects to the validator over QUIC (§6), sends
on-chain heartbeats, executes pushed jobs and submits their results. Jobs
run through the demo executor, or with -exec through the operator's
command (docs/executor.md): "sh -c COMMAND" per job, the payload on stdin,
CIP11_JOB_ID, CIP11_JOB_KIND, CIP11_JOB_RUNNERS, CIP11_DEADLINE_BLOCK and
CIP11_ASSIGNMENT_HEIGHT in its environment, stdout (at most -exec-max-output
bytes, 4096 at most) the output the reveal carries, stderr to the log; a
non-zero exit, a timeout or the job's deadline fails the job (nothing is
submitted). At most -exec-concurrency commands run at once, each in its own
process group, killed on JobCancel, timeout or deadline. It polls the HTTP API as the genesis §14 phase says: every
block in phases 0 (no QUIC at all) and 1, only without a connection in
phase 2, never in phase 3; a job that arrives both ways runs once. It runs
until SIGINT or SIGTERM. No positional arguments.

Example (an upper-casing runner):
  cip11 runner -genesis devnet/genesis.json -key devnet/runner-0001.key -exec 'tr a-z A-Z' -exec-timeout 10s`)
	gpath := c.strVar("genesis", "devnet/genesis.json", nil, "genesis `FILE`")
	kpath := c.strVar("key", "devnet/runner-0000.key", nil, "runner key `FILE`")
	api := c.strVar("api", "", httpURL, "validator HTTP API base `URL` asked first (default: the runner's Sub(R) validators' genesis http, then every other validator's; the runner fails over between them)")
	vaddr := c.strVar("validator", "", optHostPort, "validator QUIC address `HOST:PORT` (default: the genesis validator.quic)")
	listen := c.strVar("listen", ":0", hostPort, "local UDP `ADDR` the runner's QUIC client binds (HOST:PORT; an empty host is every interface, port 0 an ephemeral port)")
	work := c.durVar("work", 50*time.Millisecond, time.Millisecond, maxBlock, "demo executor work time `D` when the job spec has none (1ms to 1h)")
	failRate := c.intVar("fail-per-mille", 0, 0, 1000, "`N` demo executions per thousand that fail (0 to 1000)")
	execCmd := c.strVar("exec", "", nil, "run each job through `COMMAND` (sh -c; payload on stdin, stdout the output; docs/executor.md) instead of the demo executor")
	execConc := c.intVar("exec-concurrency", 0, 0, 1024, "at most `N` -exec commands at once, also the capacity the runner advertises (0 to 1024; 0: the runner's default capacity, 16)")
	execTimeout := c.durVar("exec-timeout", 0, 0, maxBlock, "kill an -exec command running longer than `D` (0 to 1h; 0: only the job's deadline)")
	execMax := c.intVar("exec-max-output", node.MaxOutput, 1, node.MaxOutput, "an -exec command's stdout beyond `N` bytes fails the job (1 to 4096)")
	blockTime := c.durVar("block-time", time.Second, time.Millisecond, maxBlock, "the chain's block interval `D` assumed for a job's deadline (1ms to 1h)")
	level := c.strVar("log", "info", logLevel, "log `LEVEL` (debug, info, warn, error)")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if code, ok := c.nargs(stderr, 0, 0); !ok {
		return code
	}
	if !c.given("exec") {
		if code, ok := c.notWith(stderr, "without -exec", "exec-concurrency", "exec-timeout", "exec-max-output"); !ok {
			return code
		}
	} else if code, ok := c.notWith(stderr, "with -exec", "work", "fail-per-mille"); !ok {
		return code
	}
	log, err := logger(stderr, *level)
	if err != nil {
		fmt.Fprintf(stderr, "cip11 runner: %v\n", err)
		return 2
	}
	fail := func(err error) int { fmt.Fprintf(stderr, "cip11 runner: %v\n", err); return 1 }
	g, err := node.LoadGenesis(*gpath)
	if err != nil {
		return fail(genesisFirst(err, singleGenesisCmd(*gpath)))
	}
	k, err := node.LoadRunnerKey(*kpath)
	if err != nil {
		return fail(genesisFirst(err, singleGenesisCmd(*kpath)))
	}
	// The chain view: -api first, then the validators of the runner's
	// Sub(R), then the rest; it fails over between them (issue 28).
	hc, err := node.NewHTTPChain(node.RunnerAPIs(g, k.PubKey(), *api), nil)
	if err != nil {
		return fail(err)
	}
	base := strings.Join(hc.Bases(), ",")
	ctx, cancel := signalContext()
	defer cancel()
	rc := node.RunnerConfig{Genesis: g, Key: k, Chain: hc, WorkTime: *work,
		FailPerMille: uint32(*failRate), Validator: *vaddr, Listen: *listen, Logger: log, Tick: 50 * time.Millisecond, BlockTime: *blockTime}
	if c.given("exec") {
		conc := *execConc
		if conc == 0 {
			conc = node.DefaultRunnerCapacity
		}
		rc.MaxConcurrent = conc // the capacity it advertises (§6.4) is what it can run
		p, err := executor.NewProcess(executor.ProcessConfig{Command: *execCmd, MaxOutput: *execMax, MaxConcurrent: conc,
			Timeout: *execTimeout, Logger: log})
		if err != nil {
			return fail(err)
		}
		rc.Executor = p
	}
	r, err := node.NewRunner(ctx, rc)
	if err != nil {
		return fail(err)
	}
	defer r.Close()
	fmt.Fprintf(stdout, "cip11 runner %s → %s (api %s)\n", k.Address(), rc.ValidatorAddr(), base) // the address it dials
	for _, d := range runnerDials(g, rc.ValidatorAddr()) {
		fmt.Fprintf(stdout, "  dials validator %s at %s\n", d[0], d[1])
	}
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0
		case <-t.C:
			log.Info("runner", "connected", len(r.Client().Connected()), "height", r.Client().Height(), "executed", r.Executed())
		}
	}
}

// runnerDials names the validators a runner of g may dial (its peer key's
// first 8 bytes in hex and its QUIC address): on a network every validator
// of every epoch, of which the runner dials its Sub(R) (§5); otherwise the
// one validator at addr.
func runnerDials(g *node.Genesis, addr string) [][2]string {
	if !g.Network() {
		return [][2]string{{hex.EncodeToString(g.Validator.PeerPubKey[:8]), addr}}
	}
	var out [][2]string
	seen := map[string]bool{}
	for _, e := range g.EpochSets() {
		for _, v := range e.Set {
			k := hex.EncodeToString(v.PeerPubKey[:8])
			if !seen[k+v.QUIC] {
				seen[k+v.QUIC] = true
				out = append(out, [2]string{k, v.QUIC})
			}
		}
	}
	return out
}
