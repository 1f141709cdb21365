package node

import (
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/seed"
)

// TestSchedulesSingleValidator: a single validator's schedule is its
// static epoch 0 (§5.4), takes no epochs and names no EpochSets.
func TestSchedulesSingleValidator(t *testing.T) {
	if _, err := NewSchedules(ScheduleConfig{}); !errors.Is(err, ErrNilConfig) {
		t.Fatalf("no genesis: %v, want ErrNilConfig", err)
	}
	d := newTestDevnet(t, 3, 1, nil)
	s, err := NewSchedules(ScheduleConfig{Genesis: d.Genesis, Keys: d.Validator})
	if err != nil {
		t.Fatal(err)
	}
	cur := s.Load()
	if cur.Len() != 1 || cur.EpochSets() != nil || cur.At(1<<40).Snapshot.Epoch() != 0 {
		t.Fatalf("single-validator schedule: %d epochs, sets %v", cur.Len(), cur.EpochSets())
	}
	if added, err := s.Extend([]EpochSet{{}, {Epoch: 1}}); err != nil || added != nil || s.Load() != cur {
		t.Fatalf("a single validator's schedule took epochs: %v %v", added, err)
	}
	if _, ok := s.Upcoming(0); ok {
		t.Fatal("a single validator has an upcoming snapshot")
	}
}

// scheduleNet is a one-validator network genesis and its epoch 1, which
// adds a second member (the one-change rule, SPEC-NOTES C11), dealt anew
// (D31): dealing.Shares[0] is the validator's share of it.
func scheduleNet(t *testing.T) (*GeneratedGenesis, *Genesis, EpochSet, *seed.Dealing) {
	t.Helper()
	d, g := oneValidatorNetwork(t)
	deal, err := seed.DealShares(seed.DeriveSecretKey([]byte("schedule test epoch 1")), 2, 2, rand.NewChaCha8([32]byte{7}))
	if err != nil {
		t.Fatal(err)
	}
	pubs, err := deal.Public.PublicShares(2)
	if err != nil {
		t.Fatal(err)
	}
	self, other := g.Set[0], g.Set[0]
	other.PeerPubKey = cip11.Hash{0xff, 0xff, 0xff, 0xff} // after self in the canonical order
	if self.PeerPubKey[0] == 0xff {
		t.Skip("the devnet validator's key sorts last")
	}
	ck := cip11.Hash{5}
	other.ConsensusPubKey = &ck
	self.ThresholdPubKey, other.ThresholdPubKey = pubs[0], pubs[1]
	es := EpochSet{Epoch: 1, Activation: 10, GroupKey: deal.Public.GroupKey(), Set: []GenesisValidator{self, other}}
	return d, g, es, deal
}

// TestSchedulesPublish (D30, §5.3–§5.4): Extend publishes a new schedule
// with the committed epoch and leaves the one a reader holds unchanged;
// the transport's view, the upcoming snapshot and the epoch at a height
// follow the activation; an epoch out of order or one that does not change
// the set is refused and publishes nothing.
func TestSchedulesPublish(t *testing.T) {
	d, g, es1, _ := scheduleNet(t)
	s, err := NewSchedules(ScheduleConfig{Genesis: g, Keys: d.Validator})
	if err != nil {
		t.Fatal(err)
	}
	s0 := s.Load()
	if e := s0.Epoch(0); s0.Len() != 1 || e.Index != 0 || e.Share == nil || e.Share.Index != 1 || e.T != 1 || len(e.Shares) != 1 {
		t.Fatalf("epoch 0: %+v", e)
	}
	all := append(g.EpochSets(), es1)
	added, err := s.Extend(all)
	if err != nil || len(added) != 1 || added[0].Epoch != 1 {
		t.Fatalf("Extend: %v %v", added, err)
	}
	if s0.Len() != 1 {
		t.Fatal("the published schedule changed under its reader")
	}
	cur := s.Load()
	e1 := cur.Epoch(1)
	switch {
	case cur.Len() != 2 || cur.Last() != e1 || e1.Index != 0 || e1.Share != nil || e1.T != 2:
		t.Fatalf("epoch 1: %+v", e1)
	case e1.ConsensusAddrs[0] != nil || len(e1.ConsensusAddrs[1]) != 20:
		t.Fatalf("consensus addresses %x", e1.ConsensusAddrs)
	case cur.At(9).Epoch != 0 || cur.At(10).Epoch != 1 || cur.Epoch(2) != nil:
		t.Fatal("epoch at a height")
	}
	sum := sha256.Sum256(es1.Set[1].ConsensusPubKey[:])
	if string(e1.ConsensusAddrs[1]) != string(sum[:20]) {
		t.Fatal("the consensus address is not the Ed25519 address of the consensus key")
	}
	if v, _ := s.EpochsAt(9); v.Current.Epoch() != 0 || v.Previous != nil {
		t.Fatalf("view at 9: %+v", v)
	}
	if v, _ := s.EpochsAt(10); v.Current.Epoch() != 1 || v.Previous == nil || v.Previous.Epoch() != 0 {
		t.Fatalf("view at 10: %+v", v)
	}
	if up, ok := s.Upcoming(9); !ok || up.Epoch() != 1 {
		t.Fatal("epoch 1 is not upcoming at 9")
	}
	if _, ok := s.Upcoming(10); ok {
		t.Fatal("an upcoming snapshot after the last activation")
	}
	if got := cur.EpochSets(); len(got) != 2 || got[1].GroupKey != es1.GroupKey {
		t.Fatalf("EpochSets %+v", got)
	}
	if added, err := s.Extend(all); err != nil || added != nil || s.Load() != cur {
		t.Fatalf("Extend with nothing new: %v %v", added, err)
	}
	gap := append(cur.EpochSets(), EpochSet{Epoch: 3, Activation: 20, GroupKey: es1.GroupKey, Set: es1.Set[:1]})
	if _, err := s.Extend(gap); !errors.Is(err, ErrGenesis) || s.Load() != cur {
		t.Fatalf("an epoch out of order: %v", err)
	}
	same := es1
	same.Epoch, same.Activation = 2, 20
	if _, err := s.Extend(append(cur.EpochSets(), same)); err == nil || s.Load() != cur {
		t.Fatal("an epoch with the same set was taken")
	}
}

// TestSchedulesLateShare (D31, SPEC-NOTES C11): a member's share of an
// in-band epoch is loaded when the epoch enters the schedule, from the
// keys or else the key file; a share the dealer hands later is read by
// LoadShare and published once; another member's share is never used.
func TestSchedulesLateShare(t *testing.T) {
	d, g, es1, deal := scheduleNet(t)
	all := append(g.EpochSets(), es1)
	keyFile := filepath.Join(t.TempDir(), "validator.key")
	keys := func() *ValidatorKeys {
		k, err := NewValidatorKeys(d.Validator.Ed25519Seed(), d.Validator.Threshold.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k := keys()
	s, err := NewSchedules(ScheduleConfig{Genesis: g, Keys: k, KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Extend(all); err != nil {
		t.Fatal(err)
	}
	if sh := s.LoadShare(1); sh != nil || s.Load().Epoch(1).Share != nil {
		t.Fatal("a share nobody dealt")
	}
	if err := k.AddEpochShare(1, deal.Shares[1].Key.Bytes()); err != nil { // another member's
		t.Fatal(err)
	}
	if sh := s.LoadShare(1); sh != nil {
		t.Fatal("another member's share was taken")
	}
	own := keys()
	if err := own.AddEpochShare(1, deal.Shares[0].Key.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := own.Write(keyFile); err != nil {
		t.Fatal(err)
	}
	late, err := NewSchedules(ScheduleConfig{Genesis: g, Keys: keys(), KeyFile: keyFile + ".none"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := late.Extend(all); err != nil {
		t.Fatal(err)
	}
	before := late.Load()
	late.keyFile = keyFile // the dealer wrote it after the commit
	if sh := late.LoadShare(1); sh == nil || sh.Index != 1 || late.Load().Epoch(1).Share != sh || before.Epoch(1).Share != nil {
		t.Fatalf("the late share: %+v", sh)
	}
	if again := late.LoadShare(1); again != late.Load().Epoch(1).Share {
		t.Fatal("the published share was looked up again")
	}
	entering, err := NewSchedules(ScheduleConfig{Genesis: g, Keys: keys(), KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := entering.Extend(all); err != nil {
		t.Fatal(err)
	}
	if sh := entering.Load().Epoch(1).Share; sh == nil || sh.Index != 1 {
		t.Fatal("the key file's share was not loaded when the epoch entered the schedule")
	}
}

// TestSchedulesConcurrentReaders: readers (the transport, the consensus
// application) read the schedule without a lock while its writer extends
// it (run with -race).
func TestSchedulesConcurrentReaders(t *testing.T) {
	d, g, es1, _ := scheduleNet(t)
	s, err := NewSchedules(ScheduleConfig{Genesis: g, Keys: d.Validator})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				cur := s.Load()
				if e := cur.At(10); e.Epoch >= uint64(cur.Len()) {
					t.Error("an epoch beyond the schedule")
					return
				}
				_, _ = s.EpochsAt(10)
				_, _ = s.Upcoming(1)
				_ = s.LoadShare(1)
			}
		}()
	}
	if _, err := s.Extend(append(g.EpochSets(), es1)); err != nil {
		t.Error(err)
	}
	close(stop)
	wg.Wait()
	if s.Load().Len() != 2 {
		t.Fatal("epoch 1 not published")
	}
}

// TestSchedulesSeeds (§9.2): the schedule keeps the seeds the chain
// committed (its blocks' parent beacons), over the last 4096 views.
func TestSchedulesSeeds(t *testing.T) {
	d, g, _, _ := scheduleNet(t)
	s, err := NewSchedules(ScheduleConfig{Genesis: g, Keys: d.Validator})
	if err != nil {
		t.Fatal(err)
	}
	s.noteBeacon(nil) // a block without a parent beacon
	if _, ok := s.Seed(0); ok {
		t.Fatal("a seed nobody committed")
	}
	for v := uint64(1); v <= seedWindow+2; v++ {
		s.noteBeacon(&chainlog.Beacon{View: chainlog.U64(v), Signature: chainlog.Signature{byte(v), byte(v >> 8)}})
	}
	if _, ok := s.Seed(2); ok {
		t.Fatal("a seed older than the window is kept")
	}
	if sig, ok := s.Seed(3); !ok || sig[0] != 3 {
		t.Fatal("the oldest seed of the window is lost")
	}
	last := uint64(seedWindow + 2)
	if sig, ok := s.Seed(last); !ok || sig[0] != byte(last) || sig[1] != byte(last>>8) {
		t.Fatal("the last committed seed is lost")
	}
}

// TestSchedulesRunner: a runner's schedule (no keys) follows the §5.4 sets
// only: an epoch whose threshold keys it cannot use still enters it.
func TestSchedulesRunner(t *testing.T) {
	_, g, es1, _ := scheduleNet(t)
	s, err := NewSchedules(ScheduleConfig{Genesis: g})
	if err != nil {
		t.Fatal(err)
	}
	es1.GroupKey = [96]byte{}
	es1.Set = slices.Clone(es1.Set)
	for i := range es1.Set {
		es1.Set[i].ThresholdPubKey = [96]byte{}
	}
	if _, err := s.Extend(append(g.EpochSets(), es1)); err != nil {
		t.Fatal(err)
	}
	e := s.Load().Epoch(1)
	if e == nil || e.Index != -1 || e.Share != nil || e.Group != nil || e.Shares != nil {
		t.Fatalf("a runner's epoch 1: %+v", e)
	}
	if v, _ := s.EpochsAt(10); v.Current.Epoch() != 1 {
		t.Fatal("the runner's view does not follow epoch 1")
	}
}
