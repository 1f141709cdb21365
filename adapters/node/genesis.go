package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cip11/cip11/adapters/node/chain"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/seed"
)

// Sentinel errors of the node package.
var (
	ErrNilKey     = chain.ErrNilKey
	ErrGenesis    = errors.New("node: invalid genesis")
	ErrKeyFile    = errors.New("node: invalid key file")
	ErrNilConfig  = chain.ErrNilConfig
	ErrClosed     = errors.New("node: closed")
	ErrBlockLog   = chain.ErrBlockLog
	ErrBadRequest = chain.ErrBadRequest
	// ErrGenesisExists: GeneratedGenesis.Write would overwrite a genesis or key file
	// (a chain's data directory would be orphaned); GeneratedGenesis.Overwrite is
	// the deliberate form.
	ErrGenesisExists = errors.New("node: genesis files already exist")
	// ErrRunnerSpec: a genesis runner entry (ParseGenesisRunner,
	// ReadGenesisRunners) is malformed.
	ErrRunnerSpec = errors.New("node: invalid genesis runner")
	// ErrActivationSpacing: a network schedule activates an epoch before
	// the previous activation + OVERLAP_BLOCKS (CheckActivations, §5.4,
	// SPEC-NOTES C9).
	ErrActivationSpacing = errors.New("node: epoch activation inside the previous epoch's overlap")
)

// CheckActivations checks a network's epoch activation heights (epoch 0's
// first, 1 on a network): each at least the previous one + OVERLAP_BLOCKS
// (saturating: a sum past 2^64 − 1 refuses), or ErrActivationSpacing.
//
// §5.4 derives snapshot retirement from the successor's
// ValidatorSetActivated plus OVERLAP_BLOCKS: epoch E−1 stays admissible
// until activation(E) + OVERLAP_BLOCKS. The transport's §5.3 view (and
// Mode A's receipt check) hold the active snapshot and its predecessor
// only, so an E+1 activating sooner would cut E−1 off early. The rule is
// the in-band one (SPEC-NOTES C11(b), blockexec.CheckScheduleChange), so a
// genesis schedule and an in-band one accept the same spacing and the view
// never holds three epochs (SPEC-NOTES C9).
func CheckActivations(acts []uint64, overlap uint64) error {
	for i := 1; i < len(acts); i++ {
		prev := acts[i-1]
		if prev > ^uint64(0)-overlap || acts[i] < prev+overlap {
			return fmt.Errorf("%w: epoch %d activates at %d, before epoch %d's activation %d + OVERLAP_BLOCKS %d (§5.4: epoch %d stays admissible until then)",
				ErrActivationSpacing, i, acts[i], i-1, prev, overlap, i-1)
		}
	}
	return nil
}

// GenesisFormat and GenesisVersion identify a genesis file (docs/genesis.md).
const (
	GenesisFormat  = "cip11-genesis"
	GenesisVersion = 1
)

// Genesis is a chain's configuration as one validator holds it
// (docs/genesis.md), for a single-validator chain or a network (D29–D31):
// the chain id, this validator's public identity and threshold key, a
// network's validator set and later epochs, the §13 parameters and flags,
// the seed schedule and the genesis runners. Every validator of a network
// holds the same file but for Validator. Secret keys live in separate key
// files (keys.go).
type Genesis struct {
	Format  string       `json:"format"`
	Version int          `json:"version"`
	ChainID chainlog.U64 `json:"chain_id"` // the §6.2 / §12.6 chain_id
	// Params are the §13 constants and the five flags that differ from the
	// defaults (the chain-log header's form).
	Params     chainlog.ParamSet         `json:"params"`
	Namespace  chainlog.Bytes            `json:"namespace"` // seed namespace NS (D12)
	Schedule   chainlog.Schedule         `json:"schedule"`  // advance_round (D13)
	Reputation chainlog.ReputationConfig `json:"reputation_config"`
	// GenesisBeacon is the signed seed of round (0, 0) (§9.2).
	GenesisBeacon chainlog.Beacon `json:"genesis_beacon"`
	// Validator is this node's identity. On a single-validator chain it is
	// the sole validator and ThresholdPubKey its 1-of-1 key; on a network
	// (Set non-empty) it is the node's own entry of Set, except that
	// ThresholdPubKey is the group key every seed verifies under (D31).
	Validator GenesisValidator `json:"validator"`
	// Set is a multi-validator network's static validator set (D29),
	// ascending by peer_pubkey; each entry's ThresholdPubKey is the public
	// share of index i+1 (D31). Empty on a single-validator chain. Every
	// validator's genesis file is the same except Validator.
	Set []GenesisValidator `json:"validator_set,omitempty"`
	// Epochs are a network's later validator sets (§5.3–§5.4, D30–D31):
	// epoch e+1 is Epochs[e], active from its activation height, with its
	// own threshold group key and public shares. DEVNET: a reconfiguration
	// scheduled at genesis by the devnet dealer; the schedule's
	// activations list 1 and then each entry's activation height.
	Epochs []GenesisEpoch `json:"epochs,omitempty"`
	// ReconfigAdmin, DEVNET ONLY, is the address whose signed TxReconfigure
	// the chain accepts (SPEC-NOTES C11): an in-band reconfiguration adds
	// or removes one validator at an activation height. Absent (every
	// non-devnet genesis): reconfigurations are refused. Needs a network
	// with a height schedule.
	ReconfigAdmin *cip11.Address  `json:"devnet_admin,omitempty"`
	Runners       []GenesisRunner `json:"runners"`
}

// GenesisEpoch is one later validator-set epoch of a network (§5.4
// ValidatorSetSnapshot(E): participants ascending by peer_pubkey, each
// entry's ThresholdPubKey its public share of this epoch's group key).
type GenesisEpoch struct {
	Activation chainlog.U64       `json:"activation_height"`
	GroupKey   chainlog.PublicKey `json:"group_key"`
	Set        []GenesisValidator `json:"validator_set"`
}

// EpochSet is one validator-set epoch of a network: epoch 0 is the
// genesis Set (active from height 1, its group key Validator's
// ThresholdPubKey), epoch e ≥ 1 is Epochs[e−1].
type EpochSet struct {
	Epoch      uint64
	Activation uint64
	GroupKey   chainlog.PublicKey
	Set        []GenesisValidator
}

// EpochSets lists a network's epochs, ascending (nil on a single-validator
// chain).
func (g *Genesis) EpochSets() []EpochSet {
	if !g.Network() {
		return nil
	}
	es := []EpochSet{{Epoch: 0, Activation: 1, GroupKey: g.Validator.ThresholdPubKey, Set: g.Set}}
	for i, e := range g.Epochs {
		es = append(es, EpochSet{Epoch: uint64(i + 1), Activation: uint64(e.Activation), GroupKey: e.GroupKey, Set: e.Set})
	}
	return es
}

// IndexIn is the position of the validator with peer key pk in set (−1: not a member).
func IndexIn(set []GenesisValidator, pk cip11.Hash) int {
	for i, v := range set {
		if v.PeerPubKey == pk {
			return i
		}
	}
	return -1
}

// GenesisValidator is a validator's public identity (§5.4).
type GenesisValidator struct {
	PeerPubKey      cip11.Hash         `json:"peer_pubkey"`      // raw Ed25519 key (32 bytes)
	ThresholdPubKey chainlog.PublicKey `json:"threshold_pubkey"` // the 1-of-1 BLS12-381 key, every epoch
	QUIC            string             `json:"quic"`             // UDP host:port runners dial
	HTTP            string             `json:"http"`             // the HTTP API (poll fallback, /submit)
	// ConsensusPubKey is a network validator's consensus vote key (the
	// Ed25519 key CometBFT signs votes with, D29), which a reconfiguration
	// names in its validator updates; required when the genesis has Epochs.
	ConsensusPubKey *cip11.Hash `json:"consensus_pubkey,omitempty"`
}

// Network reports whether the genesis is a multi-validator network's (D29).
func (g *Genesis) Network() bool { return len(g.Set) > 0 }

// SelfIndex is the position of Validator in Set, epoch 0's set (-1: not a
// member, or no Set); the validator's epoch-0 share index is SelfIndex()+1
// (D31).
func (g *Genesis) SelfIndex() int { return IndexIn(g.Set, g.Validator.PeerPubKey) }

// GenesisRunner is a runner registered in block 1.
type GenesisRunner struct {
	Address        cip11.Address `json:"address"`
	Stake          cip11.U128    `json:"stake"`
	ReputationX1e9 chainlog.U64  `json:"reputation_x1e9"`
}

// DecodeGenesis strictly decodes and validates a genesis file.
func DecodeGenesis(b []byte) (*Genesis, error) {
	var g Genesis
	if err := decodeStrict(b, &g); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGenesis, err)
	}
	return &g, g.Validate()
}

// decodeStrict decodes one JSON value: unknown fields and trailing data
// are errors.
func decodeStrict(b []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data")
	}
	return nil
}

// LoadGenesis reads a genesis file.
func LoadGenesis(path string) (*Genesis, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	g, err := DecodeGenesis(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return g, nil
}

// Encode is the genesis file's bytes (indented JSON).
func (g *Genesis) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(g, "", "  ")
	return append(b, '\n'), err
}

// Validate checks what the chain needs to start.
func (g *Genesis) Validate() error {
	switch {
	case g.Format != GenesisFormat:
		return fmt.Errorf("%w: format %q", ErrGenesis, g.Format)
	case g.Version != GenesisVersion:
		return fmt.Errorf("%w: version %d (this node reads %d)", ErrGenesis, g.Version, GenesisVersion)
	case g.Schedule.ViewsPerEpoch == 0 && !g.Schedule.Height():
		return fmt.Errorf("%w: schedule.views_per_epoch is 0", ErrGenesis)
	case g.Schedule.LastKnownEpoch > 4096:
		return fmt.Errorf("%w: schedule.last_known_epoch %d > 4096", ErrGenesis, g.Schedule.LastKnownEpoch)
	case g.Reputation.Normalizer == 0:
		return fmt.Errorf("%w: reputation_config.normalizer is 0", ErrGenesis)
	case g.Validator.QUIC == "":
		return fmt.Errorf("%w: validator.quic is empty", ErrGenesis)
	}
	if err := cip11.Params(g.Params).Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrGenesis, err)
	}
	if _, err := PhaseOf(g.P()); err != nil {
		return fmt.Errorf("%w: %w", ErrGenesis, err)
	}
	if err := seed.VerifySeed(g.Validator.ThresholdPubKey[:], g.Namespace, g.beaconRound(), g.GenesisBeacon.Signature[:]); err != nil {
		return fmt.Errorf("%w: genesis_beacon: %v", ErrGenesis, err)
	}
	if _, err := g.Snapshot(); err != nil {
		return fmt.Errorf("%w: validator: %v", ErrGenesis, err)
	}
	if err := g.validateEpochs(); err != nil {
		return err
	}
	if g.ReconfigAdmin != nil && (!g.Network() || !g.Schedule.Height()) {
		return fmt.Errorf("%w: devnet_admin needs a network with a height schedule (D30)", ErrGenesis)
	}
	seen := make(map[cip11.Address]bool, len(g.Runners))
	for i, r := range g.Runners {
		if seen[r.Address] {
			return fmt.Errorf("%w: runners[%d]: %s listed twice", ErrGenesis, i, r.Address)
		}
		if r.Stake.IsZero() {
			return fmt.Errorf("%w: runners[%d]: %s has zero stake", ErrGenesis, i, r.Address)
		}
		seen[r.Address] = true
	}
	return nil
}

// validateEpochs checks a network's epochs: each set strictly ascending by
// peer_pubkey (D29) with valid shares, the validator a member of some
// epoch, activations ascending, equal to the height schedule's and spaced
// at least OVERLAP_BLOCKS apart (CheckActivations, §5.4).
func (g *Genesis) validateEpochs() error {
	if !g.Network() {
		if len(g.Epochs) > 0 {
			return fmt.Errorf("%w: epochs without a validator_set", ErrGenesis)
		}
		return nil
	}
	member := false
	for _, e := range g.EpochSets() {
		name := "validator_set"
		if e.Epoch > 0 {
			name = fmt.Sprintf("epochs[%d].validator_set", e.Epoch-1)
			if _, err := seed.DecodePublicKey(e.GroupKey[:]); err != nil {
				return fmt.Errorf("%w: epochs[%d].group_key: %v", ErrGenesis, e.Epoch-1, err)
			}
		}
		if len(e.Set) == 0 {
			return fmt.Errorf("%w: %s is empty", ErrGenesis, name)
		}
		for i, v := range e.Set {
			if v.QUIC == "" {
				return fmt.Errorf("%w: %s[%d].quic is empty", ErrGenesis, name, i)
			}
			if i > 0 && bytes.Compare(e.Set[i-1].PeerPubKey[:], v.PeerPubKey[:]) >= 0 {
				return fmt.Errorf("%w: %s is not strictly ascending by peer_pubkey at %d (D29)", ErrGenesis, name, i)
			}
			if _, err := seed.DecodePublicKey(v.ThresholdPubKey[:]); err != nil {
				return fmt.Errorf("%w: %s[%d].threshold_pubkey: %v", ErrGenesis, name, i, err)
			}
		}
		member = member || IndexIn(e.Set, g.Validator.PeerPubKey) >= 0
		for i, v := range e.Set {
			if len(g.Epochs) > 0 && v.ConsensusPubKey == nil {
				return fmt.Errorf("%w: %s[%d].consensus_pubkey is required when the genesis has epochs", ErrGenesis, name, i)
			}
		}
	}
	if !member && g.ReconfigAdmin == nil { // with a devnet admin it may join in band (SPEC-NOTES C11)
		return fmt.Errorf("%w: validator.peer_pubkey is in no epoch's validator_set", ErrGenesis)
	}
	if len(g.Epochs) == 0 && !g.Schedule.Height() {
		return nil
	}
	es := g.EpochSets()
	if !g.Schedule.Height() || len(g.Schedule.Activations) != len(es) {
		return fmt.Errorf("%w: a network with epochs needs a height schedule listing %d activations (D30)", ErrGenesis, len(es))
	}
	for i, e := range es {
		if uint64(g.Schedule.Activations[i]) != e.Activation || (i > 0 && e.Activation <= es[i-1].Activation) {
			return fmt.Errorf("%w: epoch %d activates at %d, the schedule says %d (ascending, D30)", ErrGenesis, e.Epoch, e.Activation, g.Schedule.Activations[i])
		}
	}
	acts := make([]uint64, len(es))
	for i, e := range es {
		acts[i] = e.Activation
	}
	if err := CheckActivations(acts, g.P().OverlapBlocks); err != nil {
		return fmt.Errorf("%w: %w", ErrGenesis, err)
	}
	return nil
}

func (g *Genesis) beaconRound() seed.Round {
	return seed.Round{Epoch: uint64(g.GenesisBeacon.Epoch), View: uint64(g.GenesisBeacon.View)}
}

// P is the chain's parameter set.
func (g *Genesis) P() cip11.Params { return cip11.Params(g.Params) }

// Snapshot is the §5.4 snapshot of epoch 0, active from 0: the sole
// validator, or a network's Set (D29).
func (g *Genesis) Snapshot() (*validators.Snapshot, error) {
	if g.Network() {
		rs := make([]validators.Record, len(g.Set))
		for i, v := range g.Set {
			rs[i] = validators.Record{PeerPubKey: validators.PeerKey(v.PeerPubKey)}
		}
		return validators.NewSnapshot(0, rs, 0)
	}
	return validators.NewSnapshot(0, []validators.Record{{PeerPubKey: validators.PeerKey(g.Validator.PeerPubKey)}}, 0)
}

// History is the §5.4 snapshot history: every genesis epoch of a network
// (epoch 0 active from 0, each later one from its activation height,
// HistoryOf), or the single validator's epoch 0.
func (g *Genesis) History() (*validators.History, error) {
	if g.Network() {
		return HistoryOf(g.EpochSets())
	}
	s, err := g.Snapshot()
	if err != nil {
		return nil, err
	}
	return validators.NewHistory(s)
}

// Header is the chain-log header of the validator's block log: the same
// threshold key for every epoch of the schedule (a 1-of-1 "threshold"), or
// on a network each epoch's group key and set; with Mode A enabled
// (PRESENCE_HARD_EXCLUDE_ENABLED) also the §8.3 receipt chain_id and the
// sets' peer_pubkeys.
func (g *Genesis) Header() chainlog.Header {
	h := chainlog.Header{
		Format: chainlog.FormatName, Version: chainlog.Version,
		ChainID:   fmt.Sprintf("cip11-devnet-%d", g.ChainID),
		Generator: "cip11 validator",
		Params:    g.P(), Namespace: g.Namespace, Schedule: g.Schedule,
		Validators: []chainlog.ValidatorSet{{ActivationHeight: 0, Participants: uint32(max(1, len(g.Set)))}},
		Reputation: g.Reputation,
	}
	gb := g.GenesisBeacon
	h.GenesisBeacon = &gb
	// Mode A (§8.3) is governance-enabled by PRESENCE_HARD_EXCLUDE_ENABLED:
	// the log then carries the receipt chain_id and every set's peer keys,
	// and blocks may carry SubmitPresenceCertificate transactions.
	modeA := g.P().PresenceHardExcludeEnabled
	if modeA {
		id := chainlog.U64(g.ChainID)
		h.ReceiptChainID = &id
	}
	if g.Schedule.Height() { // a network: each epoch's group key and set size (D30)
		h.Validators = nil
		for _, e := range g.EpochSets() {
			h.ThresholdKeys = append(h.ThresholdKeys, chainlog.EpochKey{Epoch: chainlog.U64(e.Epoch), PublicKey: e.GroupKey})
			act := e.Activation
			if e.Epoch == 0 {
				act = 0
			}
			vs := chainlog.ValidatorSet{ActivationHeight: chainlog.U64(act), Participants: uint32(len(e.Set))}
			if modeA {
				for _, v := range e.Set {
					vs.PeerPubKeys = append(vs.PeerPubKeys, chainlog.PeerKey(v.PeerPubKey))
				}
			}
			h.Validators = append(h.Validators, vs)
		}
		return h
	}
	for e := uint64(0); e <= uint64(g.Schedule.LastKnownEpoch); e++ {
		h.ThresholdKeys = append(h.ThresholdKeys, chainlog.EpochKey{Epoch: chainlog.U64(e), PublicKey: g.Validator.ThresholdPubKey})
	}
	if modeA && len(g.Set) == 0 {
		h.Validators[0].PeerPubKeys = []chainlog.PeerKey{chainlog.PeerKey(g.Validator.PeerPubKey)}
	} else if modeA {
		for _, v := range g.Set {
			h.Validators[0].PeerPubKeys = append(h.Validators[0].PeerPubKeys, chainlog.PeerKey(v.PeerPubKey))
		}
	}
	return h
}
