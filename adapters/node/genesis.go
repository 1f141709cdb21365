package node

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cip11/cip11/adapters/node/chain"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/internal/devkeys"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
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

// Genesis is a single-validator chain's configuration (docs/genesis.md):
// the chain id, the validator's public identity and threshold key, the
// §13 parameters and flags, the seed schedule and the genesis runners.
// Secret keys live in separate key files.
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

// ValidatorKeys are the sole validator's secrets.
type ValidatorKeys struct {
	Peer *wire.ValidatorKey // Ed25519 peer identity (§3.3)
	// Threshold is the BLS12-381 seed key (§9.2): the 1-of-1 key of a
	// single validator, or a network validator's epoch-0 share (D31).
	Threshold seed.SecretKey
	seedBytes [32]byte
	bls       [32]byte
	mu        sync.Mutex       // shares: the devnet dealer adds them while the node runs
	shares    []epochShareFile // a network validator's shares of later epochs
}

type validatorKeyFile struct {
	Ed25519Seed  cip11.Hash       `json:"ed25519_seed"`
	BLSSecretKey cip11.Hash       `json:"bls_secret_key"`
	EpochShares  []epochShareFile `json:"epoch_shares,omitempty"`
}

type epochShareFile struct {
	Epoch  chainlog.U64 `json:"epoch"`
	Secret cip11.Hash   `json:"bls_secret_key"`
}

// AddEpochShare adds the validator's threshold share of epoch e ≥ 1
// (DEVNET: dealt at genesis, D31); epochs are added in ascending order.
func (k *ValidatorKeys) AddEpochShare(e uint64, secret [32]byte) error {
	if _, err := seed.SecretKeyFromBytes(secret[:]); err != nil {
		return fmt.Errorf("%w: epoch %d share: %v", ErrKeyFile, e, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if e == 0 || (len(k.shares) > 0 && uint64(k.shares[len(k.shares)-1].Epoch) >= e) {
		return fmt.Errorf("%w: epoch %d share out of order", ErrKeyFile, e)
	}
	k.shares = append(k.shares, epochShareFile{Epoch: chainlog.U64(e), Secret: secret})
	return nil
}

// Share is the validator's threshold share of epoch e: Threshold for
// epoch 0, an added share otherwise (ok false: none).
func (k *ValidatorKeys) Share(e uint64) (seed.SecretKey, bool) {
	if e == 0 {
		return k.Threshold, true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, s := range k.shares {
		if uint64(s.Epoch) == e {
			sk, err := seed.SecretKeyFromBytes(s.Secret[:])
			return sk, err == nil
		}
	}
	return seed.SecretKey{}, false
}

type runnerKeyFile struct {
	Address cip11.Address `json:"address"`
	Secret  cip11.Hash    `json:"secp256k1_secret"`
}

// NewValidatorKeys builds the validator's keys from their secret bytes.
func NewValidatorKeys(ed25519Seed, blsSecret [32]byte) (*ValidatorKeys, error) {
	sk, err := seed.SecretKeyFromBytes(blsSecret[:])
	if err != nil {
		return nil, fmt.Errorf("%w: bls key: %v", ErrKeyFile, err)
	}
	return &ValidatorKeys{Peer: wire.NewValidatorKey(ed25519Seed), Threshold: sk, seedBytes: ed25519Seed, bls: blsSecret}, nil
}

// LoadValidatorKeys reads a validator key file.
func LoadValidatorKeys(path string) (*ValidatorKeys, error) {
	var f validatorKeyFile
	if err := readStrict(path, &f); err != nil {
		return nil, err
	}
	k, err := NewValidatorKeys(f.Ed25519Seed, f.BLSSecretKey)
	if err != nil {
		return nil, err
	}
	for _, sh := range f.EpochShares {
		if err := k.AddEpochShare(uint64(sh.Epoch), sh.Secret); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return k, nil
}

// LoadRunnerKey reads a runner key file and checks its address.
func LoadRunnerKey(path string) (*wire.RunnerKey, error) {
	var f runnerKeyFile
	if err := readStrict(path, &f); err != nil {
		return nil, err
	}
	k, err := wire.NewRunnerKey(f.Secret)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrKeyFile, err)
	}
	if k.Address() != f.Address {
		return nil, fmt.Errorf("%s: %w: the key is %s's, the file says %s", path, ErrKeyFile, k.Address(), f.Address)
	}
	return k, nil
}

func readStrict(path string, dst any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := decodeStrict(b, dst); err != nil {
		return fmt.Errorf("%s: %w: %v", path, ErrKeyFile, err)
	}
	return nil
}

func writeJSON(path string, v any, mode os.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), mode)
}

// GenesisOptions shape a generated devnet genesis.
type GenesisOptions struct {
	ChainID uint64
	Seed    uint64 // key derivation seed: the same seed gives the same keys
	Runners int
	QUIC    string // validator UDP address (127.0.0.1:7011)
	HTTP    string // validator HTTP address (127.0.0.1:8011)
	Params  *cip11.Params
	// Extra are runners registered at genesis whose keys this genesis
	// does not hold (no key file is written for them), after the Runners
	// derived ones. A zero ReputationX1e9 is DefaultRunnerReputation.
	Extra []GenesisRunner
}

// DefaultRunnerStake and DefaultRunnerReputation are the stake (wei) and
// reputation of a genesis runner given without them (ParseGenesisRunner).
const (
	DefaultRunnerStake      = 1_000_000_000_000_000
	DefaultRunnerReputation = 1_000_000_000
)

// ParseGenesisRunner parses "ADDRESS[:STAKE]" (cip11 genesis -runner): a
// 20-byte address as 40 hex digits (an optional 0x prefix, either case)
// and a decimal stake in wei, not zero (default DefaultRunnerStake).
// Errors wrap ErrRunnerSpec.
func ParseGenesisRunner(spec string) (GenesisRunner, error) {
	addr, stake, found := strings.Cut(spec, ":")
	if found && stake == "" {
		return GenesisRunner{}, fmt.Errorf("%w: %q: empty stake after the colon", ErrRunnerSpec, spec)
	}
	return parseRunner(addr, stake)
}

func parseRunner(addr, stake string) (GenesisRunner, error) {
	r := GenesisRunner{Stake: cip11.U128From64(DefaultRunnerStake), ReputationX1e9: DefaultRunnerReputation}
	h := strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(addr, "0x"), "0X"))
	if err := r.Address.UnmarshalText([]byte(h)); err != nil {
		return r, fmt.Errorf("%w: address %q: %v (want 40 hex digits)", ErrRunnerSpec, addr, err)
	}
	if stake != "" {
		v, err := cip11.ParseU128(stake)
		if err != nil {
			return r, fmt.Errorf("%w: stake %q: %v (want a decimal amount in wei)", ErrRunnerSpec, stake, err)
		}
		r.Stake = v
	}
	if r.Stake.IsZero() {
		return r, fmt.Errorf("%w: %s: stake is zero", ErrRunnerSpec, addr)
	}
	return r, nil
}

// ReadGenesisRunners reads a runners file (cip11 genesis -runners-file):
// one "ADDRESS [STAKE]" per line, fields separated by blanks, "#" starting
// a comment, blank lines ignored. Addresses and stakes are those of
// ParseGenesisRunner; an address listed twice is an error. Errors wrap
// ErrRunnerSpec and name the line.
func ReadGenesisRunners(r io.Reader) ([]GenesisRunner, error) {
	var out []GenesisRunner
	seen := make(map[cip11.Address]int)
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) > 2 {
			return nil, fmt.Errorf("line %d: %w: %d fields, want ADDRESS [STAKE]", n, ErrRunnerSpec, len(f))
		}
		stake := ""
		if len(f) == 2 {
			stake = f[1]
		}
		g, err := parseRunner(f[0], stake)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if prev, ok := seen[g.Address]; ok {
			return nil, fmt.Errorf("line %d: %w: %s already listed on line %d", n, ErrRunnerSpec, g.Address, prev)
		}
		seen[g.Address] = n
		out = append(out, g)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRunnerSpec, err)
	}
	return out, nil
}

// DefaultGenesisParams are a generated genesis's §13 parameters
// (GenerateGenesis, cip11 genesis, the devnets): the defaults with the
// transport and present-first flags on and MRU active from block 1.
func DefaultGenesisParams() cip11.Params {
	p := cip11.DefaultParams()
	p.TransportEnabled = true
	p.PresentFirstEnabled = true
	p.MRUActivationHeight = 1
	return p
}

// GeneratedGenesis is a generated genesis with its secret keys
// (GenerateGenesis).
type GeneratedGenesis struct {
	Genesis    *Genesis
	Validator  *ValidatorKeys
	RunnerKeys []*wire.RunnerKey
}

func derive(label string, s, i uint64) [32]byte { return devkeys.Genesis(label, s, i) }

// GenerateGenesis derives a genesis and its keys from o. DEVNET ONLY:
// every secret is a function of o.Seed (internal/devkeys).
func GenerateGenesis(o GenesisOptions) (*GeneratedGenesis, error) {
	if o.Runners < 0 || o.Runners > 100_000 {
		return nil, fmt.Errorf("%w: %d runners", ErrGenesis, o.Runners)
	}
	if o.QUIC == "" {
		o.QUIC = "127.0.0.1:7011"
	}
	if o.HTTP == "" {
		o.HTTP = "127.0.0.1:8011"
	}
	if o.ChainID == 0 {
		o.ChainID = 7011
	}
	p := DefaultGenesisParams()
	if o.Params != nil {
		p = *o.Params
	}
	blsSeed := derive("bls", o.Seed, 0)
	vk, err := NewValidatorKeys(derive("ed25519", o.Seed, 0), seed.DeriveSecretKey(blsSeed[:]).Bytes())
	if err != nil {
		return nil, err
	}
	ns := []byte(fmt.Sprintf("cip11-devnet-%d", o.ChainID))
	sig, err := seed.SignSeed(vk.Threshold, ns, seed.Round{})
	if err != nil {
		return nil, err
	}
	rc := state.DefaultReputationConfig()
	g := &Genesis{
		Format: GenesisFormat, Version: GenesisVersion, ChainID: chainlog.U64(o.ChainID),
		Params: chainlog.ParamSet(p), Namespace: ns,
		Schedule:      chainlog.Schedule{ViewsPerEpoch: 100_000, FirstView: 1, LastKnownEpoch: 99},
		Reputation:    chainlog.ReputationConfig{Normalizer: chainlog.U64(rc.Normalizer), WMinFloorX1e6: chainlog.U64(rc.WMinFloorX1e6)},
		GenesisBeacon: chainlog.Beacon{Signature: chainlog.Signature(sig)},
		Validator: GenesisValidator{
			PeerPubKey: cip11.Hash(vk.Peer.PubKey().Raw()), ThresholdPubKey: vk.Threshold.PublicKey(),
			QUIC: o.QUIC, HTTP: o.HTTP,
		},
		Runners: []GenesisRunner{},
	}
	d := &GeneratedGenesis{Genesis: g, Validator: vk}
	for i := range o.Runners {
		k, err := wire.NewRunnerKey(derive("runner", o.Seed, uint64(i)))
		if err != nil {
			return nil, err
		}
		d.RunnerKeys = append(d.RunnerKeys, k)
		g.Runners = append(g.Runners, GenesisRunner{
			Address: k.Address(), Stake: cip11.U128From64(1_000_000_000_000_000 + uint64(i)*1_000_000_000_000),
			ReputationX1e9: DefaultRunnerReputation,
		})
	}
	for _, r := range o.Extra {
		if r.ReputationX1e9 == 0 {
			r.ReputationX1e9 = DefaultRunnerReputation
		}
		g.Runners = append(g.Runners, r)
	}
	return d, g.Validate()
}

// Write stores the devnet in dir: genesis.json, validator.key and
// runner-NNNN.key (mode 0600). It refuses, with ErrGenesisExists and no
// file written, when dir already holds any of genesis.json, validator.key
// or a runner-NNNN.key: a new genesis would orphan the chain that the old
// one started (its data directory no longer opens, docs/genesis.md).
func (d *GeneratedGenesis) Write(dir string, s uint64) error {
	for _, name := range d.fileNames(dir) {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return fmt.Errorf("%w: %s (a new genesis orphans the chain it started; remove the files or overwrite deliberately)",
				ErrGenesisExists, filepath.Join(dir, name))
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return d.Overwrite(dir, s)
}

// fileNames are the genesis and key files in dir: the ones d writes and
// every runner-NNNN.key already there.
func (d *GeneratedGenesis) fileNames(dir string) []string {
	names := []string{"genesis.json", "validator.key"}
	for i := range d.RunnerKeys {
		names = append(names, runnerKeyName(i))
	}
	old, _ := filepath.Glob(filepath.Join(dir, "runner-[0-9][0-9][0-9][0-9].key"))
	for _, p := range old {
		names = append(names, filepath.Base(p))
	}
	return names
}

func runnerKeyName(i int) string { return fmt.Sprintf("runner-%04d.key", i) }

// Overwrite is Write without the check: it replaces the genesis and key
// files in dir and removes runner-NNNN.key files beyond this devnet's
// runners (stale keys of the replaced genesis).
func (d *GeneratedGenesis) Overwrite(dir string, s uint64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "runner-[0-9][0-9][0-9][0-9].key"))
	for _, p := range old {
		var i int
		if _, err := fmt.Sscanf(filepath.Base(p), "runner-%04d.key", &i); err == nil && i >= len(d.RunnerKeys) {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	b, err := d.Genesis.Encode()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "genesis.json"), b, 0o644); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "validator.key"), validatorKeyFile{Ed25519Seed: d.Validator.seedBytes, BLSSecretKey: d.Validator.bls}, 0o600); err != nil {
		return err
	}
	for i, k := range d.RunnerKeys {
		f := runnerKeyFile{Address: k.Address(), Secret: devkeys.Runner(s, i)}
		if err := writeJSON(filepath.Join(dir, runnerKeyName(i)), f, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Write stores the keys as a validator.key file (mode 0600).
func (k *ValidatorKeys) Write(path string) error {
	k.mu.Lock()
	shares := slices.Clone(k.shares)
	k.mu.Unlock()
	// Atomically (a temporary file, synced, renamed): a running node
	// rewrites it when the devnet dealer hands it a share, and a crash
	// then must leave the old file or the new one, never neither.
	tmp := path + ".tmp"
	if err := writeJSON(tmp, validatorKeyFile{Ed25519Seed: k.seedBytes, BLSSecretKey: k.bls, EpochShares: shares}, 0o600); err != nil {
		return err
	}
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	serr := f.Sync()
	if err := errors.Join(serr, f.Close()); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Ed25519Seed is the peer key's seed: on a network, the CometBFT node key
// is the same Ed25519 key (D29: peer_pubkey is the p2p identity).
func (k *ValidatorKeys) Ed25519Seed() [32]byte { return k.seedBytes }

// WriteRunnerKey stores runner i's key file of devnet seed s in dir
// (runner-NNNN.key, mode 0600). DEVNET ONLY.
func WriteRunnerKey(dir string, s uint64, i int) error {
	k, err := wire.NewRunnerKey(devkeys.Runner(s, i))
	if err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, runnerKeyName(i)), runnerKeyFile{Address: k.Address(), Secret: devkeys.Runner(s, i)}, 0o600)
}
