package node

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/seed"
)

// Schedule is one immutable snapshot of a chain's committed validator-set
// epochs (D30, SPEC-NOTES C11): the genesis's, then each committed in-band
// reconfiguration's, ascending, every one with what its readers need
// already built — its §5.4 snapshot and the transport's view of it with
// its predecessor, its seed verifiers (D31) and, on a validator that is a
// member, its threshold share. A Schedule is never changed: its owner,
// [Schedules], publishes a new one when a commit adds an epoch, so a
// reader holds a consistent view without a lock.
type Schedule struct {
	network bool // a network genesis (EpochSets is nil otherwise)
	epochs  []*ScheduledEpoch
}

// ScheduledEpoch is one epoch of a [Schedule]. Its fields are read-only.
type ScheduledEpoch struct {
	// EpochSet is the epoch as the genesis or the reconfiguration states it
	// (zero on a single-validator chain, whose one epoch is the genesis
	// validator's).
	EpochSet
	// Snapshot is the §5.4 snapshot (epoch 0 active from 0).
	Snapshot *validators.Snapshot
	view     validators.Epochs // Snapshot and its predecessor (§5.3)
	// T is the seed threshold of the set (D31); Group verifies seeds under
	// the group key, Shares[i] partials of the member whose share index is
	// i+1. A validator's schedule of a network has them; a runner's (no
	// keys) and a single validator's do not (zero, nil).
	T      int
	Group  *seed.Verifier
	Shares []*seed.Verifier
	// ConsensusAddrs[i] is the CometBFT address of member i (the first 20
	// bytes of SHA-256 of its consensus_pubkey, the Ed25519 address rule;
	// nil for a member without one); nil when the epoch names no consensus
	// keys (a genesis epoch 0 whose addresses are the CometBFT genesis's).
	ConsensusAddrs [][]byte
	// Index is this validator's position in Set (−1: not a member, or the
	// owner has no validator keys).
	Index int
	// Share is this validator's threshold share of the epoch (nil: not a
	// member, or the devnet dealer has not handed it yet, see
	// [Schedules.LoadShare]).
	Share *seed.Share
}

// Len is the number of epochs.
func (s *Schedule) Len() int { return len(s.epochs) }

// Epoch is the epoch numbered n (nil: none).
func (s *Schedule) Epoch(n uint64) *ScheduledEpoch {
	if n < uint64(len(s.epochs)) {
		return s.epochs[n]
	}
	return nil
}

// Last is the latest epoch.
func (s *Schedule) Last() *ScheduledEpoch { return s.epochs[len(s.epochs)-1] }

// All are the epochs, ascending (the caller must not change the slice).
func (s *Schedule) All() []*ScheduledEpoch { return s.epochs }

// At is the epoch active at height h (D30: the last whose activation is
// at most h; epoch 0 from 0).
func (s *Schedule) At(h uint64) *ScheduledEpoch {
	i := 0
	for i+1 < len(s.epochs) && s.epochs[i+1].Snapshot.ActivationHeight() <= h {
		i++
	}
	return s.epochs[i]
}

// EpochsAt implements cquic.ValidatorSets: the §5.4 view at h, the
// snapshot active at h and, from its activation on, its predecessor.
func (s *Schedule) EpochsAt(h uint64) (validators.Epochs, error) { return s.At(h).view, nil }

// Upcoming implements cquic.UpcomingSets: the first snapshot that
// activates after h (§5.4: scheduled in the genesis or by a committed
// reconfiguration, so already emitted).
func (s *Schedule) Upcoming(h uint64) (*validators.Snapshot, bool) {
	for _, e := range s.epochs {
		if e.Snapshot.ActivationHeight() > h {
			return e.Snapshot, true
		}
	}
	return nil, false
}

// EpochSets are the epochs in their genesis form, ascending (a copy; nil
// on a single-validator chain).
func (s *Schedule) EpochSets() []EpochSet {
	if !s.network {
		return nil
	}
	es := make([]EpochSet, len(s.epochs))
	for i, e := range s.epochs {
		es[i] = e.EpochSet
	}
	return es
}

// ScheduleConfig configures [NewSchedules].
type ScheduleConfig struct {
	// Genesis is the chain's genesis (required): its epochs start the
	// schedule.
	Genesis *Genesis
	// Keys are this validator's keys, whose shares the schedule's epochs
	// carry; nil on a runner (no Index, no Share, no seed verifiers: it
	// follows the sets only).
	Keys *ValidatorKeys
	// KeyFile, if set, is where Keys came from: a member of an in-band
	// epoch whose share Keys lacks reads it there (a process network's
	// devnet dealer writes it into the file, SPEC-NOTES C11).
	KeyFile string
	// Logger (default: discard).
	Logger *slog.Logger
}

// Schedules is the one owner of a chain's epoch schedule: it holds the
// current [Schedule] and publishes a new one when an epoch is added
// (Extend, at the commit that adds it) or a late share arrives
// (LoadShare). Load is lock-free; writers serialize on a mutex that is
// never held across I/O (a share is read from the key file before it is
// taken). It implements cquic.ValidatorSets and cquic.UpcomingSets over
// the current schedule, so the transport reads the same value as the
// consensus application and the runner's view. It also keeps the seeds
// the chain committed (Seed, §9.2), which change at every block and so
// live beside the schedule rather than in it. Build it with NewSchedules.
type Schedules struct {
	cur     atomic.Pointer[Schedule]
	wmu     sync.Mutex // writers only (Extend, LoadShare)
	seeds   seedCache
	g       *Genesis
	keys    *ValidatorKeys
	keyFile string
	log     *slog.Logger
}

// NewSchedules builds the schedule of cfg.Genesis's epochs (a single
// validator: its static epoch 0).
func NewSchedules(cfg ScheduleConfig) (*Schedules, error) {
	if cfg.Genesis == nil {
		return nil, fmt.Errorf("%w: Genesis", ErrNilConfig)
	}
	s := &Schedules{g: cfg.Genesis, keys: cfg.Keys, keyFile: cfg.KeyFile, log: cfg.Logger, seeds: seedCache{m: map[uint64]seed.Signature{}}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	g := cfg.Genesis
	if !g.Network() {
		sn, err := g.Snapshot()
		if err != nil {
			return nil, err
		}
		ep, err := validators.NewEpochs(nil, sn)
		if err != nil {
			return nil, err
		}
		s.cur.Store(&Schedule{epochs: []*ScheduledEpoch{{Snapshot: sn, view: ep, Index: -1}}})
		return s, nil
	}
	s.cur.Store(&Schedule{network: true})
	if _, err := s.Extend(g.EpochSets()); err != nil {
		return nil, err
	}
	return s, nil
}

// reset puts the schedule back to the genesis's epochs and forgets the
// seeds (a snapshot install that failed after noting its epochs).
func (s *Schedules) reset() error {
	f, err := NewSchedules(ScheduleConfig{Genesis: s.g, Keys: s.keys, KeyFile: s.keyFile, Logger: s.log})
	if err != nil {
		return err
	}
	s.cur.Store(f.cur.Load())
	s.seeds.mu.Lock()
	s.seeds.m = map[uint64]seed.Signature{}
	s.seeds.mu.Unlock()
	return nil
}

// Load is the current schedule (never nil).
func (s *Schedules) Load() *Schedule { return s.cur.Load() }

// EpochsAt implements cquic.ValidatorSets over the current schedule.
func (s *Schedules) EpochsAt(h uint64) (validators.Epochs, error) { return s.Load().EpochsAt(h) }

// Upcoming implements cquic.UpcomingSets over the current schedule.
func (s *Schedules) Upcoming(h uint64) (*validators.Snapshot, bool) { return s.Load().Upcoming(h) }

var (
	_ cquic.ValidatorSets = (*Schedules)(nil)
	_ cquic.UpcomingSets  = (*Schedules)(nil)
)

// Extend publishes the epochs of es beyond those the schedule has (es
// lists every epoch, ascending) and returns them. The shares of the new
// epochs are looked up first, with no lock held; an epoch that cannot be
// built leaves the schedule as it was. A single-validator schedule takes
// no epochs.
func (s *Schedules) Extend(es []EpochSet) ([]EpochSet, error) {
	cur := s.Load()
	if !cur.network || len(es) <= cur.Len() {
		return nil, nil
	}
	shares := make(map[uint64]*seed.Share)
	for _, e := range es[cur.Len():] {
		if i := s.indexIn(e); i >= 0 {
			shares[e.Epoch] = s.lookupShare(e, i)
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	cur = s.Load()
	if len(es) <= cur.Len() { // another writer took them
		return nil, nil
	}
	added := es[cur.Len():]
	epochs := slices.Clip(cur.epochs)
	for _, e := range added {
		if e.Epoch != uint64(len(epochs)) {
			return nil, fmt.Errorf("%w: epoch %d after %d epochs", ErrGenesis, e.Epoch, len(epochs))
		}
		var prev *ScheduledEpoch
		if n := len(epochs); n > 0 {
			prev = epochs[n-1]
		}
		se, err := s.build(e, prev)
		if err != nil {
			return nil, err
		}
		if sh, ok := shares[e.Epoch]; ok {
			se.Share = sh
		}
		epochs = append(epochs, se)
	}
	s.cur.Store(&Schedule{network: true, epochs: epochs})
	return added, nil
}

// build is the scheduled form of epoch e after prev (nil for epoch 0),
// without its share.
func (s *Schedules) build(e EpochSet, prev *ScheduledEpoch) (*ScheduledEpoch, error) {
	sn, err := e.snapshot()
	if err != nil {
		return nil, err
	}
	var ps *validators.Snapshot
	if prev != nil {
		ps = prev.Snapshot
	}
	view, err := validators.NewEpochs(ps, sn)
	if err != nil {
		return nil, err
	}
	se := &ScheduledEpoch{EpochSet: e, Snapshot: sn, view: view, Index: s.indexIn(e)}
	for i, v := range e.Set {
		if v.ConsensusPubKey != nil {
			if se.ConsensusAddrs == nil {
				se.ConsensusAddrs = make([][]byte, len(e.Set))
			}
			sum := sha256.Sum256(v.ConsensusPubKey[:])
			se.ConsensusAddrs[i] = sum[:20]
		}
	}
	if s.keys == nil { // a runner follows the sets, not the seeds
		return se, nil
	}
	if se.T, err = seed.Threshold(len(e.Set)); err != nil {
		return nil, fmt.Errorf("epoch %d: %w", e.Epoch, err)
	}
	ns := s.g.Namespace
	if se.Group, err = seed.NewVerifier(e.GroupKey[:], ns); err != nil {
		return nil, fmt.Errorf("epoch %d group key: %w", e.Epoch, err)
	}
	for i, v := range e.Set {
		sv, err := seed.NewVerifier(v.ThresholdPubKey[:], ns)
		if err != nil {
			return nil, fmt.Errorf("epoch %d validator_set[%d] share: %w", e.Epoch, i, err)
		}
		se.Shares = append(se.Shares, sv)
	}
	return se, nil
}

// indexIn is this validator's position in e's set (−1: not a member, or
// no keys).
func (s *Schedules) indexIn(e EpochSet) int {
	if s.keys == nil {
		return -1
	}
	return IndexIn(e.Set, s.g.Validator.PeerPubKey)
}

// LoadShare publishes this validator's share of epoch n when the schedule
// lacks it (a member whose devnet dealer handed it after the epoch was
// committed) and returns the epoch's share (nil: still none, or not a
// member). The key file is read before any lock is taken.
func (s *Schedules) LoadShare(n uint64) *seed.Share {
	e := s.Load().Epoch(n)
	if e == nil || e.Share != nil || e.Index < 0 {
		if e == nil {
			return nil
		}
		return e.Share
	}
	sh := s.lookupShare(e.EpochSet, e.Index)
	if sh == nil {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	cur := s.Load()
	old := cur.Epoch(n)
	if old.Share != nil {
		return old.Share
	}
	ne := *old
	ne.Share = sh
	epochs := slices.Clone(cur.epochs)
	epochs[n] = &ne
	s.cur.Store(&Schedule{network: cur.network, epochs: epochs})
	return sh
}

// lookupShare finds this validator's share of epoch e, member i, in Keys
// or, when Keys lacks it, in the key file, and checks that it is the
// member's threshold_pubkey in the set (a share the dealer got wrong would
// sign partials nobody can use; it is logged and not used); nil when there
// is none. It reads the key file: never call it holding a lock.
func (s *Schedules) lookupShare(e EpochSet, i int) *seed.Share {
	if s.keys == nil {
		return nil
	}
	sk, ok := s.keys.Share(e.Epoch)
	if !ok && s.keyFile != "" { // the dealer may have written it since
		if k, err := LoadValidatorKeys(s.keyFile); err == nil {
			sk, ok = k.Share(e.Epoch)
		}
	}
	if !ok {
		return nil
	}
	if sk.PublicKey() != [seed.PublicKeySize]byte(e.Set[i].ThresholdPubKey) {
		s.log.Error("this validator's share of the epoch is not its public share in the set; not used", "epoch", e.Epoch)
		return nil
	}
	return &seed.Share{Index: uint32(i + 1), Key: sk}
}

// seedWindow bounds the seed cache, in views: the pending pass consumes
// seeds K rounds after submission (§9.2), far inside it.
const seedWindow = 4096

// seedCache is the seeds the chain committed (the parent beacons of its
// blocks, §9.2), by view, over the last seedWindow views. Its mutex is
// held around map operations only.
type seedCache struct {
	mu sync.Mutex
	m  map[uint64]seed.Signature
}

// noteBeacon remembers a committed block's parent beacon (nil: none). The
// validator calls it for every block the block log holds at start and at
// each commit, before the next proposal.
func (s *Schedules) noteBeacon(pb *chainlog.Beacon) {
	if pb == nil {
		return
	}
	view := uint64(pb.View)
	s.seeds.mu.Lock()
	defer s.seeds.mu.Unlock()
	s.seeds.m[view] = seed.Signature(pb.Signature)
	if view > seedWindow {
		delete(s.seeds.m, view-seedWindow)
	}
}

// Seed is the committed seed of view (§9.2 Consensus.Seed: the signature a
// later block's parent beacon carries); ok is false when the chain has not
// committed it, or it is older than the cache's window (4096 views).
func (s *Schedules) Seed(view uint64) (seed.Signature, bool) {
	s.seeds.mu.Lock()
	defer s.seeds.mu.Unlock()
	sig, ok := s.seeds.m[view]
	return sig, ok
}
