package synth

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/state"
)

// GenConfig are the knobs of a synthetic chain.
type GenConfig struct {
	Seed    uint64
	Runners int // runners registered over the first regBlocks blocks
	Blocks  int
	// MultiValidator marks the chain n > 1, so M > 1 committees take the
	// §9.2 full_set branch.
	MultiValidator bool
}

// Shape of the synthetic chain (docs/chainlog.md "The sample chain").
const (
	regBlocks         = 20  // initial registrations are spread over blocks 1..regBlocks
	finalityLag       = 2   // block H executes with FinalizedUpTo{H−2}
	viewsPerEpoch     = 300 // seed.FixedSchedule.ViewsPerEpoch
	firstView         = 1   // seed.FixedSchedule.FirstView
	submitterCount    = 40  // distinct submitters, so MRU keys repeat
	mruActivation     = 100 // Params.MRUActivationHeight of the sample
	minStake          = 10_000_000_000_000
	stakeSpan         = 990_000_000_000_000 // stakes in [1e13, 1e15): total weight stays below 2^64 (D19)
	chainNamespace    = "cip11-sample-chain"
	keyDerivationName = "cip11-gen/v1/epoch-key"
)

// genRunner is the generator's private model of one registered runner.
type genRunner struct {
	addr      cip11.Address
	health    chainlog.Health
	lastHB    uint64
	period    uint64 // heartbeat cadence in blocks
	connected bool   // in the proposer's local presence
}

// generator writes a synthetic chain and runs the executor alongside, so
// every block line carries the outputs this implementation produced.
type generator struct {
	cfg     GenConfig
	rng     *rand.Rand
	x       *blockexec.Executor
	hdr     chainlog.Header
	rounds  []seed.Round // rounds[h] is block h's proposal round; rounds[0] unused
	keys    map[uint64]seed.SecretKey
	sigs    map[seed.Round]seed.Signature
	runners []genRunner
	subs    []cip11.Address
	jobs    map[[32]byte]chainlog.Submit
	results map[uint64][]chainlog.Tx // result transactions, by the height that carries them
	nextJob uint64
}

// Generate writes the synthetic chain cfg describes to w as a chain log,
// deterministically: the same cfg gives the same bytes. progress, if
// non-nil, is called after every block.
func Generate(cfg GenConfig, w io.Writer, progress func(height uint64)) error {
	if cfg.Runners < 1 || cfg.Blocks < 1 {
		return fmt.Errorf("%w: runners %d, blocks %d (both must be ≥ 1)", ErrGenConfig, cfg.Runners, cfg.Blocks)
	}
	g, err := newGenerator(cfg)
	if err != nil {
		return err
	}
	cw, err := chainlog.NewWriter(w, g.hdr)
	if err != nil {
		return err
	}
	for h := uint64(1); h <= uint64(cfg.Blocks); h++ {
		b, err := g.block(h)
		if err != nil {
			return fmt.Errorf("block %d: %w", h, err)
		}
		if err := cw.WriteBlock(b); err != nil {
			return fmt.Errorf("block %d: %w", h, err)
		}
		if progress != nil {
			progress(h)
		}
	}
	return cw.Flush()
}

func newGenerator(cfg GenConfig) (*generator, error) {
	g := &generator{
		cfg:     cfg,
		rng:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		keys:    make(map[uint64]seed.SecretKey),
		sigs:    make(map[seed.Round]seed.Signature),
		jobs:    make(map[[32]byte]chainlog.Submit),
		results: make(map[uint64][]chainlog.Tx),
	}
	if err := g.planRounds(); err != nil {
		return nil, err
	}
	for i := range submitterCount {
		g.subs = append(g.subs, g.address("submitter", uint64(i)))
	}
	hdr, err := g.header()
	if err != nil {
		return nil, err
	}
	g.hdr = hdr
	g.x, err = blockexec.New(hdr, blockexec.Options{})
	return g, err
}

// planRounds fixes every block's proposal round: one block per view, with
// occasional nullified views skipped (their seeds still exist), epochs per
// the fixed schedule.
func (g *generator) planRounds() error {
	sched := g.schedule()
	g.rounds = make([]seed.Round, g.cfg.Blocks+1)
	g.rounds[1] = seed.Round{Epoch: 0, View: firstView}
	for h := 2; h <= g.cfg.Blocks; h++ {
		step := uint64(1)
		switch p := g.rng.IntN(100); {
		case p < 1:
			step = 3
		case p < 5:
			step = 2
		}
		next, _, err := sched.Advance(g.rounds[h-1], step)
		if err != nil {
			return err
		}
		g.rounds[h] = next
	}
	return nil
}

func (g *generator) schedule() seed.FixedSchedule {
	// Every round the chain can reach, including r_seed of the last block
	// (SELECTION_SEED_DELAY_VIEWS ahead), lies in a known epoch.
	last := uint64(3*g.cfg.Blocks+16) / viewsPerEpoch
	return seed.FixedSchedule{ViewsPerEpoch: viewsPerEpoch, FirstView: firstView, LastKnownEpoch: last + 1}
}

func (g *generator) header() (chainlog.Header, error) {
	p := cip11.DefaultParams()
	p.PresentFirstEnabled = true
	p.TransportEnabled = true
	p.MRUActivationHeight = mruActivation
	sched := g.schedule()
	h := chainlog.Header{
		ChainID:   fmt.Sprintf("cip11-synthetic-%d", g.cfg.Seed),
		Generator: g.commandLine(),
		Params:    p,
		Namespace: chainlog.Bytes(chainNamespace),
		Schedule: chainlog.Schedule{ViewsPerEpoch: viewsPerEpoch, FirstView: firstView,
			LastKnownEpoch: chainlog.U64(sched.LastKnownEpoch)},
		Validators: []chainlog.ValidatorSet{{ActivationHeight: 0, Participants: g.validators()}},
		Reputation: chainlog.ReputationConfig{
			Normalizer:    chainlog.U64(state.DefaultReputationConfig().Normalizer),
			WMinFloorX1e6: chainlog.U64(state.DefaultReputationConfig().WMinFloorX1e6),
		},
	}
	for e := uint64(0); e <= sched.LastKnownEpoch; e++ {
		h.ThresholdKeys = append(h.ThresholdKeys, chainlog.EpochKey{Epoch: chainlog.U64(e), PublicKey: g.key(e).PublicKey()})
	}
	gb, err := g.beacon(seed.Round{Epoch: 0, View: 0})
	if err != nil {
		return h, err
	}
	h.GenesisBeacon = gb
	return h, nil
}

func (g *generator) commandLine() string {
	s := fmt.Sprintf("cip11 gen -seed %d -runners %d -blocks %d", g.cfg.Seed, g.cfg.Runners, g.cfg.Blocks)
	if g.cfg.MultiValidator {
		s += " -multi-validator"
	}
	return s
}

// key is epoch e's devnet threshold secret key, derived from the seed.
func (g *generator) key(e uint64) seed.SecretKey {
	if k, ok := g.keys[e]; ok {
		return k
	}
	b := binary.BigEndian.AppendUint64([]byte(keyDerivationName), g.cfg.Seed)
	k := seed.DeriveSecretKey(binary.BigEndian.AppendUint64(b, e))
	g.keys[e] = k
	return k
}

// beacon returns the seed of round r signed under its epoch's key.
func (g *generator) beacon(r seed.Round) (*chainlog.Beacon, error) {
	sig, ok := g.sigs[r]
	if !ok {
		var err error
		if sig, err = seed.SignSeed(g.key(r.Epoch), []byte(chainNamespace), r); err != nil {
			return nil, err
		}
		g.sigs[r] = sig
	}
	return &chainlog.Beacon{Epoch: chainlog.U64(r.Epoch), View: chainlog.U64(r.View), Signature: chainlog.Signature(sig)}, nil
}

func (g *generator) address(kind string, i uint64) cip11.Address {
	h := cip11.Keccak256([]byte("cip11-gen/"+kind), binary.BigEndian.AppendUint64(nil, g.cfg.Seed), binary.BigEndian.AppendUint64(nil, i))
	return cip11.Address(h[12:])
}

// block builds block h's inputs, executes it and records its outputs.
func (g *generator) block(h uint64) (*chainlog.Block, error) {
	r := g.rounds[h]
	b := &chainlog.Block{
		Height: chainlog.U64(h),
		Round:  chainlog.Round{Epoch: chainlog.U64(r.Epoch), View: chainlog.U64(r.View)},
	}
	var err error
	if h > 1 {
		if b.ParentBeacon, err = g.beacon(g.rounds[h-1]); err != nil {
			return nil, err
		}
	}
	if h > finalityLag {
		f := chainlog.U64(h - finalityLag)
		b.Finalized = &f
	}
	pres := g.presence()
	b.Presence = &pres
	if b.ConsumedSeeds, err = g.consumedSeeds(h, b.Finalized); err != nil {
		return nil, err
	}
	g.churn(h, b)
	g.submits(h, b)
	b.Txs = append(g.results[h], b.Txs...)
	delete(g.results, h)
	out, err := g.x.Step(b)
	if err != nil {
		return nil, err
	}
	b.Out = out
	g.scheduleResults(h, out.Assignments)
	return b, nil
}

// presence toggles a few runners' connectivity and encodes the proposer's
// present set over registry(H−1): every runner registered before this block.
func (g *generator) presence() chainlog.Bytes {
	for range g.rng.IntN(8) {
		if len(g.runners) > 0 {
			i := g.rng.IntN(len(g.runners))
			g.runners[i].connected = !g.runners[i].connected
		}
	}
	var idx []int
	for i, r := range g.runners {
		if r.connected {
			idx = append(idx, i)
		}
	}
	s, err := presence.NewSet(len(g.runners), idx)
	if err != nil { // indices are in range by construction
		return nil
	}
	return presence.Encode(s)
}

// consumedSeeds is what the proposer commits: engine.ProposeConsumedSeeds
// over the live pending records, with every seed observed (§9.2).
func (g *generator) consumedSeeds(h uint64, fin *chainlog.U64) (chainlog.Bytes, error) {
	var f *uint64
	if fin != nil {
		v := uint64(*fin)
		f = &v
	}
	seeds := func(r seed.Round) (seed.Signature, bool, error) {
		bc, err := g.beacon(r)
		if err != nil {
			return seed.Signature{}, false, err
		}
		return seed.Signature(bc.Signature), true, nil
	}
	return engine.ProposeConsumedSeeds(g.x.Store().Pending(), g.rounds[h], f, seeds)
}

// churn adds the block's registry changes and heartbeats: registrations
// (the bulk over the first blocks, then a trickle), health changes away from
// Healthy and back, stake and reputation changes, and heartbeats at each
// runner's cadence (a few runners' cadence exceeds HEARTBEAT_TIMEOUT_BLOCKS,
// so they drop below the floor between beats).
func (g *generator) churn(h uint64, b *chainlog.Block) {
	n := len(g.runners) // registry(H−1) size: changes below address these
	for i := 0; i < g.healthChanges(n); i++ {
		j := g.rng.IntN(n)
		next := g.nextHealth(g.runners[j].health)
		g.runners[j].health = next
		b.Registry = append(b.Registry, chainlog.RegistryOp{Op: chainlog.OpUpdate, Address: cip11.Address(g.runners[j].addr), Health: &next})
	}
	if n > 0 && g.rng.IntN(2) == 0 {
		j := g.rng.IntN(n)
		op := chainlog.RegistryOp{Op: chainlog.OpUpdate, Address: cip11.Address(g.runners[j].addr)}
		if g.rng.IntN(2) == 0 {
			s := (cip11.U128From64(minStake + g.rng.Uint64N(stakeSpan)))
			op.Stake = &s
		} else {
			rep := chainlog.U64(100_000_000 + g.rng.Uint64N(1_400_000_000))
			op.ReputationX1e9 = &rep
		}
		b.Registry = append(b.Registry, op)
	}
	for i := 0; i < g.registrations(h); i++ {
		b.Registry = append(b.Registry, g.register(h))
	}
	for i := range n {
		r := &g.runners[i]
		if r.health != chainlog.Deregistered && h-r.lastHB >= r.period {
			r.lastHB = h
			b.Heartbeats = append(b.Heartbeats, uint32(i))
		}
	}
}

func (g *generator) healthChanges(n int) int {
	if n == 0 {
		return 0
	}
	return g.rng.IntN(5)
}

// nextHealth leaves Healthy for one of the three other states, and returns
// to Healthy from them most of the time.
func (g *generator) nextHealth(cur chainlog.Health) chainlog.Health {
	if cur == chainlog.Healthy || g.rng.IntN(10) < 3 {
		return chainlog.Health(1 + g.rng.IntN(3))
	}
	return chainlog.Healthy
}

// registrations spreads the initial registrations over blocks
// 1..min(regBlocks, Blocks), so every requested runner is registered.
func (g *generator) registrations(h uint64) int {
	spread := min(regBlocks, g.cfg.Blocks)
	switch {
	case h < uint64(spread):
		return g.cfg.Runners / spread
	case h == uint64(spread):
		return g.cfg.Runners - (spread-1)*(g.cfg.Runners/spread)
	case g.rng.IntN(10) < 3:
		return 1
	}
	return 0
}

func (g *generator) register(h uint64) chainlog.RegistryOp {
	gr := genRunner{
		addr:      g.address("runner", uint64(len(g.runners))),
		lastHB:    h,
		period:    20 + g.rng.Uint64N(60),
		connected: g.rng.IntN(10) < 9,
	}
	if g.rng.IntN(100) < 3 {
		gr.period = 120 + g.rng.Uint64N(100) // stale past HEARTBEAT_TIMEOUT_BLOCKS between beats
	}
	g.runners = append(g.runners, gr)
	stake := (cip11.U128From64(minStake + g.rng.Uint64N(stakeSpan)))
	rep := chainlog.U64(100_000_000 + g.rng.Uint64N(1_400_000_000))
	return chainlog.RegistryOp{Op: chainlog.OpRegister, Address: cip11.Address(gr.addr), Stake: &stake, ReputationX1e9: &rep}
}

// submits adds 0–5 JobSubmits: M == 1 a little over half the time, else M
// in 2..5.
func (g *generator) submits(h uint64, b *chainlog.Block) {
	for range g.rng.IntN(6) {
		id := cip11.Keccak256([]byte("cip11-gen/job"), binary.BigEndian.AppendUint64(nil, g.cfg.Seed), binary.BigEndian.AppendUint64(nil, g.nextJob))
		g.nextJob++
		m := uint32(1)
		if g.rng.IntN(100) >= 55 {
			m = 2 + uint32(g.rng.IntN(4))
		}
		s := chainlog.Submit{
			JobID: id, Submitter: cip11.Address(g.subs[g.rng.IntN(len(g.subs))]),
			JobKind: uint8(g.rng.IntN(6)), CommitteeSize: m, TimeoutBlocks: chainlog.U64(30 + g.rng.Uint64N(90)),
		}
		g.jobs[id] = s
		b.Txs = append(b.Txs, chainlog.Tx{Submit: &s})
	}
}

// scheduleResults gives most assigned committees their results 1–8 blocks
// later: every member's JobResultSubmit, then the verified result (each
// member matches with probability 0.8; some non-matching members are
// slashed; a few matching ones go unrewarded). About one committee in ten
// never delivers and one in twenty delivers only partly, so timeout
// re-selection (D26) runs too.
func (g *generator) scheduleResults(h uint64, as []chainlog.Assignment) {
	for _, a := range as {
		p := g.rng.IntN(100)
		if len(a.Committee) == 0 || p < 10 {
			continue
		}
		due := h + 1 + g.rng.Uint64N(8)
		if p < 15 {
			g.results[due] = append(g.results[due], chainlog.Tx{ResultSubmit: &chainlog.ResultSubmit{JobID: a.JobID, Runner: a.Committee[0]}})
			continue
		}
		v := chainlog.Verified{JobID: a.JobID, Matching: []cip11.Address{}, RunnersToSlash: []cip11.Address{}, RunnersUnrewarded: []cip11.Address{}}
		for _, m := range a.Committee {
			g.results[due] = append(g.results[due], chainlog.Tx{ResultSubmit: &chainlog.ResultSubmit{JobID: a.JobID, Runner: m}})
			switch p := g.rng.IntN(100); {
			case p < 80:
				v.Matching = append(v.Matching, m)
				if p < 6 {
					v.RunnersUnrewarded = append(v.RunnersUnrewarded, m)
				}
			case p < 90:
				v.RunnersToSlash = append(v.RunnersToSlash, m)
			}
		}
		g.results[due] = append(g.results[due], chainlog.Tx{Verified: &v})
	}
}

// validators is the chain's validator-set size: 1, or 4 for a
// multi-validator chain (M > 1 draws then take the full_set branch).
func (g *generator) validators() uint32 {
	if g.cfg.MultiValidator {
		return 4
	}
	return 1
}

// ErrGenConfig: a generator configuration that cannot describe a chain.
var ErrGenConfig = errors.New("synth: invalid generator configuration")
