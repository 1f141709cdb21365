package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cip11/cip11/adapters/cometbft"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/cmd/internal/devnet"
	"github.com/cip11/cip11/internal/devkeys"
)

// The network commands (issue 19 §4): a genesis of N validators, one
// validator of such a network as a process, and the in-process network
// devnet. Each is the -validators or -home form of the command of the same
// name in node.go.

// writeNetwork is cip11 genesis -validators: cometbft.NewNetwork and
// Network.Write into dir.
// overlap, if not 0, is OVERLAP_BLOCKS (a network with reconfigurations).
func writeNetwork(stdout, stderr io.Writer, dir string, o cometbft.NetworkOptions, ph node.Phase, overlap uint64) int {
	p, err := node.WithPhase(node.DefaultGenesisParams(), ph)
	if err != nil {
		fmt.Fprintf(stderr, "cip11 genesis: %v\n", err)
		return 2
	}
	if overlap > 0 {
		p.OverlapBlocks = overlap
	}
	o.Params = &p
	nw, err := cometbft.NewNetwork(o)
	if err == nil {
		err = nw.Write(dir)
	}
	if errors.Is(err, node.ErrGenesisExists) {
		fmt.Fprintf(stderr, "cip11 genesis: %v\n(a network is never overwritten: its validators' chain lives in their homes; remove %s to start over)\n", err, dir)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "cip11 genesis: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote a %d-validator network (chain_id %d, phase %s): %s and %d runner key files in %s\n",
		len(nw.Homes), nw.Homes[0].Genesis.ChainID, ph, homeRange(dir, len(nw.Homes)), o.Runners, dir)
	for i, h := range nw.Homes {
		fmt.Fprintf(stdout, "  v%-3d p2p %s  quic %s  http %s\n", i, strings.TrimPrefix(h.Config.P2P.ListenAddress, "tcp://"),
			h.Genesis.Validator.QUIC, h.Genesis.Validator.HTTP)
	}
	if o.Hosts != nil {
		fmt.Fprintf(stdout, "  each home listens on its host's address: copy %s to that machine and run cip11 validator -home there (docs/network.md)\n", filepath.Join(dir, "v<i>"))
	}
	for _, e := range nw.Homes[0].Genesis.EpochSets()[1:] {
		fmt.Fprintf(stdout, "  epoch %d activates at height %d with %d validators (OVERLAP_BLOCKS %d)\n", e.Epoch, e.Activation, len(e.Set), p.OverlapBlocks)
	}
	if d := nw.Dealer; d != nil {
		fmt.Fprintf(stdout, "  DEVNET in-band reconfiguration: the devnet admin is %s; %s holds its key and every planned epoch's shares (0600)\n",
			nw.Homes[0].Genesis.ReconfigAdmin, filepath.Join(dir, "dealer.json"))
		for _, e := range d.Epochs {
			r := e.Reconfigure
			fmt.Fprintf(stdout, "  epoch %d is planned at height %d with %d validators (OVERLAP_BLOCKS %d): run cip11 reconfigure -net %s -epoch %d at a height from %d to %d (later, it picks a later activation)\n",
				r.Epoch, r.Activation, len(r.Set), p.OverlapBlocks, dir, r.Epoch, prevActivation(d, int(r.Epoch)), uint64(r.Activation)-blockexec.ReconfigureLeadBlocks-2)
		}
	}
	return 0
}

// prevActivation is the activation of the epoch before planned epoch e
// (1 for epoch 1): the earliest height its reconfiguration is accepted.
func prevActivation(d *devkeys.Dealer, e int) uint64 {
	if e < 2 {
		return 1
	}
	return uint64(d.Epochs[e-2].Reconfigure.Activation)
}

// runReconfigure is cip11 reconfigure: the devnet admin's in-band
// reconfiguration of a process network (SPEC-NOTES C11).
func runReconfigure(args []string, stdout, stderr io.Writer) int {
	c := newCommand("reconfigure", "-net DIR -epoch E [-activation H] [-node URL]", `
DEVNET ONLY: reconfigure a running network in band (SPEC-NOTES C11). DIR is
a network that cip11 genesis -validators N -reconfigure -in-band wrote: its
genesis names a devnet admin, and DIR/dealer.json holds the admin's key and
every planned epoch's set and threshold shares. This command is the devnet
dealer and admin: it writes each member's share of epoch E into its home's
validator.key (epoch_shares; a running validator reads it there when it
needs it), then signs the admin's reconfiguration transaction and submits
it to -node. The chain accepts it only as the next epoch, one at a time
(after the previous epoch activated), at least 8 blocks before its
activation height and OVERLAP_BLOCKS after the previous activation; the
node's refusal says which rule failed. Without -activation the command
asks -node for its height and the committed epochs (GET /status, GET
/epochs) and takes the planned activation if it is still at least 12
blocks ahead, else the height 20 blocks ahead (never inside the previous
epoch's OVERLAP_BLOCKS; it prints the height it took): an operator need
not meet a height, only wait for the previous epoch to activate. Exit 0 when submitted, 1 when refused or
unreachable, 2 on a usage error. No positional arguments.`)
	dir := c.strVar("net", "", nonEmpty, "the network `DIR` (its dealer.json and homes v<i>)")
	epoch := c.intVar("epoch", 0, 1, 64, "the planned epoch `E` to add (1 to 64)")
	act := c.uint64Var("activation", 0, 0, "activation height `H` (0: the planned one if still 12 blocks ahead, else 20 blocks ahead of the node)")
	api := c.strVar("node", "", httpURL, "a validator's HTTP API base `URL` (default: http:// + v0's genesis validator.http)")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if code, ok := c.nargs(stderr, 0, 0); !ok {
		return code
	}
	if *dir == "" || *epoch == 0 {
		return c.usageError(stderr, "-net and -epoch are required")
	}
	d, err := devkeys.LoadDealer(filepath.Join(*dir, "dealer.json"))
	if err != nil {
		fmt.Fprintf(stderr, "cip11 reconfigure: %v (was %s written by cip11 genesis -validators N -reconfigure -in-band?)\n", err, *dir)
		return 1
	}
	if *epoch > len(d.Epochs) {
		return c.usageError(stderr, "-epoch %d: %s plans epochs 1 to %d", *epoch, filepath.Join(*dir, "dealer.json"), len(d.Epochs))
	}
	base := *api
	var overlap uint64
	{
		g, err := node.LoadGenesis(filepath.Join(*dir, "v0", "cip11.json"))
		if err != nil {
			fmt.Fprintf(stderr, "cip11 reconfigure: %v\n", genesisFirst(err, networkGenesisCmd(filepath.Join(*dir, "v0"))))
			return 1
		}
		if base == "" {
			base = "http://" + g.Validator.HTTP
		}
		overlap = g.P().OverlapBlocks
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if *act == 0 {
		planned := uint64(d.Epochs[*epoch-1].Reconfigure.Activation)
		a, err := pickActivation(ctx, base, planned, overlap)
		if err != nil {
			fmt.Fprintf(stderr, "cip11 reconfigure: %v\n", err)
			return 1
		}
		if a != planned {
			fmt.Fprintf(stdout, "the planned activation height %d is less than %d blocks ahead of the chain: taking %d\n", planned, plannedAhead, a)
		}
		*act = a
	}
	tx, shares, err := d.Reconfiguration(*epoch, *act)
	if err != nil {
		fmt.Fprintf(stderr, "cip11 reconfigure: %v\n", err)
		return 1
	}
	homes := slices.Sorted(maps.Keys(shares))
	for _, h := range homes {
		path := filepath.Join(*dir, fmt.Sprintf("v%d", h), "validator.key")
		k, err := node.LoadValidatorKeys(path)
		if err != nil {
			fmt.Fprintf(stderr, "cip11 reconfigure: %v\n", err)
			return 1
		}
		if _, ok := k.Share(uint64(*epoch)); ok {
			continue // handed out before (a retried submission)
		}
		if err := k.AddEpochShare(uint64(*epoch), shares[h]); err != nil {
			fmt.Fprintf(stderr, "cip11 reconfigure: %s: %v\n", path, err)
			return 1
		}
		if err := k.Write(path); err != nil {
			fmt.Fprintf(stderr, "cip11 reconfigure: %v\n", err)
			return 1
		}
	}
	if err := (node.HTTPChain{Base: base}).Submit(ctx, tx); err != nil {
		fmt.Fprintf(stderr, "cip11 reconfigure: epoch %d refused: %v\n", *epoch, err)
		return 1
	}
	r := d.Epochs[*epoch-1].Reconfigure
	h := uint64(r.Activation)
	if *act != 0 {
		h = *act
	}
	fmt.Fprintf(stdout, "submitted the devnet admin's reconfiguration to epoch %d (%d validators, activation height %d) to %s; shares written for v%v\n",
		*epoch, len(r.Set), h, base, homes)
	return 0
}

// activationAhead is how many blocks ahead of the node's height cip11
// reconfigure takes an activation it picks: the chain's 8-block lead
// (blockexec.ReconfigureLeadBlocks) and 12 blocks for the transaction to
// reach a block (a few seconds on a loaded devnet). A planned activation
// is kept when it is at least plannedAhead blocks ahead (the lead and 4
// blocks, devnet.ReconfigureSubmitLead).
const (
	activationAhead = blockexec.ReconfigureLeadBlocks + 12
	plannedAhead    = devnet.ReconfigureSubmitLead
)

// ErrNodeView: cip11 reconfigure could not read the node's height or
// epochs to pick an activation height.
var ErrNodeView = errors.New("cannot read the node's height and epochs")

// pickActivation is cip11 reconfigure's activation height without
// -activation: planned if it is at least plannedAhead blocks past the
// node's height, else the node's height + activationAhead; never less than
// OVERLAP_BLOCKS past the last committed epoch's activation (§5.3).
func pickActivation(ctx context.Context, base string, planned, overlap uint64) (uint64, error) {
	h, err := (node.HTTPChain{Base: base}).Height(ctx)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrNodeView, base, err)
	}
	var ep httpapi.EpochsResponse
	if err := getJSONCtx(ctx, base+"/epochs", &ep); err != nil {
		return 0, fmt.Errorf("%w: %s/epochs: %w", ErrNodeView, base, err)
	}
	var floor uint64 // §5.3: OVERLAP_BLOCKS after the last activation
	if n := len(ep.Epochs); n > 0 {
		floor = uint64(ep.Epochs[n-1].Activation) + overlap
	}
	if planned >= h+plannedAhead && planned >= floor {
		return planned, nil
	}
	return max(h+activationAhead, floor), nil
}

// getJSONCtx decodes the JSON body of a GET of url (status 200) into dst.
func getJSONCtx(ctx context.Context, url string, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(dst)
}

// homeRange names the homes of an n-validator network in dir.
func homeRange(dir string, n int) string {
	if n == 1 {
		return filepath.Join(dir, "v0")
	}
	return filepath.Join(dir, "v0") + " … " + filepath.Join(dir, "v"+strconv.Itoa(n-1))
}

// cometLevel accepts CometBFT's log levels (cometbft.NewLogger's).
func cometLevel(s string) error {
	if _, err := cometbft.NewLogger(nil, s); err != nil {
		return errors.New("must be none, error, info or debug")
	}
	return nil
}

// netValidator is what cip11 validator -home takes from its flags.
type netValidator struct {
	home, httpAddr string
	noSync         bool
	log            *slog.Logger
	cometLevel     string
	stallBlocks    int
	snaps          snapshotFlags
	stateSync      *cometbft.StateSyncOptions
}

// snapshotFlags are cip11 validator's snapshot and retention flags.
type snapshotFlags struct {
	interval, keepBlocks uint64
	keep                 int
}

// rpcList checks -state-sync: HOST:PORT entries, comma-separated.
func rpcList(s string) error {
	if s == "" {
		return nil
	}
	for _, a := range strings.Split(s, ",") {
		if err := hostPort(a); err != nil {
			return err
		}
	}
	return nil
}

// hexHash checks -trust-hash: 64 hex digits.
func hexHash(s string) error {
	if s == "" {
		return nil
	}
	if b, err := hex.DecodeString(s); err != nil || len(b) != 32 {
		return errors.New("must be 64 hex digits")
	}
	return nil
}

// runNetworkValidator is cip11 validator -home: one validator of a network
// (cometbft.StartNode) with the HTTP API on the genesis validator.http,
// until SIGINT or SIGTERM.
func runNetworkValidator(stdout, stderr io.Writer, cfg netValidator) int {
	fail := func(err error) int { fmt.Fprintf(stderr, "cip11 validator: %v\n", err); return 1 }
	h, err := cometbft.ReadHome(cfg.home)
	if err != nil {
		return fail(genesisFirst(err, networkGenesisCmd(cfg.home)))
	}
	comet, err := cometbft.NewLogger(stderr, cfg.cometLevel)
	if err != nil {
		return fail(err)
	}
	reg, m, vm, err := validatorMetrics()
	if err != nil {
		return fail(err)
	}
	ctx, cancel := signalContext()
	defer cancel()
	nd, err := cometbft.StartNode(ctx, cometbft.NodeConfig{Home: cfg.home, Logger: cfg.log, CometLogger: comet, NoSync: cfg.noSync,
		Metrics: vm, Registerer: reg, StallBlocks: cfg.stallBlocks, SnapshotInterval: cfg.snaps.interval, SnapshotKeep: cfg.snaps.keep,
		KeepBlocks: cfg.snaps.keepBlocks, StateSync: cfg.stateSync})
	if err != nil {
		return fail(err)
	}
	var failed bool // a fatal failure: the close is bounded, the exit must come
	defer func() {
		if err := closeWithin(nd.Close, failed, failedCloseLimit); err != nil {
			cfg.log.Warn("closing the node", "err", err)
		}
	}()
	httpURL, stop, err := serveAPI(nd.V, h.Genesis, cfg.httpAddr, reg, m, cfg.log)
	if err != nil {
		return fail(err)
	}
	defer stop()
	printBanner(stdout, nd.V, httpURL, [][2]string{
		{"home", cfg.home},
		{"validator", fmt.Sprintf("%d of %d (share index %d)", h.Index, len(h.Genesis.Set), h.Index+1)},
		{"p2p", strings.TrimPrefix(h.Config.P2P.ListenAddress, "tcp://")},
	})
	// Run returns on SIGINT or SIGTERM (nil), or on a fatal failure:
	// CometBFT's consensus failure, the core's sticky failure or its
	// store's, whose cause goes to stderr before the exit (1).
	if err := nd.Run(ctx); err != nil {
		failed = true
		return fail(err)
	}
	return 0
}

// failedCloseLimit bounds the close of a failed node: its stores may be
// on a full disk, and the process must exit within seconds of the failure.
const failedCloseLimit = 5 * time.Second

// closeWithin runs close and, when bounded, gives up waiting after d (the
// process exits and the kernel releases what close did not).
func closeWithin(close func() error, bounded bool, d time.Duration) error {
	if !bounded {
		return close()
	}
	done := make(chan error, 1)
	go func() { done <- close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("close did not finish within %v; exiting", d)
	}
}

// netDevnet runs the network devnet; tests replace it to check the flags'
// wiring without running a network.
var netDevnet = devnet.RunNetwork

// runNetworkDevnet is cip11 devnet -validators: devnet.RunNetwork and its
// report. Exit 1 if a job was lost or the validators' app hashes differ,
// and with -chaos if the killed validator did not catch up or its block
// log does not replay (RunNetwork replays it only then).
func runNetworkDevnet(stdout, stderr io.Writer, cfg devnet.NetworkConfig, asJSON, quiet bool) int {
	tty := isTerminal(stderr)
	if !quiet {
		line := progressLine(stderr, tty)
		cfg.Progress = func(p devnet.NetworkProgress) {
			line(p.Elapsed, p.Draining, fmt.Sprintf("height %d, jobs %d submitted, %d completed", p.Height, p.Submitted, p.Completed))
		}
	}
	// One P per in-process validator (unless GOMAXPROCS is set): each
	// would have its own machine, and with fewer Ps the validators'
	// consensus cryptography delays the runners' and validators' QUIC
	// goroutines (push p99 about 2× on two cores; docs/network.md).
	if os.Getenv("GOMAXPROCS") == "" {
		members := cfg.Validators
		if cfg.Reconfigure {
			members++
		}
		if runtime.GOMAXPROCS(0) < members {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(members))
		}
	}
	ctx, cancel := signalContext()
	defer cancel()
	rep, err := netDevnet(ctx, cfg)
	if tty && !quiet {
		fmt.Fprintln(stderr)
	}
	interrupted := errors.Is(err, context.Canceled)
	if err != nil && (!interrupted || rep == nil) {
		if interrupted {
			fmt.Fprintln(stderr, "cip11 devnet: interrupted before a validator was up: no report")
			return signalExit(ctx)
		}
		fmt.Fprintf(stderr, "cip11 devnet: %v\n", err)
		return 1
	}
	if rep == nil {
		fmt.Fprintln(stderr, "cip11 devnet: no report")
		return 1
	}
	if asJSON {
		b, err := json.Marshal(rep)
		if err != nil {
			fmt.Fprintf(stderr, "cip11 devnet: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, string(b))
	} else {
		printNetworkReport(stdout, rep, cfg)
	}
	if interrupted {
		fmt.Fprintf(stderr, "cip11 devnet: interrupted: the report is the run so far (%d jobs had not ended)\n", rep.Open)
		return signalExit(ctx)
	}
	var bad []string
	if rep.Lost != 0 {
		bad = append(bad, fmt.Sprintf("%d jobs lost", rep.Lost))
	}
	if !rep.AppHashesAgree {
		bad = append(bad, "the validators' app hashes differ")
	}
	if cfg.Chaos && !rep.CaughtUp {
		bad = append(bad, "a restarted validator did not catch up")
	}
	if cfg.Chaos && !rep.Replayed() {
		bad = append(bad, "the restarted validator's block log does not replay")
	}
	if cfg.Reconfigure {
		if !rep.Replayed() {
			bad = append(bad, "the removed or the added validator's block log does not replay")
		}
		if rep.RunnersStray > 0 {
			bad = append(bad, fmt.Sprintf("%d runners still connected outside their Sub(R)", rep.RunnersStray))
		}
		if rep.RemovedAdmittedAfter > 0 {
			bad = append(bad, fmt.Sprintf("the removed validator admitted %d connections after its cutoff", rep.RemovedAdmittedAfter))
		}
	}
	if ma := rep.ModeA; ma != nil {
		if ma.Effective && ma.SeatsUnproven > 0 {
			bad = append(bad, fmt.Sprintf("Mode A is effective but %d seats went to runners not proven present", ma.SeatsUnproven))
		}
		if ma.Accepted == 0 {
			bad = append(bad, "no presence certificate was accepted")
		}
		if !ma.Effective && cfg.Uncertified > 0 && ma.Seats >= 40 && ma.SeatsUnproven == 0 {
			bad = append(bad, fmt.Sprintf("shadow Mode A, yet none of %d seats went to the %d runners without a certificate", ma.Seats, cfg.Uncertified))
		}
	}
	if len(bad) > 0 {
		fmt.Fprintf(stderr, "cip11 devnet: %s\n", strings.Join(bad, "; "))
		return 1
	}
	return 0
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func printNetworkReport(w io.Writer, r *devnet.NetworkReport, cfg devnet.NetworkConfig) {
	fmt.Fprintf(w, "cip11 devnet: %d validators (CometBFT), %d runners, %d blocks in %.1f s (GOMAXPROCS %d)\n", r.Validators, r.Runners, r.Blocks, r.Elapsed, r.GoMaxProcs)
	fmt.Fprintf(w, "  jobs        submitted %d, completed %d, expired %d, lost %d\n", r.Submitted, r.Completed, r.Expired, r.Lost)
	fmt.Fprintf(w, "  pushes      %d for %d committee seats of %d assignments (%.2f a seat); %d duplicate acks; %d not held (another validator of Sub(R) delivered)\n",
		r.Pushes, r.Seats, r.Assignments, r.PushesPerAssign, r.DuplicateAcks, r.NotHeld)
	fmt.Fprintf(w, "  push        latency p50 %.1f ms, p99 %.1f ms\n", r.PushP50Millis, r.PushP99Millis)
	fmt.Fprintf(w, "  blocks      interval p50 %.0f ms, p99 %.0f ms\n", r.BlockP50Millis, r.BlockP99Millis)
	fmt.Fprintf(w, "  agreement   app hashes agree at %d heights: %s\n", r.HeightsCompared, yesNo(r.AppHashesAgree))
	gossip := "off"
	if r.Gossip {
		gossip = fmt.Sprintf("on (%d bytes sent)", r.GossipBytes)
	}
	fmt.Fprintf(w, "  presence    gossip %s; coverage p50 %.3f, min %.3f, full in %.1f%% of %d blocks; jobs per runner max %d, mean %.2f\n",
		gossip, r.CoverageP50, r.CoverageMin, r.CoverageFullPct, r.CoverageBlocks, r.JobsPerRunnerMax, r.JobsPerRunnerAvg)
	if cfg.Reconfigure {
		fmt.Fprintf(w, "  reconfig    %d epochs (a validator added at %d, the first removed at %d, overlap %d blocks); runners re-homed %d of %d, connected outside Sub(R) %d; removed validator's admissions after its cutoff %d; block logs replay: %s\n",
			r.Epochs, cfg.AddAt, cfg.RemoveAt, cfg.Overlap, r.RunnersRehomed, r.Runners, r.RunnersStray, r.RemovedAdmittedAfter, yesNo(r.Replayed()))
	}
	if cfg.Reconfigure {
		fmt.Fprintf(w, "  goodbyes    sent by validators %v; by runners %v\n", r.GoodbyesByValidators, r.GoodbyesByRunners)
		for _, tl := range r.Overlap {
			fmt.Fprintf(w, "  epoch %-5d activates at %d, cutoff %d: %d runners linked under the new pair from heights %d–%d; last old-pair link up at %d\n",
				tl.Epoch, tl.Activation, tl.Cutoff, tl.Runners, tl.NewPairFirstUp, tl.NewPairLastUp, tl.OldPairLastUp)
		}
	}
	if cfg.Chaos {
		fmt.Fprintf(w, "  chaos       %d validator kills; the restarted validator caught up: %s (slowest %.1f s); its block log replays: %s\n",
			r.ValidatorKills, yesNo(r.CaughtUp), r.CatchUpMaxSeconds, yesNo(r.Replayed()))
	}
	if ma := r.ModeA; ma != nil {
		mode := "shadow (the §8.4 guard is false: certificates never remove a floor-eligible runner)"
		if ma.Effective {
			mode = "EFFECTIVE (hard exclude: PresenceInput is { proven_until ≥ h })"
		}
		fmt.Fprintf(w, "  mode A      %s; k %d, t_hard %d, proof TTL %d blocks\n", mode, ma.K, ma.THard, ma.TTLBlocks)
		fmt.Fprintf(w, "  certs       %d accepted, %d rejected %v; %d receipts; runners submitted %d, received %d receipts (%d refused)\n",
			ma.Accepted, ma.Rejected, ma.Rejections, ma.Receipts, ma.RunnerCertificates, ma.ReceiptsReceived, ma.ReceiptsBad)
		fmt.Fprintf(w, "  cert bytes  %.0f a block in signed transactions (+%.0f in the devnet's JSON body) over %d blocks; §8.4 estimate for these runners %.0f\n",
			ma.TxBytesPerBlock, ma.BodyBytesPerBlock, ma.Blocks, ma.EstimateBytesBlock)
		fmt.Fprintf(w, "  proven      coverage p50 %.3f, min %.3f (from height %d); %d of %d seats drawn without a current proof\n",
			ma.CoverageP50, ma.CoverageMin, ma.FirstProven, ma.SeatsUnproven, ma.Seats)
	}
	if r.Dir != "" {
		fmt.Fprintf(w, "  dir         %s\n", r.Dir)
	}
}

// reconfigFlags are the -reconfigure flags cip11 genesis and cip11 devnet
// share (with -validators: the devnet's scheduled join and removal,
// cometbft.AddThenRemove, with OVERLAP_BLOCKS = -overlap).
type reconfigFlags struct {
	on                       *bool
	addAt, removeAt, overlap *int
}

// addReconfigFlags defines them on c; what says what -reconfigure does.
func addReconfigFlags(c *command, what string) reconfigFlags {
	return reconfigFlags{
		on:       c.fs.Bool("reconfigure", false, "with -validators: "+what+" (DEVNET, §5.3)"),
		addAt:    c.intVar("add-at", 30, 3, 1_000_000, "with -reconfigure: the height `H` the added validator's epoch activates (3 to 1000000)"),
		removeAt: c.intVar("remove-at", 70, 6, 1_000_000, "with -reconfigure: the height `H` the first validator's removal activates (more than -add-at + 2)"),
		overlap:  c.intVar("overlap", 15, 1, 100_000, "with -reconfigure: OVERLAP_BLOCKS `N` (§5.3; 1 to 100000)"),
	}
}

// check refuses -add-at, -remove-at and -overlap without -reconfigure, and
// a removal within two heights of the addition (CometBFT applies a
// validator update two heights on).
func (r reconfigFlags) check(c *command, stderr io.Writer) (int, bool) {
	if !*r.on {
		for _, f := range []string{"add-at", "remove-at", "overlap"} {
			if c.given(f) {
				return c.usageError(stderr, "-%s needs -reconfigure", f), false
			}
		}
		return 0, true
	}
	if *r.removeAt <= *r.addAt+2 {
		return c.usageError(stderr, "-remove-at %d must be more than -add-at %d + 2 (CometBFT applies a validator update two heights on)", *r.removeAt, *r.addAt), false
	}
	return 0, true
}

// spacing refuses, with -reconfigure, activations closer than -overlap
// (node.CheckActivations over 1, -add-at, -remove-at: §5.4 keeps epoch E−1
// admissible until activation(E) + OVERLAP_BLOCKS; the in-band rule is the
// same, SPEC-NOTES C9, C11(b)).
func (r reconfigFlags) spacing(c *command, stderr io.Writer) (int, bool) {
	if !*r.on {
		return 0, true
	}
	add, remove, ov := uint64(*r.addAt), uint64(*r.removeAt), uint64(*r.overlap)
	if err := node.CheckActivations([]uint64{1, add, remove}, ov); err != nil {
		flag, v, least := "-remove-at", remove, add+ov
		if add < 1+ov {
			flag, v, least = "-add-at", add, 1+ov
		}
		return c.usageError(stderr, "%s %d must be at least %d with -overlap %d (%v)", flag, v, least, ov, err), false
	}
	return 0, true
}
