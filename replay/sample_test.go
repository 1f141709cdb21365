package replay_test

import (
	"compress/gzip"
	"io"
	"testing"

	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/replay"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/synth"
)

// sampleBytes returns the embedded sample, decompressed. Tests read it
// through synth.Sample() and never pin its digest, so the sample can be
// regenerated without touching them.
func sampleBytes(t testing.TB) []byte {
	t.Helper()
	zr, err := gzip.NewReader(synth.Sample())
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSampleShape checks that the sample is what docs/chainlog.md "The
// sample chain" says: its command line, a single validator, seeds of
// nullified views consumed, MRU writes from MRU_ACTIVATION_HEIGHT on,
// every health state, timeout re-selections and expiry, deadlines per D21
// and D26. It reads the log without replaying it.
func TestSampleShape(t *testing.T) {
	h, blocks := decodeLog(t, sampleBytes(t), 0)
	if h.Generator != "cip11 gen -seed 1 -runners 5000 -blocks 1000" || len(blocks) != 1000 {
		t.Fatalf("sample is %q with %d blocks", h.Generator, len(blocks))
	}
	if len(h.Validators) != 1 || h.Validators[0].Participants != 1 {
		t.Fatalf("validator_sets %+v, want one single-validator set", h.Validators)
	}
	blockRounds := make(map[seed.Round]bool)
	var nullified, firstMRU, multi, partial, results int
	healths := make(map[chainlog.Health]bool)
	for _, b := range blocks {
		blockRounds[seed.Round{Epoch: uint64(b.Round.Epoch), View: uint64(b.Round.View)}] = true
		cs, err := seed.DecodeConsumedSeedsV1(b.ConsumedSeeds)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range cs {
			if !blockRounds[e.Round] {
				nullified++
			}
		}
		if len(cs) > 1 {
			multi++
		}
		if len(b.Out.MRUWrites) > 0 && firstMRU == 0 {
			firstMRU = int(b.Height)
		}
		for _, op := range b.Registry {
			if op.Health != nil {
				healths[*op.Health] = true
			}
		}
		delivered := map[[32]byte]int{}
		for _, tx := range b.Txs {
			switch {
			case tx.ResultSubmit != nil:
				delivered[tx.ResultSubmit.JobID]++
			case tx.Verified != nil:
				results++
				delete(delivered, tx.Verified.JobID)
			}
		}
		partial += len(delivered)
	}
	if nullified == 0 {
		t.Error("no seed of a nullified view is consumed")
	}
	if act := int(h.Params.MRUActivationHeight); firstMRU < act || firstMRU > act+10 {
		t.Errorf("first MRU write at %d, want at or shortly after MRU_ACTIVATION_HEIGHT %d", firstMRU, act)
	}
	if len(healths) != 4 {
		t.Errorf("health states seen: %v", healths)
	}
	if partial == 0 || results == 0 {
		t.Errorf("%d partial deliveries, %d verified results: want both", partial, results)
	}
	s := countBlocks(blocks)
	if s.Reselections == 0 || s.Expired == 0 {
		t.Errorf("sample lacks re-selections or expiry: %+v", s)
	}
	checkBlockDeadlines(t, blocks)
	t.Logf("%d nullified-view seeds consumed, %d blocks consume several rounds, %d partial deliveries; %+v", nullified, multi, partial, s)
}

// TestSamplePrefixReplays replays a prefix of the sample (the whole sample
// is the lead's TestSampleReplays) and checks Run's summary against the
// log's own counts.
func TestSamplePrefixReplays(t *testing.T) {
	limit := 200
	if replay.RaceEnabled() {
		limit = 60
	}
	s, err := replay.Run(synth.Sample(), replay.Config{Limit: limit, Options: blockexec.Options{SnapshotCache: 4096}})
	if err != nil {
		t.Fatal(err)
	}
	if want := countLog(t, sampleBytes(t), limit); s != want {
		t.Fatalf("summary %+v\nlog counts %+v", s, want)
	}
}
