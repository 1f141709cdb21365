package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cip11/cip11/adapters/cometbft"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/cmd/internal/devnet"
	"golang.org/x/term"
)

// cip11 devnet: validator, runners and a job generator in one process.
func runDevnet(args []string, stdout, stderr io.Writer) int {
	c := newCommand("devnet", "[-runners N] [-duration D] [-phase N] [-chaos] [-http ADDR] [-json] [flags]\n       cip11 devnet -validators N [-runners N] [-duration D] [-chaos [-kills N] | -reconfigure] [-json] [flags]", `
Run a whole devnet in one process: a validator, -runners runners connected
over QUIC on loopback and a job generator submitting -jobs-per-block jobs a
block for -duration; then wait for the last jobs to end and print a report
(the §14 phase, jobs, pushes, poll deliveries, latencies, first-draw hit
rate). -phase picks the delivery flags as for cip11 genesis (0: no QUIC, poll
only; 1: push alongside poll; 2: push primary, poll fallback; 3: push only).
Exit 1 if a job was lost. Ctrl-C (SIGINT) stops the run: the report so
far is printed (interrupted, with the jobs not yet ended as open, not
lost) and the exit status is 130. No positional arguments.

With -validators N: the same in one process over a network of N validators
agreeing through in-process CometBFT nodes on loopback (each with its own
Pebble and CometBFT directories), runners dialing the validators of their
Sub(R); the report adds pushes per assignment, block intervals, whether
every validator's app hash agreed at every height and whether a block log
replays, presence coverage (the proposer's PresenceInput over the runners
connected to any validator; -gossip=false turns presence gossip off) and
jobs per runner. -chaos then kills one validator and restarts it on its
directories -kills times, checking that it catches up. -reconfigure (DEVNET
ONLY: in band, the genesis names a devnet admin whose signed reconfiguration
transactions the chain accepts, SPEC-NOTES C11; 12 blocks before each
activation the devnet dealer hands the new epoch's threshold shares to its
members and the admin's transaction is submitted) adds a validator to the
set at height -add-at (at least 15) and removes the first at -remove-at (at
least -add-at + max(-overlap, 12)), with OVERLAP_BLOCKS = -overlap (§5.3);
the report adds the runners re-homed to
their new Sub(R) and the removed validator's admissions after its cutoff.
Exit 1 also if the app hashes differ, the replay disagrees, a killed
validator did not catch up or, with -reconfigure, a runner is still
connected outside its Sub(R) or the removed validator admitted a
connection after its cutoff. -mode-a turns on Mode-A presence certificates
(§8.3): validators sign PresenceReceipts over QUIC, runners submit
SubmitPresenceCertificate transactions, the chain keeps presence_proven_until;
with fewer than 20 validators (or -subset below 20) the §8.4 guard is false
and the certificates are shadow state that never removes a runner, with
-validators 20 -subset 20 Mode A is effective and only proven runners are
drawn; the report adds certificates, their bytes a block against the §8.4
estimate and the proven-until coverage, and exit is 1 if no certificate was
accepted or, effective, a seat went to an unproven runner. -block-time,
-phase, -http and -fail-per-mille do not apply.`)
	runners := c.intVar("runners", 50, 1, 5000, "`N` runners (1 to 5000)")
	duration := c.durVar("duration", 20*time.Second, time.Millisecond, maxDuration, "`D`: how long jobs are generated, then the last jobs drain (1ms to 24h)")
	blockTime := c.durVar("block-time", 250*time.Millisecond, time.Millisecond, maxBlock, "block interval `D` (1ms to 1h)")
	jobs := c.intVar("jobs-per-block", 2, 1, 100_000, "`N` jobs submitted per block (1 to 100000)")
	multi := c.intVar("multi-per-mille", 400, 0, 1000, "`N` jobs per thousand with M > 1, 0 to 1000 (0: none)")
	phase := c.intVar("phase", 2, 0, 3, "§14 phase `N` (0 to 3; see above)")
	chaos := c.fs.Bool("chaos", false, "inject faults: runners killed mid-job, connections dropped, validator restarts")
	httpAddr := c.strVar("http", "", optHostPort, "serve the HTTP API and the dashboard on `ADDR` (HOST:PORT, e.g. 127.0.0.1:8011)")
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	data := c.fs.String("data", "", "validator data `DIR` (default: a temporary directory)")
	seed := c.uint64Var("seed", 1, 0, "key and job generator seed `N`")
	failRate := c.intVar("fail-per-mille", 0, 0, 1000, "`N` demo executions per thousand that fail (0 to 1000)")
	quiet := c.fs.Bool("quiet", false, "no progress lines")
	level := c.strVar("log", "warn", logLevel, "log `LEVEL` (debug, info, warn, error)")
	validators := c.intVarText("validators", 0, 0, devnet.MaxValidators, fmt.Sprintf("0 (today's single-validator devnet) or a count from 1 to %d", devnet.MaxValidators),
		fmt.Sprintf("run a network of `N` validators agreeing through CometBFT in this process (1 to %d; 0: the single-validator devnet)", devnet.MaxValidators))
	modeA := c.fs.Bool("mode-a", false, "with -validators: Mode-A presence certificates (§8.3): PRESENCE_HARD_EXCLUDE_ENABLED, t_hard = floor(k/2)+1; effective only with k ≥ 20 (-validators 20 -subset 20), else shadow")
	subset := c.intVar("subset", 0, 0, 64, "with -validators: governance MIN_SUBSET = MAX_SUBSET = `K` (0: the §13 defaults 3 and 8)")
	uncertified := c.intVar("uncertified", 0, 0, 5000, "with -mode-a: the first `N` runners never submit a certificate (shadow: they are still drawn; effective: never)")
	proofTTL := c.intVar("proof-ttl", 0, 0, 100_000, "with -mode-a: PRESENCE_PROOF_TTL_BLOCKS `N` (0: the §13 default 60)")
	timeoutCommit := c.durVar("timeout-commit", 0, 0, time.Minute, "with -validators: CometBFT timeout_commit `D` (0 to 1m; raise it to fit many validators on few cores)")
	kills := c.intVar("kills", 3, 1, 1000, "with -validators -chaos: kill and restart a validator at least `N` times (1 to 1000)")
	devCometLevel := c.strVar("comet-log", "none", cometLevel, "with -validators: CometBFT's own log `LEVEL` on stderr (none, error, info, debug)")
	rc := addReconfigFlags(c, "add a validator at -add-at and remove the first at -remove-at")
	gossip := c.fs.Bool("gossip", true, "with -validators: presence gossip between validators (§8.2); -gossip=false: each proposer proposes its own connections only")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if code, ok := c.nargs(stderr, 0, 0); !ok {
		return code
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
	if *validators > 0 {
		if code, ok := c.notWith(stderr, "with -validators (CometBFT sets the block pace; the network devnet takes no phase, dashboard or failure rate)",
			"block-time", "phase", "http", "fail-per-mille"); !ok {
			return code
		}
		cl, err := cometbft.NewLogger(stderr, *devCometLevel)
		if err != nil {
			return c.usageError(stderr, "-comet-log: %v", err)
		}
		if c.given("gossip") && *validators < 2 {
			return c.usageError(stderr, "-gossip needs -validators 2 or more")
		}
		if c.given("kills") && !*chaos {
			return c.usageError(stderr, "-kills needs -chaos")
		}
		if code, ok := rc.check(c, stderr); !ok {
			return code
		}
		if *rc.on && *chaos {
			return c.usageError(stderr, "-reconfigure and -chaos do not combine")
		}
		if lead := devnet.ReconfigureSubmitLead; *rc.on && (*rc.addAt < lead+3 || *rc.removeAt < *rc.addAt+max(*rc.overlap, lead)) {
			return c.usageError(stderr, "-reconfigure in band: -add-at %d must be at least %d and -remove-at %d at least -add-at + max(-overlap %d, %d) (the admin's transaction goes in %d blocks ahead, SPEC-NOTES C11)",
				*rc.addAt, lead+3, *rc.removeAt, *rc.overlap, lead, lead)
		}
		if code, ok := rc.spacing(c, stderr); !ok {
			return code
		}
		if *chaos && *validators < 4 {
			return c.usageError(stderr, "-chaos kills one validator and needs -validators 4 or more (f = 1), not %d", *validators)
		}
		if (c.given("proof-ttl") || c.given("uncertified")) && !*modeA {
			return c.usageError(stderr, "-proof-ttl and -uncertified need -mode-a")
		}
		if *uncertified > *runners {
			return c.usageError(stderr, "-uncertified %d is more than the %d runners", *uncertified, *runners)
		}
		return runNetworkDevnet(stdout, stderr, devnet.NetworkConfig{Validators: *validators, Runners: *runners, Duration: *duration,
			JobsPerBlock: *jobs, MultiPerMille: m, Chaos: *chaos, Kills: *kills,
			Reconfigure: *rc.on, AddAt: uint64(*rc.addAt), RemoveAt: uint64(*rc.removeAt), Overlap: uint64(*rc.overlap), Dir: *data, NoSync: *data == "", Seed: *seed, Logger: log, NoGossip: !*gossip, CometLogger: cl,
			ModeA: *modeA, Subset: *subset, Uncertified: *uncertified, ProofTTL: uint64(*proofTTL), TimeoutCommit: *timeoutCommit}, *asJSON, *quiet)
	}
	if code, ok := c.notWith(stderr, "without -validators (the single-validator devnet's chaos has its own plan; one validator has no peers to gossip with or to reconfigure)", "kills", "gossip", "comet-log", "reconfigure", "add-at", "remove-at", "overlap", "mode-a", "subset", "proof-ttl", "uncertified", "timeout-commit"); !ok {
		return code
	}
	ph := node.Phase(*phase)
	cfg := devnet.Config{Phase: &ph, Runners: *runners, Duration: *duration, BlockTime: *blockTime, JobsPerBlock: *jobs, MultiPerMille: m,
		Chaos: *chaos, HTTP: *httpAddr, DataDir: *data, Seed: *seed, FailPerMille: uint32(*failRate), Logger: log, NoSync: *data == ""}
	tty := isTerminal(stderr)
	if !*quiet {
		line := progressLine(stderr, tty)
		cfg.Progress = func(p devnet.Progress) {
			line(p.Elapsed, p.Draining, fmt.Sprintf("height %d, present %d, jobs %d submitted, %d completed, %d expired",
				p.Height, p.Present, p.Submitted, p.Completed, p.Expired))
		}
	}
	ctx, cancel := signalContext()
	defer cancel()
	rep, err := devnet.Run(ctx, cfg)
	if tty && !*quiet {
		fmt.Fprintln(stderr)
	}
	interrupted := errors.Is(err, context.Canceled)
	if err != nil && (!interrupted || rep == nil) {
		if interrupted {
			fmt.Fprintln(stderr, "cip11 devnet: interrupted before the validator was up: no report")
			return signalExit(ctx)
		}
		fmt.Fprintf(stderr, "cip11 devnet: %v\n", err)
		return 1
	}
	if *asJSON {
		b, _ := json.Marshal(rep)
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprintf(stdout, `cip11 devnet: phase %s, %d runners, %d blocks in %.1f s (validator starts %d, runner kills %d, connection drops %d)
  jobs        submitted %d, assigned %d, completed %d, expired %d, lost %d
  pushes      %d sent, %d acked (Accepted); %d poll deliveries; %d timeout re-selections
  push        latency block applied → JobAck: p50 %.1f ms, p99 %.1f ms
  job         latency submit → included result: p50 %d blocks, p99 %d blocks
  first draw  hit a present runner in %.1f%% of %d first selections
`, rep.Phase, rep.Runners, rep.Blocks, rep.Elapsed, rep.ValidatorStarts, rep.RunnerKills, rep.ConnDrops,
			rep.Submitted, rep.Assigned, rep.Completed, rep.Expired, rep.Lost, rep.Pushed, rep.Acked, rep.Polled, rep.Reselections,
			rep.PushP50Millis, rep.PushP99Millis, rep.JobBlocksP50, rep.JobBlocksP99, rep.FirstDrawHitPct, rep.FirstDraws)
	}
	if interrupted {
		fmt.Fprintf(stderr, "cip11 devnet: interrupted: the report is the run so far (%d jobs had not ended)\n", rep.Open)
		return signalExit(ctx)
	}
	if rep.Lost != 0 {
		fmt.Fprintf(stderr, "cip11 devnet: %d jobs lost\n", rep.Lost)
		return 1
	}
	return 0
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressLine prints a devnet's progress lines to stderr ("[  1.0s]
// running …"): on a terminal each rewrites the last.
func progressLine(stderr io.Writer, tty bool) func(elapsed time.Duration, draining bool, what string) {
	end := "\n"
	if tty {
		end = "\r"
	}
	return func(elapsed time.Duration, draining bool, what string) {
		phase := "running"
		if draining {
			phase = "draining"
		}
		fmt.Fprintf(stderr, "[%5.1fs] %s %s%s", elapsed.Seconds(), phase, what, end)
	}
}
