package pebble_test

import (
	"encoding/binary"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/pebble"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
)

// blockBench is the engine's 1,000-job, 5,000-runner block benchmark
// (selection/engine BenchmarkBlock1000Jobs) rebuilt on public APIs over any
// store.Store: 5,000 runners registered at block 1, half of them present,
// then per iteration one block of 1,000 M = 1 submissions, executed and
// committed in its own store batch.
type blockBench struct {
	b       *testing.B
	sk      seed.SecretKey
	s       store.Store
	e       *engine.Engine
	present []byte
	h       uint64
}

const (
	blockRunners = 5000
	blockJobs    = 1000
)

var benchNS = []byte("cip11-store-bench")

func newBlockBench(b *testing.B, s store.Store) *blockBench {
	x := &blockBench{b: b, sk: seed.DeriveSecretKey([]byte("store-bench")), s: s, h: 1}
	pk := x.sk.PublicKey()
	keys := seed.MemoryThresholdKeys{}
	for epoch := range uint64(4) {
		v, err := seed.NewVerifier(pk[:], benchNS)
		if err != nil {
			b.Fatal(err)
		}
		keys[epoch] = v
	}
	if err := s.Begin(1); err != nil {
		b.Fatal(err)
	}
	for i := range blockRunners {
		var a cip11.Address
		binary.BigEndian.PutUint32(a[:4], uint32(i)*2654435761)
		binary.BigEndian.PutUint32(a[16:], uint32(i))
		r := state.Runner{Address: a, LastHeartbeat: 1, Stake: cip11.U128From64(uint64(1000 + i)), ReputationX1e9: 1_000_000_000}
		if err := s.Registrar().Register(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Commit(); err != nil {
		b.Fatal(err)
	}
	idx := make([]int, 0, blockRunners/2)
	for i := 0; i < blockRunners; i += 2 {
		idx = append(idx, i)
	}
	set, err := presence.NewSet(blockRunners, idx)
	if err != nil {
		b.Fatal(err)
	}
	x.present = presence.Encode(set)
	p := cip11.DefaultParams()
	p.PresentFirstEnabled = true
	genesis := x.beacon(seed.Round{})
	sched := seed.FixedSchedule{ViewsPerEpoch: 1 << 30, LastKnownEpoch: 3}
	x.e, err = engine.New(engine.Config{
		Params: p, GenesisBeacon: &genesis, Registry: s.Registry(), Validators: engine.FixedValidators(1),
		Jobs: s.Jobs(), Pending: s.Pending(), Keys: keys, Advance: sched.Advance, MRU: s.MRU(),
		Presence: presence.NewPresenceSource(p),
	})
	if err != nil {
		b.Fatal(err)
	}
	return x
}

func (x *blockBench) beacon(r seed.Round) seed.Beacon {
	sig, err := seed.SignSeed(x.sk, benchNS, r)
	if err != nil {
		x.b.Fatal(err)
	}
	return seed.Beacon{Round: r, Signature: sig}
}

// next builds the next block: height h, proposal view h, 1,000 fresh jobs.
func (x *blockBench) next() engine.Block {
	x.h++
	parent := x.beacon(seed.Round{View: x.h - 1})
	cs, err := seed.ConsumedSeedsV1(nil).Encode()
	if err != nil {
		x.b.Fatal(err)
	}
	blk := engine.Block{Height: x.h, ProposalRound: seed.Round{View: x.h}, ParentBeacon: &parent,
		PresenceInput: x.present, ConsumedSeeds: cs, Txs: make([]engine.Tx, 0, blockJobs)}
	for i := range blockJobs {
		var j engine.Job
		binary.BigEndian.PutUint64(j.JobID[:], x.h)
		binary.BigEndian.PutUint32(j.JobID[8:], uint32(i))
		j.Submitter[0] = 0xee
		j.CommitteeSize, j.TimeoutBlocks = 1, 1<<20
		blk.Txs = append(blk.Txs, engine.Submit{Job: j})
	}
	return blk
}

// run executes and commits one block per iteration; building the block is
// outside the timer.
func (x *blockBench) run() {
	b := x.b
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		blk := x.next()
		b.StartTimer()
		if err := x.s.Begin(blk.Height); err != nil {
			b.Fatal(err)
		}
		res, err := x.e.ExecuteBlock(blk)
		if err != nil || len(res.Assignments) != blockJobs {
			b.Fatal(len(res.Assignments), err)
		}
		if err := x.s.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecuteBlock: the 1,000-job, 5,000-runner block executed and
// committed over store.Mem (the baseline), over pebble with fsync off, and
// over pebble with its default fsync on every commit, in one run.
func BenchmarkExecuteBlock(b *testing.B) {
	b.Run("Mem", func(b *testing.B) { newBlockBench(b, store.NewMem()).run() })
	for _, tc := range []struct {
		name string
		sync pebble.SyncMode
	}{{"PebbleNoSync", pebble.SyncNever}, {"PebbleSync", pebble.SyncAlways}} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := pebble.Open(b.TempDir(), pebble.Options{Sync: tc.sync})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			newBlockBench(b, s).run()
		})
	}
}
