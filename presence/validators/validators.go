package validators

import (
	"bytes"
	"errors"
	"fmt"
	"hash"
	"math/bits"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
	"golang.org/x/crypto/sha3"
)

// Validator-set and admission errors (§5.1–§5.4, §6.2). Each admission
// rejection has its own sentinel; Mode-A receipt prechecks reuse them (§8.3).
var (
	// ErrEmptyValidatorSet: a snapshot has no participants (§5.4; k is
	// undefined for |V| = 0).
	ErrEmptyValidatorSet = errors.New("validators: validator-set snapshot has no participants")
	// ErrDuplicateValidator: two participants share a raw peer_pubkey (§5.4).
	ErrDuplicateValidator = errors.New("validators: validator-set snapshot repeats a peer_pubkey")
	// ErrParticipantsNotCanonical: the participants are not in the §5.4
	// canonical order, strictly ascending by raw peer_pubkey bytes.
	ErrParticipantsNotCanonical = errors.New("validators: validator-set participants are not canonically ordered by peer_pubkey")
	// ErrEpochNotAdvancing: a changed identity list arrives with an epoch not
	// greater than the current snapshot's (§5.3–§5.4).
	ErrEpochNotAdvancing = errors.New("validators: new validator-set snapshot does not advance subset_epoch")
	// ErrActivationRegressed: a successor snapshot activates before its
	// predecessor (§5.3).
	ErrActivationRegressed = errors.New("validators: successor snapshot activates before its predecessor")
	// ErrNoActiveSnapshot: an Epochs value has no current snapshot (§5.4).
	ErrNoActiveSnapshot = errors.New("validators: no current validator-set snapshot")
	// ErrNotRunnerKey: a runner key is not a scheme-0x01 secp256k1 wire
	// PubKey (§5.1 R.auth_pubkey, §12.6).
	ErrNotRunnerKey = errors.New("validators: runner key is not a secp256k1 wire PubKey")
	// ErrEpochPairUnknown: the offered (subset_epoch, validator_set_hash)
	// equals neither the active nor the overlap snapshot's pair — including
	// one epoch's number with the other's hash (§5.3 point 2: never a
	// cross-product).
	ErrEpochPairUnknown = errors.New("validators: (subset_epoch, validator_set_hash) selects no active or overlap snapshot")
	// ErrSnapshotNotYetActive: the offered pair names a snapshot whose
	// activation_height is above the height being evaluated (§5.3).
	ErrSnapshotNotYetActive = errors.New("validators: offered snapshot is not active yet")
	// ErrOverlapExpired: the offered pair names epoch E at or after
	// activation_height(E+1) + OVERLAP_BLOCKS, the height-tied cutoff with no
	// grace (§5.3 point 4).
	ErrOverlapExpired = errors.New("validators: offered epoch-E snapshot is past the OVERLAP_BLOCKS cutoff")
	// ErrValidatorNotInSet: the validator's raw peer_pubkey is not a
	// participant of the snapshot the offer selected (§6.2, §8.3).
	ErrValidatorNotInSet = errors.New("validators: validator is not in the selected snapshot")
	// ErrOutsideSubset: the validator is in the selected snapshot but not in
	// Sub_epoch(runner) of that same snapshot (§5.2 DoS gate, §5.3, §8.3).
	ErrOutsideSubset = errors.New("validators: validator is not in Sub_epoch(runner) of the selected snapshot")
)

// PeerKey is a validator's raw, untagged 32-byte Ed25519 peer_pubkey — the
// authoritative §5.4 snapshot key (§12.6 "Authoritative state keys are raw").
type PeerKey [32]byte

// WirePubKey returns the §12.6 scheme-tagged wire form (0x02 ‖ key).
func (k PeerKey) WirePubKey() wire.PubKey { return wire.ValidatorPubKey(k) }

// Compare orders peer keys by their raw bytes, the §5.4 canonical
// participant order: it returns −1, 0 or +1 as k sorts before, equal to or
// after o.
func (k PeerKey) Compare(o PeerKey) int { return bytes.Compare(k[:], o[:]) }

// PeerKeyOf strips the tag of a validator wire PubKey (§12.6), failing with
// wire.ErrPubKeyRole for any key that is not scheme 0x02.
func PeerKeyOf(k wire.PubKey) (PeerKey, error) {
	if err := k.CheckRole(wire.RoleValidator); err != nil {
		return PeerKey{}, err
	}
	return PeerKey(k.Raw()), nil
}

// Record is one §8.3 ValidatorRecord. Stake is carried for consensus and
// never read by a CIP-11 rule; in particular it is not hashed.
type Record struct {
	PeerPubKey PeerKey
	Stake      cip11.U128
}

// Snapshot is the §5.4 consensus-provided ValidatorSetSnapshot: epoch (the
// subset_epoch), the canonically ordered participants, and the activation
// height. It is immutable; build it with [NewSnapshot].
type Snapshot struct {
	epoch        uint64
	activation   uint64
	participants []Record
	hash         cip11.Hash
	index        map[PeerKey]int
}

// NewSnapshot validates a §5.4 snapshot and computes its
// validator_set_hash. The participants must be non-empty, distinct and in
// the canonical order §5.4 prescribes ("canonically ordered by
// peer_pubkey"): strictly ascending by raw peer_pubkey bytes. NewSnapshot
// never sorts: CIP-11 hashes and indexes the order consensus delivers, so a
// list out of order is rejected, not repaired (§5.1, §8.3). A repeated key
// is [ErrDuplicateValidator] wherever it appears; otherwise the first
// adjacent pair out of order is [ErrParticipantsNotCanonical].
func NewSnapshot(epoch uint64, participants []Record, activationHeight uint64) (*Snapshot, error) {
	if len(participants) == 0 {
		return nil, ErrEmptyValidatorSet
	}
	s := &Snapshot{
		epoch: epoch, activation: activationHeight,
		participants: append([]Record(nil), participants...),
		index:        make(map[PeerKey]int, len(participants)),
	}
	for i, v := range participants {
		if _, dup := s.index[v.PeerPubKey]; dup {
			return nil, fmt.Errorf("%w: %x at positions %d and %d", ErrDuplicateValidator, v.PeerPubKey[:], s.index[v.PeerPubKey], i)
		}
		s.index[v.PeerPubKey] = i
	}
	for i := 1; i < len(participants); i++ {
		if a, b := participants[i-1].PeerPubKey, participants[i].PeerPubKey; a.Compare(b) > 0 {
			return nil, fmt.Errorf("%w: %x at position %d sorts after %x at position %d", ErrParticipantsNotCanonical, a[:], i-1, b[:], i)
		}
	}
	s.hash = SetHash(participants)
	return s, nil
}

// SetHash is §5.1/§8.3 validator_set_hash: keccak256 over the ordered raw
// 32-byte peer_pubkeys, concatenated with no prefix or length (DECISIONS
// D2). Stake is excluded, so stake changes never move it. It hashes the
// order given; [NewSnapshot] is what requires that order to be canonical.
func SetHash(participants []Record) cip11.Hash {
	buf := make([]byte, 0, 32*len(participants))
	for _, v := range participants {
		buf = append(buf, v.PeerPubKey[:]...)
	}
	return cip11.Keccak256(buf)
}

// Epoch is the snapshot's epoch, which is subset_epoch while it is active (§5.4).
func (s *Snapshot) Epoch() uint64 { return s.epoch }

// ActivationHeight is the block at which the snapshot becomes active (§5.4).
func (s *Snapshot) ActivationHeight() uint64 { return s.activation }

// Hash is the snapshot's validator_set_hash (§5.1).
func (s *Snapshot) Hash() cip11.Hash { return s.hash }

// Pair is the snapshot's (subset_epoch, validator_set_hash) offer (§5.3, §6.2).
func (s *Snapshot) Pair() wire.EpochPair {
	return wire.EpochPair{SubsetEpoch: s.epoch, ValidatorSetHash: s.hash}
}

// Len is |V| (§3.2).
func (s *Snapshot) Len() int { return len(s.participants) }

// Participants returns a copy of the ordered records (§5.4).
func (s *Snapshot) Participants() []Record {
	return append([]Record(nil), s.participants...)
}

// Contains reports whether v is a participant (§6.2: the runner's check
// that a validator is in the snapshot).
func (s *Snapshot) Contains(v PeerKey) bool {
	_, ok := s.index[v]
	return ok
}

// SameIdentities reports whether two snapshots have the same ordered
// peer_pubkey list — the only thing §5.4 lets move subset_epoch.
func (s *Snapshot) SameIdentities(t *Snapshot) bool {
	if len(s.participants) != len(t.participants) {
		return false
	}
	for i := range s.participants {
		if s.participants[i].PeerPubKey != t.participants[i].PeerPubKey {
			return false
		}
	}
	return true
}

// K is the snapshot's subset size k (§5.1), [cip11.Params.SubsetSize] of |V|.
func (s *Snapshot) K(p cip11.Params) int { return p.SubsetSize(len(s.participants)) }

// ModeAEffective is the §8.4 K_HARD_MIN activation guard for this snapshot:
// [cip11.Params.ModeAEffective] with effective_k = [Snapshot.K].
func (s *Snapshot) ModeAEffective(p cip11.Params) bool {
	return p.ModeAEffective(uint32(s.K(p)))
}

// runnerAuthKey returns R.auth_pubkey, the runner's 33-byte compressed
// secp256k1 key with the wire tag stripped (§5.1, §12.6).
func runnerAuthKey(runner wire.PubKey) ([]byte, error) {
	if runner.IsZero() || runner.Scheme() != wire.SchemeSecp256k1 {
		return nil, fmt.Errorf("%w: scheme 0x%02x", ErrNotRunnerKey, byte(runner.Scheme()))
	}
	return runner.Raw(), nil
}

// subsetHasher computes the §5.1 sort keys keccak256(R.auth_pubkey ‖
// v.peer_pubkey) with one Keccak state and one buffer.
type subsetHasher struct {
	h   hash.Hash
	buf [33 + 32]byte
}

func newSubsetHasher(auth []byte) *subsetHasher {
	sh := &subsetHasher{h: sha3.NewLegacyKeccak256()}
	copy(sh.buf[:33], auth)
	return sh
}

func (sh *subsetHasher) key(v PeerKey, dst *cip11.Hash) {
	copy(sh.buf[33:], v[:])
	sh.h.Reset()
	sh.h.Write(sh.buf[:])
	sh.h.Sum(dst[:0])
}

// ranked is one candidate of the §5.1 sort.
type ranked struct {
	key cip11.Hash
	pos int
}

// Sub is §5.1 Sub(R): the first k participants in ascending order of
// keccak256(R.auth_pubkey ‖ v.peer_pubkey), where R.auth_pubkey is the raw
// 33-byte compressed key (tag stripped) and v.peer_pubkey the raw 32 bytes.
// The result is in that sort order. Ties (a Keccak collision) would keep
// snapshot order.
func (s *Snapshot) Sub(runner wire.PubKey, p cip11.Params) ([]PeerKey, error) {
	auth, err := runnerAuthKey(runner)
	if err != nil {
		return nil, err
	}
	top := s.topK(newSubsetHasher(auth), s.K(p))
	out := make([]PeerKey, len(top))
	for i, r := range top {
		out[i] = s.participants[r.pos].PeerPubKey
	}
	return out, nil
}

// topK keeps the k smallest keys by insertion into a sorted window: k ≤ n
// and k is small (§5.1 MAX_SUBSET), so this is O(n·k) compares, none of
// which rival the n Keccak calls.
func (s *Snapshot) topK(sh *subsetHasher, k int) []ranked {
	top := make([]ranked, 0, k+1)
	var cur ranked
	for i, v := range s.participants {
		sh.key(v.PeerPubKey, &cur.key)
		cur.pos = i
		j := len(top)
		for j > 0 && bytes.Compare(cur.key[:], top[j-1].key[:]) < 0 {
			j--
		}
		if j >= k {
			continue
		}
		top = append(top, ranked{})
		copy(top[j+1:], top[j:])
		top[j] = cur
		top = top[:min(len(top), k)]
	}
	return top
}

// InSub reports whether validator v is in Sub(runner) of this snapshot (§5.2).
func (s *Snapshot) InSub(runner wire.PubKey, v PeerKey, p cip11.Params) (bool, error) {
	sub, err := s.Sub(runner, p)
	for _, w := range sub {
		if w == v {
			return true, nil
		}
	}
	return false, err
}

// NextSnapshot applies a consensus epoch advance to the current snapshot
// (§5.4). If the ordered peer_pubkey list is unchanged — pure stake changes,
// resharing with the same identities — it is not a CIP-11 reconfiguration:
// the result keeps cur's epoch, activation height and validator_set_hash
// (only stakes are refreshed) and activated is false. Otherwise the new
// snapshot must carry a greater epoch and an activation height no earlier
// than cur's, and activated is true (ValidatorSetActivated, §5.3). Either
// way participants must pass [NewSnapshot]: a non-canonical order is
// [ErrParticipantsNotCanonical], never a reconfiguration.
func NextSnapshot(cur *Snapshot, epoch uint64, participants []Record, activationHeight uint64) (next *Snapshot, activated bool, err error) {
	same, err := NewSnapshot(cur.epoch, participants, cur.activation)
	if err != nil {
		return nil, false, err
	}
	if same.SameIdentities(cur) {
		return same, false, nil
	}
	if epoch <= cur.epoch {
		return nil, false, fmt.Errorf("%w: %d after %d", ErrEpochNotAdvancing, epoch, cur.epoch)
	}
	if activationHeight < cur.activation {
		return nil, false, fmt.Errorf("%w: %d before %d", ErrActivationRegressed, activationHeight, cur.activation)
	}
	next, err = NewSnapshot(epoch, participants, activationHeight)
	return next, err == nil, err
}

// Epochs is the §5.3 validator-set view: the Current snapshot (epoch E+1,
// or the only one) and, across a reconfiguration, its Previous snapshot
// (epoch E). Build it with [NewEpochs].
type Epochs struct {
	Previous *Snapshot // epoch E; nil when there has been no reconfiguration
	Current  *Snapshot // epoch E+1 (from its activation height on)
}

// NewEpochs checks that cur succeeds prev as §5.3–§5.4 require: a greater
// epoch, an activation no earlier than prev's, and a changed ordered
// identity list (so the two pairs differ and an offer selects exactly one).
func NewEpochs(prev, cur *Snapshot) (Epochs, error) {
	switch {
	case cur == nil:
		return Epochs{}, ErrNoActiveSnapshot
	case prev == nil:
		return Epochs{Current: cur}, nil
	case cur.epoch <= prev.epoch || cur.SameIdentities(prev):
		return Epochs{}, fmt.Errorf("%w: epoch %d after %d", ErrEpochNotAdvancing, cur.epoch, prev.epoch)
	case cur.activation < prev.activation:
		return Epochs{}, fmt.Errorf("%w: %d before %d", ErrActivationRegressed, cur.activation, prev.activation)
	}
	return Epochs{Previous: prev, Current: cur}, nil
}

// OverlapEnd is the §5.3 point-4 cutoff activation_height(E+1) +
// OVERLAP_BLOCKS (saturating): from this block on epoch E is invalid.
func (e Epochs) OverlapEnd(p cip11.Params) uint64 {
	end, carry := bits.Add64(e.Current.activation, p.OverlapBlocks, 0)
	if carry != 0 {
		return ^uint64(0)
	}
	return end
}

// Select returns the one snapshot an offered (subset_epoch,
// validator_set_hash) selects at height h (§5.3 point 2, §6.2): the pair must
// equal a snapshot's own pair exactly — never one epoch's number with the
// other's hash — and that snapshot must be in force at h: Current from its
// activation height, Previous from its own activation until (excluding)
// [Epochs.OverlapEnd].
func (e Epochs) Select(h uint64, offer wire.EpochPair, p cip11.Params) (*Snapshot, error) {
	if e.Current == nil {
		return nil, ErrNoActiveSnapshot
	}
	var s *Snapshot
	switch {
	case offer == e.Current.Pair():
		s = e.Current
	case e.Previous != nil && offer == e.Previous.Pair():
		s = e.Previous
	default:
		return nil, fmt.Errorf("%w: epoch %d hash %s", ErrEpochPairUnknown, offer.SubsetEpoch, offer.ValidatorSetHash)
	}
	if h < s.activation {
		return nil, fmt.Errorf("%w: epoch %d activates at %d, height %d", ErrSnapshotNotYetActive, s.epoch, s.activation, h)
	}
	if s == e.Previous && h >= e.OverlapEnd(p) {
		return nil, fmt.Errorf("%w: epoch %d ended at %d, height %d", ErrOverlapExpired, s.epoch, e.OverlapEnd(p), h)
	}
	return s, nil
}

// Admit is the validator-side §6.2 admission predicate, epoch-paired
// (§5.3 point 2): the offer selects one snapshot at h, the validator's raw
// peer_pubkey resolves in that snapshot, and the validator is in
// Sub_epoch(runner) of that same snapshot. It returns the selected
// snapshot. The runner applies the same rule to the validator it dials.
func (e Epochs) Admit(h uint64, offer wire.EpochPair, validator PeerKey, runner wire.PubKey, p cip11.Params) (*Snapshot, error) {
	s, err := e.Select(h, offer, p)
	if err != nil {
		return nil, err
	}
	if !s.Contains(validator) {
		return nil, fmt.Errorf("%w: %x in epoch %d", ErrValidatorNotInSet, validator[:], s.epoch)
	}
	in, err := s.InSub(runner, validator, p)
	if err != nil {
		return nil, err
	}
	if !in {
		return nil, fmt.Errorf("%w: %x in epoch %d", ErrOutsideSubset, validator[:], s.epoch)
	}
	return s, nil
}

// Pairs lists the offers admissible at h, Current first (§5.3): the value
// for wire.Local.Epochs.
func (e Epochs) Pairs(h uint64, p cip11.Params) []wire.EpochPair {
	var out []wire.EpochPair
	for _, s := range []*Snapshot{e.Current, e.Previous} {
		if s != nil {
			if _, err := e.Select(h, s.Pair(), p); err == nil {
				out = append(out, s.Pair())
			}
		}
	}
	return out
}

// AdmitsRunner returns the wire.Local.Admits predicate for validator self at
// height h (§6.2): a runner peer is admitted iff [Epochs.Admit] accepts it.
// Registration (health ≠ Deregistered) is the caller's check.
func (e Epochs) AdmitsRunner(h uint64, self PeerKey, p cip11.Params) func(wire.EpochPair, wire.PubKey) bool {
	return func(offer wire.EpochPair, runner wire.PubKey) bool {
		_, err := e.Admit(h, offer, self, runner, p)
		return err == nil
	}
}
