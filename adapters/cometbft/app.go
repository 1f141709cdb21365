package cometbft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	dbm "github.com/cometbft/cometbft-db"
	abci "github.com/cometbft/cometbft/abci/types"
	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"
	cryptoenc "github.com/cometbft/cometbft/crypto/encoding"
	cmtnode "github.com/cometbft/cometbft/node"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/blockheader"
	"github.com/cip11/cip11/blocklayout"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/seed"
)

// CheckTx response codes (the code is the submitter's error class).
const (
	CodeOK         uint32 = 0
	CodeBadRequest uint32 = 1 // node.ErrBadRequest (and anything not below)
	CodeDuplicate  uint32 = 2 // node.ErrDuplicate (§10.3: not a failure)
	CodeFull       uint32 = 3 // chain.ErrMempoolFull (retry later)
	CodeClosed     uint32 = 4 // the validator is closing or failed
)

// AppConfig configures an [App].
type AppConfig struct {
	// Validator is the node the application drives (its Broadcaster is the
	// network's mempool, see [Mempool]).
	Validator *node.Validator
	// Share is the validator's threshold share (D31); Share.Index is its
	// position in the genesis validator_set plus one.
	Share seed.Share
	// VoteAddrs[i] is the CometBFT address (of the vote-signing key) of the
	// epoch-0 validator whose share index is i+1.
	VoteAddrs [][]byte
	// Logger (default: the validator's is not reachable; discard).
	Logger *slog.Logger
	// OnFinalized, if set, is told each finalized height and its state
	// digest (the AppHash), after the block is logged.
	OnFinalized func(h uint64, digest cip11.Hash)
}

// The retention policy Commit's RetainHeight reports is the validator's
// (node.ValidatorConfig.RetainHeight; default: keep every block).

// App is the CIP-11 ABCI++ application (D29–D32): CometBFT decides, the
// validator's synchronous core executes. Every ABCI call becomes one core
// step on the validator's loop:
//
//   - CheckTx is the node's admission (AdmitTx / AdmitJob): checked,
//     journaled and tracked; CometBFT's mempool is the only mempool.
//   - PrepareProposal recovers R_{h−1} from the verified partials in
//     LocalLastCommit, takes the proposer's local PresenceInput and the
//     seeds it has observed, runs the core's Propose over req.Txs (the
//     mempool CometBFT hands it) and lays the block out (header, body,
//     submissions; blocklayout). It never returns an error (CometBFT
//     halts on one).
//   - ProcessProposal decodes the layout, verifies the parent beacon under
//     the group key and runs the core's Check.
//   - ExtendVote / VerifyVoteExtension: the partial seed signature of
//     Round(0, h) (D31).
//   - FinalizeBlock runs the core's Apply on the decided block with what
//     it carries (the core learns unseen specs and results; nothing is
//     admitted again); the AppHash is the state digest. Commit runs the
//     core's Commit, which queues the pushes (§10.1), and returns the
//     retention policy's RetainHeight.
type App struct {
	abci.BaseApplication
	v       *node.Validator
	g       *node.Genesis
	chainID uint64
	log     *slog.Logger
	// sched is the validator's epoch schedule (D30–D31, SPEC-NOTES C11):
	// its owner publishes a new one at the commit that adds an epoch; the
	// App reads it lock-free and keeps no copy.
	sched *node.Schedules
	// addrs0 are epoch 0's CometBFT addresses by share index − 1 (its
	// consensus_pubkeys', or AppConfig.VoteAddrs when it names none).
	addrs0 [][]byte
	onFin  func(uint64, cip11.Hash)
	gossip *presenceReactor // nil: each proposer's own view only
	rej    rejectCounters   // Rejections
	// byz is a test-only misbehaviour (byzantine.go); nil in production.
	byz atomic.Pointer[misbehavior]
	// cmt is the CometBFT node once built (catchUp: nil while its
	// handshake replays); pause is the devnet's paused-validator fault.
	cmt        atomic.Pointer[cmtnode.Node]
	pause      pause
	lastCommit atomic.Int64 // unix ns of the last catchUp (catchUpGap)
	closing    atomic.Bool  // Node.Close has begun (peerFilter)
	// walDir, with retention, is CometBFT's WAL directory Commit trims
	// (waltrim.go); "" leaves it to CometBFT.
	walDir string
	wal    walHead // the WAL head across commits (Commit's)
	// blockDB, with retention, is CometBFT's block store, whose extended
	// commits below its base Commit deletes (ecprune.go); nil: none
	blockDB dbm.DB

	ssMu    sync.Mutex            // restore: the snapshot connection's calls
	restore *node.SnapshotRestore // the snapshot being restored (state sync)

	mu       sync.Mutex          // the fields below: ABCI connections run concurrently
	beacon   *recovered          // the last seed recoverBeacon recovered (not committed yet)
	verified map[partialKey]bool // extensions VerifyVoteExtension accepted, by height
	proposed *proposal           // this validator's last proposal (ProcessProposal skips its own)
	checked  *proposal           // the last proposal ProcessProposal accepted, decoded (FinalizeBlock decodes it once)
}

// addrsOf are epoch e's CometBFT addresses by share index − 1 (a member
// without a consensus key has none: checkEpochs refuses such a genesis
// epoch, and a reconfiguration always names the keys, EpochSetOf).
func (a *App) addrsOf(e *node.ScheduledEpoch) [][]byte {
	switch {
	case e.Epoch == 0:
		return a.addrs0
	case len(e.ConsensusAddrs) != len(e.Set):
		return make([][]byte, len(e.Set))
	}
	return e.ConsensusAddrs
}

// indexOf is the share index in epoch e of the validator with CometBFT
// address addr (0: not in the epoch).
func (a *App) indexOf(e *node.ScheduledEpoch, addr []byte) uint32 {
	for i, x := range a.addrsOf(e) {
		if bytes.Equal(x, addr) {
			return uint32(i + 1)
		}
	}
	return 0
}

type partialKey struct {
	h   uint64
	idx uint32
	sig seed.Signature
}

type proposal struct {
	height uint64
	hdr    []byte
	body   []byte
	p      *blocklayout.Proposal // decoded (checked: another validator's)
	b      *chainlog.Block       // the core's block (proposed: this validator's own)
}

func (p *proposal) same(h uint64, txs [][]byte) bool {
	return p != nil && p.height == h && len(txs) >= 2 && bytes.Equal(p.hdr, txs[0]) && bytes.Equal(p.body, txs[1])
}

// recovered is a seed recovered from the vote extensions of the last
// commit (recoverBeacon): the view's seed before a block carries it.
type recovered struct {
	view uint64
	sig  seed.Signature
}

// NewApp builds the application. The validator must run on a network
// genesis (node.Genesis.Network) whose public shares include cfg.Share's.
func NewApp(cfg AppConfig) (*App, error) {
	if cfg.Validator == nil {
		return nil, fmt.Errorf("%w: Validator", node.ErrNilConfig)
	}
	g := cfg.Validator.Genesis()
	if !g.Network() {
		return nil, fmt.Errorf("%w: the genesis has no validator_set", node.ErrGenesis)
	}
	if len(cfg.VoteAddrs) != len(g.Set) {
		return nil, fmt.Errorf("%w: %d vote addresses for %d validators", node.ErrBadRequest, len(cfg.VoteAddrs), len(g.Set))
	}
	if int(cfg.Share.Index) != g.SelfIndex()+1 {
		return nil, fmt.Errorf("%w: share index %d, this validator is validator_set[%d]", node.ErrKeyFile, cfg.Share.Index, g.SelfIndex())
	}
	if cfg.Validator.Schedules() == nil {
		return nil, fmt.Errorf("%w: Validator (not started)", node.ErrNilConfig)
	}
	a := &App{v: cfg.Validator, g: g, chainID: uint64(g.ChainID), log: cfg.Logger, sched: cfg.Validator.Schedules(),
		onFin: cfg.OnFinalized, verified: map[partialKey]bool{}}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if err := a.checkEpochs(cfg.Share, cfg.VoteAddrs); err != nil {
		return nil, err
	}
	return a, nil
}

// checkEpochs checks the schedule's epochs (the genesis's and those the
// block log committed) against consensus (D30–D31) and fixes epoch 0's
// CometBFT addresses: share must be this validator's epoch-0 share, the
// genesis consensus keys (when it names them) the CometBFT genesis's
// validators voteAddrs, every later epoch's member must have a consensus
// key and activate at 3 or later, and this validator must hold its share
// of every epoch it is a member of (the devnet dealer may still hand an
// in-band one, D31).
func (a *App) checkEpochs(share seed.Share, voteAddrs [][]byte) error {
	s := a.sched.Load()
	e0 := s.Epoch(0)
	if e0.Index >= 0 && share.Key.PublicKey() != [seed.PublicKeySize]byte(e0.Set[e0.Index].ThresholdPubKey) {
		return fmt.Errorf("%w: the epoch-0 share is not this validator's public share in the validator_set", node.ErrKeyFile)
	}
	a.addrs0 = make([][]byte, len(e0.Set))
	for i := range e0.Set {
		switch {
		case e0.ConsensusAddrs != nil && e0.ConsensusAddrs[i] != nil:
			a.addrs0[i] = e0.ConsensusAddrs[i]
		default:
			a.addrs0[i] = voteAddrs[i]
		}
	}
	if len(e0.Set) > 0 && e0.Set[0].ConsensusPubKey != nil {
		for i := range e0.Set { // the CometBFT genesis must agree with the CIP-11 one
			if !bytes.Equal(a.addrs0[i], voteAddrs[i]) {
				return fmt.Errorf("%w: validator_set[%d].consensus_pubkey is not CometBFT genesis validator cip11-v%d", node.ErrGenesis, i, i)
			}
		}
	}
	for _, e := range s.All()[1:] {
		for i, v := range e.Set {
			if v.ConsensusPubKey == nil {
				return fmt.Errorf("%w: epoch %d validator_set[%d] has no consensus_pubkey", node.ErrGenesis, e.Epoch, i)
			}
		}
		if e.Index >= 0 && e.Share == nil && a.g.ReconfigAdmin == nil {
			return fmt.Errorf("%w: no share of epoch %d in the key file", node.ErrKeyFile, e.Epoch)
		}
		if e.Activation < 3 {
			return fmt.Errorf("%w: epoch %d activates at %d; CometBFT applies validator updates two heights after the block that returns them (≥ 3)", node.ErrGenesis, e.Epoch, e.Activation)
		}
	}
	return nil
}

// Info reports the validator's committed height and state digest, so that
// CometBFT's handshake replays only the blocks it is missing.
func (a *App) Info(context.Context, *abci.InfoRequest) (*abci.InfoResponse, error) {
	res := &abci.InfoResponse{Data: "cip11", Version: "r1.3.1", AppVersion: 1}
	if b := a.v.LastBlock(); b != nil {
		res.LastBlockHeight = int64(b.Height)
		res.LastBlockAppHash = b.Out.StateDigest[:]
	}
	return res, nil
}

// Query answers CometBFT's peer filter (config FilterPeers, set by
// StartNode): "/p2p/filter/addr/…" and "/p2p/filter/id/…" pass until
// Node.Close begins, and are refused from then on. CometBFT v1.0.1's
// switch, stopped while a connection it accepted or dialled is being
// added, neither starts nor closes that peer ("Won't start a peer - switch
// is not running"): in one process the connection stays open, and the
// remote validator keeps a dead peer under this validator's ID until its
// pong timeout (over a minute), refusing the restarted validator as a
// duplicate. A refused filter makes the switch close it. Any other path is
// answered as BaseApplication does.
func (a *App) Query(ctx context.Context, req *abci.QueryRequest) (*abci.QueryResponse, error) {
	if strings.HasPrefix(req.Path, "/p2p/filter/") {
		if a.closing.Load() {
			return &abci.QueryResponse{Code: CodeClosed, Log: "the validator is closing"}, nil
		}
		return &abci.QueryResponse{Code: CodeOK}, nil
	}
	return a.BaseApplication.Query(ctx, req)
}

// InitChain checks that CometBFT's validator set is the genesis set (D29:
// static, equal power) and changes nothing.
func (a *App) InitChain(_ context.Context, req *abci.InitChainRequest) (*abci.InitChainResponse, error) {
	if len(req.Validators) != len(a.addrs0) {
		return nil, fmt.Errorf("%w: InitChain with %d validators, the CIP-11 genesis has %d", ErrValidatorSet, len(req.Validators), len(a.addrs0))
	}
	e0 := a.epoch(0)
	for _, u := range req.Validators {
		pk, err := cryptoenc.PubKeyFromTypeAndBytes(u.PubKeyType, u.PubKeyBytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrValidatorSet, err)
		}
		if a.indexOf(e0, pk.Address()) == 0 || u.Power != req.Validators[0].Power {
			return nil, fmt.Errorf("%w: validator %X is not in the CIP-11 set with equal power (D29)", ErrValidatorSet, pk.Address())
		}
	}
	// The response names no validators: CometBFT keeps the genesis set, and
	// the application never returns a validator update (D29: static set).
	return &abci.InitChainResponse{}, nil
}

// CheckTx admits a job spec or a node transaction into the core (on every
// validator that receives it); anything else is refused.
func (a *App) CheckTx(_ context.Context, req *abci.CheckTxRequest) (*abci.CheckTxResponse, error) {
	if req.Type == abci.CHECK_TX_TYPE_RECHECK {
		return &abci.CheckTxResponse{Code: CodeOK}, nil // admitted once; the core keeps it
	}
	err := a.admit(req.Tx)
	if err == nil {
		return &abci.CheckTxResponse{Code: CodeOK}, nil
	}
	return &abci.CheckTxResponse{Code: codeOf(err), Log: err.Error()}, nil
}

func (a *App) admit(tx []byte) error {
	switch {
	case bytes.HasPrefix(tx, []byte("C11J")):
		s, err := chain.DecodeJobSpec(tx)
		if err != nil {
			return fmt.Errorf("%w: %w", node.ErrBadRequest, err)
		}
		_, err = a.v.AdmitJob(s)
		return err
	case bytes.HasPrefix(tx, []byte("C11T")):
		_, err := a.v.AdmitTx(tx)
		return err
	}
	return fmt.Errorf("%w: not a job spec or a node transaction", node.ErrBadRequest)
}

func codeOf(err error) uint32 {
	switch {
	case errors.Is(err, node.ErrDuplicate):
		return CodeDuplicate
	case errors.Is(err, chain.ErrMempoolFull):
		return CodeFull
	case errors.Is(err, node.ErrClosed), errors.Is(err, chain.ErrFailed):
		return CodeClosed
	}
	return CodeBadRequest
}

// errOf maps a CheckTx code back to the node's sentinel. The log is the
// app's own error text (CheckTx: Log is err.Error()), which already begins
// with that sentinel's text; the leading copy is dropped so the sentinel
// is said once ("node: bad request: the job asks for …", not "node: bad
// request: node: bad request: …"). A log without it (CometBFT's own) is
// wrapped whole.
func errOf(code uint32, log string) error {
	var sentinel error
	switch code {
	case CodeOK:
		return nil
	case CodeDuplicate:
		sentinel = node.ErrDuplicate
	case CodeFull:
		sentinel = chain.ErrMempoolFull
	case CodeClosed:
		sentinel = node.ErrClosed
	default:
		sentinel = node.ErrBadRequest
	}
	prefix := sentinel.Error() + ": "
	for strings.HasPrefix(log, prefix) {
		log = strings.TrimPrefix(log, prefix)
	}
	return fmt.Errorf("%w: %s", sentinel, log)
}

// PrepareProposal builds this validator's block (D32). It never returns an
// error: a proposer that cannot build a valid block proposes its mempool
// without a header, which every validator rejects (the round moves on).
func (a *App) PrepareProposal(_ context.Context, req *abci.PrepareProposalRequest) (*abci.PrepareProposalResponse, error) {
	h := uint64(req.Height)
	txs, err := a.prepare(h, req)
	if err != nil {
		a.log.Error("cannot build a valid proposal; proposing one the others reject", "height", h, "err", err)
		return &abci.PrepareProposalResponse{Txs: [][]byte{}}, nil
	}
	return &abci.PrepareProposalResponse{Txs: txs}, nil
}

func (a *App) prepare(h uint64, req *abci.PrepareProposalRequest) ([][]byte, error) {
	cs := node.Consensus{Round: a.round(h), Seed: a.seedOf}
	if h > 1 {
		sig, err := a.recoverBeacon(h, req.LocalLastCommit.Votes)
		if err != nil {
			return nil, err
		}
		r := a.round(h - 1)
		cs.ParentBeacon = &chainlog.Beacon{Epoch: chainlog.U64(r.Epoch), View: chainlog.U64(r.View), Signature: chainlog.Signature(sig)}
		f := h - 1
		cs.Finalized = &f
	}
	pres, err := a.v.PresenceInput(h)
	if err != nil {
		a.log.Warn("no local presence input; proposing an empty present set (fail-open, §7.3)", "height", h, "err", err)
		pres = nil
	}
	if a.gossip != nil && pres != nil {
		if agg, err := a.aggregate(h, pres); err != nil {
			a.log.Warn("presence aggregation failed; proposing the local view (fail-open, §7.3)", "height", h, "err", err)
		} else {
			pres = agg
		}
	}
	pres = a.byzPresence(h, pres)
	p, err := a.v.ProposeBlock(cs, pres, req.Txs)
	if err != nil {
		return nil, err
	}
	txs, err := blocklayout.EncodeProposal(p.Block, p.Carry, p.Extra, req.MaxTxBytes)
	if err != nil {
		return nil, err
	}
	if txs, changed := a.byzProposal(h, txs); changed {
		return a.proposeAltered(h, txs), nil
	}
	a.mu.Lock()
	a.proposed = &proposal{height: h, hdr: txs[0], body: txs[1], b: p.Block}
	a.mu.Unlock()
	return txs, nil
}

// aggregate is PresenceInput(h): the local view own (over registry(h−1))
// united with the peers' views published for heights ≥ h −
// PRESENCE_TIMEOUT_BLOCKS, restricted to registry(h−1) (§8.2, D33).
func (a *App) aggregate(h uint64, own []byte) ([]byte, error) {
	n, err := a.v.RegistrySize(h - 1)
	if err != nil {
		return nil, err
	}
	set, err := presence.Decode(own, n)
	if err != nil {
		return nil, err
	}
	minH := uint64(1)
	if t := a.g.P().PresenceTimeoutBlocks; h > t {
		minH = h - t
	}
	all, err := presence.NewSet(n, a.gossip.union(set.Indices(), n, minH))
	if err != nil {
		return nil, err
	}
	return presence.Encode(all), nil
}

// ProcessProposal accepts a block iff its layout decodes, its parent beacon
// verifies under the group key and the core's Check executes it.
func (a *App) ProcessProposal(_ context.Context, req *abci.ProcessProposalRequest) (*abci.ProcessProposalResponse, error) {
	h := uint64(req.Height)
	a.mu.Lock()
	own := a.proposed.same(h, req.Txs)
	a.mu.Unlock()
	if own {
		return &abci.ProcessProposalResponse{Status: abci.PROCESS_PROPOSAL_STATUS_ACCEPT}, nil
	}
	p, err := a.Verify(h, req.Txs)
	if err != nil {
		reason := a.rej.proposal(err)
		a.log.Warn("proposal rejected", "height", h, "proposer", fmt.Sprintf("%X", req.ProposerAddress), "reason", reason, "err", err)
		return &abci.ProcessProposalResponse{Status: abci.PROCESS_PROPOSAL_STATUS_REJECT}, nil
	}
	a.mu.Lock()
	a.checked = &proposal{height: h, hdr: req.Txs[0], body: req.Txs[1], p: p}
	a.mu.Unlock()
	return &abci.ProcessProposalResponse{Status: abci.PROCESS_PROPOSAL_STATUS_ACCEPT}, nil
}

// Verify is ProcessProposal's check of the block at height h, returning
// the decoded proposal or why it is invalid: a layout sentinel
// (blocklayout.ErrHeaderMissing, …, blockheader's), a schedule sentinel of
// blockheader.CheckSchedule (ErrRoundEpoch, ErrBeaconEpoch, …),
// blocklayout.ErrBeaconInvalid, chain.ErrUnsigned (a registration or
// heartbeat without its signed transaction, SPEC-NOTES C7), or the core's
// chain.ErrInvalidBlock wrapping the executor's reason.
//
// §9.2 (D30, D31): the header's round must be Round(epoch_at(h), h) and its
// parent beacon the seed of Round(epoch_at(h−1), h−1), epoch_at the
// committed epochs' schedule; the beacon is verified under the group key of
// the epoch active at h−1, never of the epoch it names, so a threshold of a
// retired epoch's members cannot offer a second beacon.
func (a *App) Verify(h uint64, txs [][]byte) (*blocklayout.Proposal, error) {
	p, err := blocklayout.DecodeProposal(txs, h, a.chainID)
	if err != nil {
		return nil, err
	}
	if err := blockheader.CheckSchedule(p.Header, h, a.schedule()); err != nil {
		return nil, err
	}
	if pb := p.Header.ParentBeacon; pb != nil {
		if err := a.epochAt(h-1).Group.Verify(a.round(h-1), pb.Signature[:]); err != nil {
			return nil, fmt.Errorf("%w: %w", blocklayout.ErrBeaconInvalid, err)
		}
	}
	if err := a.v.CheckBlock(p.Block, p.Txs); err != nil {
		return nil, err
	}
	return p, nil
}

// FinalizeBlock applies the decided block with what it carries (the
// core learns the specs and results this validator had not seen; nothing
// is admitted again); the AppHash is the state digest after it. The block
// is decoded once: ProcessProposal's decoding is reused, and the core
// reuses the execution of a block with the same hash.
func (a *App) FinalizeBlock(_ context.Context, req *abci.FinalizeBlockRequest) (*abci.FinalizeBlockResponse, error) {
	h := uint64(req.Height)
	a.mu.Lock()
	var b *chainlog.Block
	carried := &chain.Carried{}
	switch {
	case a.checked.same(h, req.Txs):
		b, carried.Txs = a.checked.p.Block, a.checked.p.Txs
	case a.proposed.same(h, req.Txs): // our own: its core built it
		b, carried.Txs = a.proposed.b, learnable(req.Txs[2:])
	}
	a.proposed, a.checked = nil, nil
	a.mu.Unlock()
	if b == nil { // replayed, or decided without our ProcessProposal
		p, err := blocklayout.DecodeProposal(req.Txs, h, a.chainID)
		if err != nil {
			return nil, fmt.Errorf("cometbft: decided block %d does not decode: %w", h, err)
		}
		b, carried.Txs = p.Block, p.Txs
	}
	for _, x := range req.Txs[2:] {
		if bytes.HasPrefix(x, []byte("C11J")) {
			carried.Specs = append(carried.Specs, x)
		}
	}
	fb, err := a.v.FinalizeBlock(b, carried)
	if err != nil {
		return nil, fmt.Errorf("cometbft: block %d: %w", h, err)
	}
	a.mu.Lock()
	for k := range a.verified { // partials of h−1 and before are spent
		if k.h < h {
			delete(a.verified, k)
		}
	}
	a.mu.Unlock()
	res := &abci.FinalizeBlockResponse{AppHash: fb.Out.StateDigest[:], TxResults: make([]*abci.ExecTxResult, len(req.Txs)),
		ValidatorUpdates: a.updatesAt(h)}
	for i := range res.TxResults {
		res.TxResults[i] = &abci.ExecTxResult{Code: CodeOK}
	}
	if a.onFin != nil {
		a.onFin(h, fb.Out.StateDigest)
	}
	return res, nil
}

// learnable decodes the node transactions among raw that the core learns
// from a decided block (chain.Core.Apply): CIP-2 commitments (held reveals
// go at commit, §10.3), reveals and registrations. For its own proposal
// nothing else needs decoding (the core built the block); these are
// decoded even so, since the mempool the block drew from need not have
// been admitted by this validator's own CheckTx (a shared test pool, or
// CometBFT's after a restart of the app).
func learnable(raw [][]byte) []*chain.Tx {
	var out []*chain.Tx
	for _, x := range raw {
		if len(x) < 6 || string(x[:4]) != "C11T" {
			continue
		}
		if k := chain.TxKind(x[5]); k != chain.TxCommit && k != chain.TxReveal && k != chain.TxRegister {
			continue
		}
		if tx, err := chain.DecodeTx(x); err == nil {
			out = append(out, tx)
		}
	}
	return out
}

// updatesAt are the CometBFT validator updates FinalizeBlock(h) returns:
// CometBFT applies them at h+2, so the block two heights before an epoch's
// activation names its set's changes (removed: power 0; added: power 10,
// the genesis power), and consensus and CIP-11 change together (D30).
func (a *App) updatesAt(h uint64) []abci.ValidatorUpdate {
	epochs := a.sched.Load().All()
	for i, e := range epochs[1:] {
		if e.Activation != h+2 {
			continue
		}
		prev := epochs[i]
		var ups []abci.ValidatorUpdate
		for _, v := range prev.Set {
			if v.ConsensusPubKey != nil && node.IndexIn(e.Set, v.PeerPubKey) < 0 {
				ups = append(ups, abci.ValidatorUpdate{Power: 0, PubKeyType: cmted25519.KeyType, PubKeyBytes: v.ConsensusPubKey[:]})
			}
		}
		for _, v := range e.Set {
			if v.ConsensusPubKey != nil && node.IndexIn(prev.Set, v.PeerPubKey) < 0 {
				ups = append(ups, abci.ValidatorUpdate{Power: genesisPower, PubKeyType: cmted25519.KeyType, PubKeyBytes: v.ConsensusPubKey[:]})
			}
		}
		a.log.Info("validator set changes with the next epoch", "epoch", e.Epoch, "activation_height", e.Activation, "updates", len(ups))
		return ups
	}
	return nil
}

// Commit commits the state; pushes go out after (§10.1). RetainHeight is
// the validator's retention policy (default 0: CometBFT keeps every
// block).
func (a *App) Commit(context.Context, *abci.CommitRequest) (*abci.CommitResponse, error) {
	a.pause.wait()
	retain, err := a.v.CommitBlock()
	if err != nil {
		return nil, err
	}
	h := a.v.Height()
	if a.gossip != nil {
		if field, n, err := a.v.LocalPresence(h); err == nil && field != nil {
			a.gossip.publish(h, n, field)
		}
	}
	if a.walDir != "" {
		a.wal.observe(a.walDir)
	}
	if a.walDir != "" && h%walTrimEvery == 0 {
		if n, err := trimWAL(a.walDir, a.wal.keep()); err != nil {
			a.log.Warn("trimming CometBFT's consensus WAL failed", "dir", a.walDir, "err", err)
		} else if n > 0 {
			a.log.Debug("trimmed CometBFT's consensus WAL", "chunks_removed", n)
		}
	}
	if cn := a.cmt.Load(); a.blockDB != nil && cn != nil && h%extPruneEvery == 0 {
		if n, err := pruneExtCommits(a.blockDB, cn.BlockStore().Base()); err != nil {
			a.log.Warn("deleting CometBFT's extended commits below its base failed", "err", err)
		} else if n > 0 {
			a.log.Debug("deleted CometBFT's extended commits below its base", "commits", n)
		}
	}
	return &abci.CommitResponse{RetainHeight: int64(retain)}, nil
}

var _ abci.Application = (*App)(nil)
