package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/term"
)

func logger(stderr io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log %q: %w", level, err)
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: l})), nil
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// cip11 genesis: write a devnet genesis and its key files.
func runGenesis(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("genesis", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("o", "devnet", "write genesis.json, validator.key and runner-NNNN.key into `DIR`")
	runners := fs.Int("runners", 4, "genesis runners (each gets a key file)")
	seed := fs.Uint64("seed", 1, "key derivation seed (DEVNET ONLY: the keys are a function of it)")
	chainID := fs.Uint64("chain-id", 7011, "chain_id")
	quicAddr := fs.String("quic", "127.0.0.1:7011", "the validator's QUIC UDP address")
	httpAddr := fs.String("http", "127.0.0.1:8011", "the validator's HTTP API address")
	pollDisabled := fs.Bool("poll-disabled", false, "set CIP11_POLL_DISABLED (the poll endpoint answers 410 Gone)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || *runners < 0 {
		fmt.Fprintln(stderr, "cip11 genesis: unexpected arguments")
		return 2
	}
	p := node.DevnetParams()
	p.PollDisabled = *pollDisabled
	d, err := node.NewDevnet(node.GenesisOptions{ChainID: *chainID, Seed: *seed, Runners: *runners, QUIC: *quicAddr, HTTP: *httpAddr, Params: &p})
	if err == nil {
		err = d.Write(*dir, *seed)
	}
	if err != nil {
		fmt.Fprintf(stderr, "cip11 genesis: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s/genesis.json, %s/validator.key and %d runner key files\n", *dir, *dir, *runners)
	return 0
}

// cip11 validator: a single-validator chain node.
func runValidator(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	gpath := fs.String("genesis", "devnet/genesis.json", "genesis `FILE`")
	kpath := fs.String("key", "devnet/validator.key", "validator key `FILE`")
	data := fs.String("data", "", "data `DIR` (Pebble state, block log); empty: a fresh temporary directory")
	blockTime := fs.Duration("block-time", time.Second, "block interval")
	skip := fs.Uint("skip-per-mille", 0, "nullified views per thousand (§9.2 seed rules)")
	listen := fs.String("listen", "", "QUIC UDP address (default: the genesis validator.quic)")
	httpAddr := fs.String("http", "", "HTTP API address (default: the genesis validator.http; \"off\" disables)")
	noSync := fs.Bool("no-fsync", false, "do not fsync blocks")
	pushWindow := fs.Int("push-window", 0, "unanswered assignments in flight per block push; 0: 256 when the UDP receive buffer is under 2 MiB (an unprivileged host), else all at once; -1: all at once")
	level := fs.String("log", "info", "log level (debug, info, warn, error)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || *skip > 1000 {
		fmt.Fprintln(stderr, "cip11 validator: bad arguments")
		return 2
	}
	log, err := logger(stderr, *level)
	if err != nil {
		fmt.Fprintf(stderr, "cip11 validator: %v\n", err)
		return 2
	}
	fail := func(err error) int { fmt.Fprintf(stderr, "cip11 validator: %v\n", err); return 1 }
	g, err := node.LoadGenesis(*gpath)
	if err != nil {
		return fail(err)
	}
	keys, err := node.LoadValidatorKeys(*kpath)
	if err != nil {
		return fail(err)
	}
	reg := prometheus.NewRegistry()
	m, err := httpapi.NewMetrics(reg)
	if err != nil {
		return fail(err)
	}
	vm, err := node.NewMetrics(reg)
	if err != nil {
		return fail(err)
	}
	v, err := node.NewValidator(node.ValidatorConfig{Genesis: g, Keys: keys, DataDir: *data, Listen: *listen, BlockTime: *blockTime,
		SkipPerMille: uint32(*skip), PushWindow: *pushWindow, NoSync: *noSync, Logger: log, Metrics: vm, Registerer: reg})
	if err != nil {
		return fail(err)
	}
	defer v.Close()
	addr := *httpAddr
	if addr == "" {
		addr = g.Validator.HTTP
	}
	httpURL := "off"
	if addr != "off" && addr != "" {
		h, err := httpapi.NewHandler(node.Backend{V: v}, httpapi.Options{PollDisabled: g.P().PollDisabled, Gatherer: reg, Metrics: m, Logger: log})
		if err != nil {
			return fail(err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fail(err)
		}
		srv := node.ServeHTTP(ln, h, log)
		defer srv.Shutdown(node.DefaultHTTPShutdown)
		httpURL = "http://" + ln.Addr().String()
	}
	st := v.Status()
	window := "all at once"
	if w := v.PushWindow(); w > 0 {
		window = fmt.Sprintf("%d in flight", w)
	}
	fmt.Fprintf(stdout, "cip11 validator\n  chain_id            %d\n  quic                %s\n  peer_pubkey         %s\n  validator_set_hash  %s\n  subset_epoch        %d\n  http                %s\n  data                %s\n  height              %d\n  push                %s\n",
		st.ChainID, v.Addr(), st.PeerKey, st.ValidatorSetHash, st.SubsetEpoch, httpURL, v.Dir(), st.Height, window)
	ctx, cancel := signalContext()
	defer cancel()
	if err := v.Run(ctx); err != nil {
		return fail(err)
	}
	return 0
}

// cip11 runner: a runner process.
func runRunner(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	gpath := fs.String("genesis", "devnet/genesis.json", "genesis `FILE`")
	kpath := fs.String("key", "devnet/runner-0000.key", "runner key `FILE`")
	api := fs.String("api", "", "validator HTTP API base URL (default: http:// + the genesis validator.http)")
	vaddr := fs.String("validator", "", "validator QUIC address (default: the genesis validator.quic)")
	work := fs.Duration("work", 50*time.Millisecond, "demo executor work time (when the job spec has none)")
	failRate := fs.Uint("fail-per-mille", 0, "demo executions per thousand that fail")
	level := fs.String("log", "info", "log level")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || *failRate > 1000 {
		fmt.Fprintln(stderr, "cip11 runner: bad arguments")
		return 2
	}
	log, err := logger(stderr, *level)
	if err != nil {
		fmt.Fprintf(stderr, "cip11 runner: %v\n", err)
		return 2
	}
	fail := func(err error) int { fmt.Fprintf(stderr, "cip11 runner: %v\n", err); return 1 }
	g, err := node.LoadGenesis(*gpath)
	if err != nil {
		return fail(err)
	}
	k, err := node.LoadRunnerKey(*kpath)
	if err != nil {
		return fail(err)
	}
	base := *api
	if base == "" {
		base = "http://" + g.Validator.HTTP
	}
	ctx, cancel := signalContext()
	defer cancel()
	r, err := node.NewRunner(ctx, node.RunnerConfig{Genesis: g, Key: k, Chain: node.HTTPChain{Base: base}, WorkTime: *work,
		FailPerMille: uint32(*failRate), Validator: *vaddr, Logger: log, Tick: 50 * time.Millisecond})
	if err != nil {
		return fail(err)
	}
	defer r.Close()
	fmt.Fprintf(stdout, "cip11 runner %s → %s (api %s)\n", k.Address(), g.Validator.QUIC, base)
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

// cip11 devnet: validator, runners and a job generator in one process.
func runDevnet(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("devnet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runners := fs.Int("runners", 50, "runners")
	duration := fs.Duration("duration", 20*time.Second, "how long jobs are generated (then the last jobs drain)")
	blockTime := fs.Duration("block-time", 250*time.Millisecond, "block interval")
	jobs := fs.Int("jobs-per-block", 2, "jobs submitted per block")
	multi := fs.Int("multi-per-mille", 400, "jobs per thousand with M > 1 (negative: none)")
	chaos := fs.Bool("chaos", false, "inject faults: runners killed mid-job, connections dropped, validator restarts")
	httpAddr := fs.String("http", "", "serve the HTTP API and the dashboard on `ADDR` (e.g. 127.0.0.1:8011)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	data := fs.String("data", "", "validator data `DIR` (default: a temporary directory)")
	seed := fs.Uint64("seed", 1, "seed")
	failRate := fs.Uint("fail-per-mille", 0, "demo executions per thousand that fail")
	quiet := fs.Bool("quiet", false, "no progress lines")
	level := fs.String("log", "warn", "log level")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || *runners < 1 || *runners > 5000 || *failRate > 1000 || *multi > 1000 {
		fmt.Fprintln(stderr, "cip11 devnet: bad arguments")
		return 2
	}
	log, err := logger(stderr, *level)
	if err != nil {
		fmt.Fprintf(stderr, "cip11 devnet: %v\n", err)
		return 2
	}
	m := *multi
	if m == 0 {
		m = -1
	}
	cfg := node.DevnetConfig{Runners: *runners, Duration: *duration, BlockTime: *blockTime, JobsPerBlock: *jobs, MultiPerMille: m,
		Chaos: *chaos, HTTP: *httpAddr, DataDir: *data, Seed: *seed, FailPerMille: uint32(*failRate), Logger: log, NoSync: *data == ""}
	tty := false
	if f, ok := stderr.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	if !*quiet {
		cfg.Progress = func(p node.DevnetProgress) {
			phase := "running"
			if p.Draining {
				phase = "draining"
			}
			end := "\n"
			if tty {
				end = "\r"
			}
			fmt.Fprintf(stderr, "[%5.1fs] %s height %d, present %d, jobs %d submitted, %d completed, %d expired%s",
				p.Elapsed.Seconds(), phase, p.Height, p.Present, p.Submitted, p.Completed, p.Expired, end)
		}
	}
	ctx, cancel := signalContext()
	defer cancel()
	rep, err := node.RunDevnet(ctx, cfg)
	if tty && !*quiet {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "cip11 devnet: interrupted")
			return 1
		}
		fmt.Fprintf(stderr, "cip11 devnet: %v\n", err)
		return 1
	}
	if *asJSON {
		b, _ := json.Marshal(rep)
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprintf(stdout, `cip11 devnet: %d runners, %d blocks in %.1f s (validator starts %d, runner kills %d, connection drops %d)
  jobs        submitted %d, assigned %d, completed %d, expired %d, lost %d
  pushes      %d sent, %d acked (Accepted); %d timeout re-selections
  push        latency block applied → JobAck: p50 %.1f ms, p99 %.1f ms
  job         latency submit → included result: p50 %d blocks, p99 %d blocks
  first draw  hit a present runner in %.1f%% of %d first selections
`, rep.Runners, rep.Blocks, rep.Elapsed, rep.ValidatorStarts, rep.RunnerKills, rep.ConnDrops,
			rep.Submitted, rep.Assigned, rep.Completed, rep.Expired, rep.Lost, rep.Pushed, rep.Acked, rep.Reselections,
			rep.PushP50Millis, rep.PushP99Millis, rep.JobBlocksP50, rep.JobBlocksP99, rep.FirstDrawHitPct, rep.FirstDraws)
	}
	if rep.Lost != 0 {
		fmt.Fprintf(stderr, "cip11 devnet: %d jobs lost\n", rep.Lost)
		return 1
	}
	return 0
}
