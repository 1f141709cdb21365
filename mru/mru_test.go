package mru

import (
	"errors"
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"pgregory.net/rapid"
)

func active(ttl uint64) cip11.Params {
	p := cip11.DefaultParams()
	p.MRUActivationHeight, p.MRUTTLBlocks = 0, ttl
	return p
}

// failingStore fails the test if the §9.4 gate lets any read or write through.
type failingStore struct{ t *testing.T }

func (f failingStore) Get(cip11.Address, JobKind) (Record, bool, error) {
	f.t.Fatal("MRU read below MRU_ACTIVATION_HEIGHT")
	return Record{}, false, nil
}

func (f failingStore) Put(cip11.Address, JobKind, Record) error {
	f.t.Fatal("MRU write below MRU_ACTIVATION_HEIGHT")
	return nil
}

// TestActivationGate: below MRU_ACTIVATION_HEIGHT nothing is read or
// written (§9.4), including at the shipped default of u64::MAX.
func TestActivationGate(t *testing.T) {
	o := Outcome{Committee: []cip11.Address{runnerX}, Matching: []cip11.Address{runnerX}}
	def := cip11.DefaultParams()
	gated := active(1280)
	gated.MRUActivationHeight = 100
	for _, c := range []struct {
		p cip11.Params
		h uint64
	}{{def, 0}, {def, 1 << 40}, {def, ^uint64(0) - 1}, {gated, 0}, {gated, 99}} {
		if _, ok, err := Lookup(failingStore{t}, c.p, submitter, Llm, c.h); ok || err != nil {
			t.Errorf("Lookup at %d: %v %v", c.h, ok, err)
		}
		if _, ok, err := RecordResult(failingStore{t}, c.p, submitter, Llm, o, c.h); ok || err != nil {
			t.Errorf("RecordResult at %d: %v %v", c.h, ok, err)
		}
	}
	// At the activation height both paths are live.
	s := NewMemStore()
	if rec, ok, err := RecordResult(s, gated, submitter, Llm, o, 100); !ok || err != nil || rec != (Record{runnerX, 100}) {
		t.Fatalf("RecordResult at activation: %+v %v %v", rec, ok, err)
	}
	if rec, ok, err := Lookup(s, gated, submitter, Llm, 100); !ok || err != nil || rec.Runner != runnerX {
		t.Fatalf("Lookup at activation: %+v %v %v", rec, ok, err)
	}
}

// TestLookupTTL: Some iff H −(saturating) set_at ≤ MRU_TTL_BLOCKS (§9.3).
func TestLookupTTL(t *testing.T) {
	cases := []struct {
		setAt, h, ttl uint64
		want          bool
	}{
		{1000, 2280, 1280, true},  // age = TTL: applies
		{1000, 2281, 1280, false}, // age = TTL+1: expired
		{1000, 1000, 1280, true},  // same block
		{1000, 999, 1280, true},   // set_at > H: saturates to 0
		{^uint64(0), 0, 0, true},  // saturating at the extremes
		{0, 0, 0, true},           // genesis
		{0, 1, 0, false},          // TTL 0: only the same block
		{0, 1280, 1280, true},     // genesis range
		{0, ^uint64(0), ^uint64(0), true},
		{0, ^uint64(0), ^uint64(0) - 1, false},
	}
	for _, c := range cases {
		s := NewMemStore()
		if err := s.Put(submitter, Custom, Record{runnerX, c.setAt}); err != nil {
			t.Fatal(err)
		}
		rec, ok, err := Lookup(s, active(c.ttl), submitter, Custom, c.h)
		if err != nil || ok != c.want || (ok && rec != (Record{runnerX, c.setAt})) {
			t.Errorf("set_at %d, H %d, TTL %d: %+v %v %v, want %v", c.setAt, c.h, c.ttl, rec, ok, err, c.want)
		}
		if Fresh(c.setAt, c.h, c.ttl) != c.want {
			t.Errorf("Fresh(%d, %d, %d) = %v", c.setAt, c.h, c.ttl, !c.want)
		}
	}
	if _, ok, err := Lookup(NewMemStore(), active(1280), submitter, Custom, 5); ok || err != nil {
		t.Errorf("absent record: %v %v", ok, err)
	}
	if _, _, err := Lookup(NewMemStore(), active(1280), submitter, JobKind(6), 5); !errors.Is(err, ErrUnknownJobKind) {
		t.Errorf("unknown kind: %v", err)
	}
	if _, _, err := RecordResult(NewMemStore(), active(1280), submitter, JobKind(6), Outcome{}, 5); !errors.Is(err, ErrUnknownJobKind) {
		t.Errorf("unknown kind: %v", err)
	}
}

func addr(b byte) cip11.Address { return cip11.Address{b} }

func TestWinner(t *testing.T) {
	a, b, c, d := addr(0xa), addr(0xb), addr(0xc), addr(0xd)
	cases := []struct {
		name                              string
		committee, matching, slash, unrew []cip11.Address
		want                              cip11.Address
		ok                                bool
	}{
		{"first_in_committee_order", []cip11.Address{c, a, b}, []cip11.Address{a, b, c}, nil, nil, c, true},
		{"matching_order_irrelevant", []cip11.Address{b, a}, []cip11.Address{a, b}, nil, nil, b, true},
		{"slashed_skipped", []cip11.Address{c, a, b}, []cip11.Address{a, c}, []cip11.Address{c}, nil, a, true},
		{"unrewarded_skipped", []cip11.Address{c, a, b}, []cip11.Address{a, c}, nil, []cip11.Address{c}, a, true},
		{"union_excludes_all", []cip11.Address{a, b}, []cip11.Address{a, b}, []cip11.Address{a}, []cip11.Address{b}, cip11.Address{}, false},
		{"not_matching_skipped", []cip11.Address{a, b, c}, []cip11.Address{c}, nil, nil, c, true},
		{"matching_outside_committee_ignored", []cip11.Address{a}, []cip11.Address{d}, nil, nil, cip11.Address{}, false},
		{"empty", nil, nil, nil, nil, cip11.Address{}, false},
		{"single_runner", []cip11.Address{a}, []cip11.Address{a}, nil, nil, a, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Winner(c.committee, c.matching, c.slash, c.unrew)
			if got != c.want || ok != c.ok {
				t.Fatalf("Winner = %x %v, want %x %v", got[:1], ok, c.want[:1], c.ok)
			}
		})
	}
}

// winnerNaive is the reference: scan committee, test membership by linear search.
func winnerNaive(committee, matching, slash, unrew []cip11.Address) (cip11.Address, bool) {
	for _, a := range committee {
		if slices.Contains(matching, a) && !slices.Contains(slash, a) && !slices.Contains(unrew, a) {
			return a, true
		}
	}
	return cip11.Address{}, false
}

// TestWinnerOrderIndependent: arrival/reveal/map order of the matching and
// ineligible sets never changes the winner (§9.4), and Winner agrees with
// the naive reference.
func TestWinnerOrderIndependent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := rapid.SliceOfNDistinct(rapid.Byte(), 1, 12, rapid.ID[byte]).Draw(t, "pool")
		subset := func(label string) []cip11.Address {
			var out []cip11.Address
			for _, b := range rapid.SliceOf(rapid.SampledFrom(pool)).Draw(t, label) {
				out = append(out, addr(b))
			}
			return out
		}
		committee := subset("committee")
		matching, slash, unrew := subset("matching"), subset("slash"), subset("unrewarded")
		want, wantOK := winnerNaive(committee, matching, slash, unrew)
		perm := func(s []cip11.Address, label string) []cip11.Address {
			return rapid.Permutation(s).Draw(t, label)
		}
		got, ok := Winner(committee, perm(matching, "pm"), perm(slash, "ps"), perm(unrew, "pu"))
		if got != want || ok != wantOK {
			t.Fatalf("Winner = %x %v, reference %x %v", got[:1], ok, want[:1], wantOK)
		}
	})
}

func TestRecordResultNoWinner(t *testing.T) {
	s := NewMemStore()
	o := Outcome{Committee: []cip11.Address{runnerX}, Matching: []cip11.Address{runnerX}, RunnersUnrewarded: []cip11.Address{runnerX}}
	if _, ok, err := RecordResult(s, active(10), submitter, Mcp, o, 7); ok || err != nil {
		t.Fatalf("RecordResult = %v %v", ok, err)
	}
	if len(s.KV.(MemKV)) != 0 {
		t.Fatal("record written without a winner")
	}
}

type errWriter struct{}

var errDisk = errors.New("disk")

func (errWriter) Put(cip11.Address, JobKind, Record) error { return errDisk }

func TestRecordResultWriteError(t *testing.T) {
	o := Outcome{Committee: []cip11.Address{runnerX}, Matching: []cip11.Address{runnerX}}
	if _, ok, err := RecordResult(errWriter{}, active(10), submitter, Mcp, o, 7); ok || !errors.Is(err, errDisk) {
		t.Fatalf("RecordResult = %v %v", ok, err)
	}
}
