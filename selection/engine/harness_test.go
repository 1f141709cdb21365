package engine

import (
	"encoding/binary"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/state"
)

func testNS() []byte { return []byte("cowboy-test") }

type harness struct {
	t       testing.TB
	cfg     Config
	e       *Engine
	reg     *state.MemRegistry
	pending *MemPendingStore
	jobs    *MemJobStore
	mru     mru.KVStore
	sk      seed.SecretKey
	addrs   []cip11.Address
}

func runnerAddr(i int) cip11.Address {
	var a cip11.Address
	binary.BigEndian.PutUint32(a[:4], uint32(i)*2654435761) // scatter: registration order ≠ address order
	binary.BigEndian.PutUint32(a[16:], uint32(i))
	return a
}

func addr(b byte) cip11.Address {
	var a cip11.Address
	for i := range a {
		a[i] = b
	}
	return a
}

// newHarness registers n runners at height 1 with distinct stakes, over a
// single-validator set.
func newHarness(t testing.TB, n int, p cip11.Params) *harness {
	h := &harness{t: t, reg: state.NewMemRegistry(state.DefaultReputationConfig()),
		pending: NewMemPendingStore(), jobs: NewMemJobStore(), mru: mru.NewMemStore()}
	h.sk = seed.DeriveSecretKey([]byte("harness"))
	pk := h.sk.PublicKey()
	keys := seed.MemoryThresholdKeys{}
	for epoch := uint64(0); epoch < 4; epoch++ {
		v, err := seed.NewVerifier(pk[:], testNS())
		if err != nil {
			t.Fatal(err)
		}
		keys[epoch] = v
	}
	for i := 0; i < n; i++ {
		a := runnerAddr(i)
		h.addrs = append(h.addrs, a)
		r := state.Runner{Address: a, LastHeartbeat: 1, Stake: cip11.U128From64(uint64(1000 + i)), ReputationX1e9: 1_000_000_000}
		if err := h.reg.Register(1, r); err != nil {
			t.Fatal(err)
		}
	}
	genesis := h.beacon(seed.Round{})
	sched := seed.FixedSchedule{ViewsPerEpoch: 1000, LastKnownEpoch: 3}
	h.cfg = Config{
		Params: p, GenesisBeacon: &genesis,
		Registry: h.reg, Validators: FixedValidators(1), Jobs: h.jobs, Pending: h.pending,
		Keys: keys, Advance: sched.Advance, MRU: h.mru, Presence: presence.NewPresenceSource(p),
	}
	h.rebuild()
	return h
}

// rebuild re-creates the engine from h.cfg (after a test changed it).
func (h *harness) rebuild() {
	e, err := New(h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.e = e
}

func (h *harness) beacon(r seed.Round) seed.Beacon {
	sig, err := seed.SignSeed(h.sk, testNS(), r)
	if err != nil {
		h.t.Fatal(err)
	}
	return seed.Beacon{Round: r, Signature: sig}
}

func (h *harness) consumed(rounds ...seed.Round) []byte {
	var cs []seed.ConsumedSeed
	for _, r := range rounds {
		cs = append(cs, seed.ConsumedSeed(h.beacon(r)))
	}
	b, err := seed.ConsumedSeedsV1(cs).Encode()
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// presenceOf encodes the present set {indices} over registry(H−1).
func (h *harness) presenceOf(indices ...int) []byte {
	s, err := presence.NewSet(len(h.addrs), indices)
	if err != nil {
		h.t.Fatal(err)
	}
	return presence.Encode(s)
}

// block is block height with proposal round view = height, an empty
// present set, no consumed seeds and the given transactions.
func (h *harness) block(height uint64, txs ...Tx) Block {
	return Block{Height: height, ProposalRound: seed.Round{View: height}, PresenceInput: h.presenceOf(),
		ConsumedSeeds: h.consumed(), Txs: txs}
}

func (h *harness) exec(b Block) BlockResult {
	h.t.Helper()
	res, err := h.e.ExecuteBlock(b)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

func fin(h uint64) *uint64 { return &h }

func job(id byte, m uint32) Job {
	var j Job
	j.JobID[0] = id
	j.Submitter = addr(0xee)
	j.Kind = mru.JobKind(0)
	j.CommitteeSize = m
	j.TimeoutBlocks = 50
	return j
}

func submit(jobs ...Job) []Tx {
	txs := make([]Tx, len(jobs))
	for i, j := range jobs {
		txs[i] = Submit{Job: j}
	}
	return txs
}

func activeParams() cip11.Params {
	p := cip11.DefaultParams()
	p.PresentFirstEnabled = true
	return p
}
