package chainlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/textform"
)

// Header is the first line of a chain log: the format identification and
// the chain configuration every block is executed under.
type Header struct {
	Format  string `json:"format"`  // FormatName
	Version int    `json:"version"` // Version
	// ChainID names the chain (informative).
	ChainID string `json:"chain_id"`
	// Generator describes how the log was produced (informative).
	Generator string `json:"generator"`
	// Params is the §13 parameter set. On the wire only the constants that
	// differ from cip11.DefaultParams() are written, keyed by their §13 names.
	Params cip11.Params `json:"-"`
	// Namespace is the consensus namespace NS of the seed message (D12).
	Namespace Bytes `json:"namespace"`
	// ThresholdKeys lists each epoch's threshold public key, ascending by epoch.
	ThresholdKeys []EpochKey `json:"threshold_keys"`
	// GenesisBeacon is the configured genesis beacon, or nil.
	GenesisBeacon *Beacon `json:"genesis_beacon"`
	// Schedule is the seed.FixedSchedule behind advance_round.
	Schedule Schedule `json:"schedule"`
	// Validators is the validator-set size schedule (D25): each entry's
	// participant count applies from its activation height on; the first
	// entry activates at 0.
	Validators []ValidatorSet `json:"validator_sets"`
	// Reputation is ReputationConfig for the whole log.
	Reputation ReputationConfig `json:"reputation_config"`
	// ReceiptChainID, if set, is the executing network's u64 chain_id that
	// §8.3 PresenceReceipts are signed under; with it every validator set
	// lists its peer_pubkeys, and blocks may carry SubmitPresenceCertificate
	// transactions (Tx.Certificate). Nil: the log has no Mode-A machinery.
	ReceiptChainID *U64 `json:"receipt_chain_id,omitempty"`
}

// EpochKey is one epoch's 96-byte threshold public key.
type EpochKey struct {
	Epoch     U64       `json:"epoch"`
	PublicKey PublicKey `json:"public_key"`
}

// Schedule is the devnet epoch schedule (seed.FixedSchedule) that answers
// advance_round: every epoch has ViewsPerEpoch views numbered from FirstView,
// and epochs after LastKnownEpoch are not mappable yet.
//
// A schedule with Activations is instead the height schedule of DECISIONS
// D30 (seed.HeightSchedule, the CometBFT network): the view is the block
// height, epoch e holds the heights from Activations[e] on, and the epoch of
// a height after KnownThrough is not final yet; its fixed-schedule fields are
// then zero.
type Schedule struct {
	ViewsPerEpoch  U64   `json:"views_per_epoch"`
	FirstView      U64   `json:"first_view"`
	LastKnownEpoch U64   `json:"last_known_epoch"`
	Activations    []U64 `json:"activations,omitempty"`
	KnownThrough   U64   `json:"known_through,omitempty"`
}

// Height reports whether s is the D30 height schedule.
func (s Schedule) Height() bool { return len(s.Activations) > 0 }

func (s Schedule) validate() error {
	if !s.Height() {
		if s.ViewsPerEpoch == 0 {
			return fmt.Errorf("%w: header: schedule.views_per_epoch is 0", ErrMalformed)
		}
		if s.KnownThrough != 0 {
			return fmt.Errorf("%w: header: schedule.known_through without activations", ErrMalformed)
		}
		return nil
	}
	if s.ViewsPerEpoch != 0 || s.FirstView != 0 || s.LastKnownEpoch != 0 {
		return fmt.Errorf("%w: header: schedule has both activations and fixed-epoch fields", ErrMalformed)
	}
	for i := 1; i < len(s.Activations); i++ {
		if s.Activations[i] <= s.Activations[i-1] {
			return fmt.Errorf("%w: header: schedule.activations not strictly ascending", ErrMalformed)
		}
	}
	if s.KnownThrough < s.Activations[len(s.Activations)-1] {
		return fmt.Errorf("%w: header: schedule.known_through precedes the last activation", ErrMalformed)
	}
	return nil
}

// ReputationConfig is the CIP-2 v3 weight configuration (§9.3).
type ReputationConfig struct {
	Normalizer    U64 `json:"normalizer"`
	WMinFloorX1e6 U64 `json:"w_min_floor_x1e6"`
}

// headerWire is Header as written: Params replaced by its overrides.
type headerWire struct {
	Format         string                     `json:"format"`
	Version        int                        `json:"version"`
	ChainID        string                     `json:"chain_id"`
	Generator      string                     `json:"generator"`
	Params         map[string]json.RawMessage `json:"params"`
	Namespace      Bytes                      `json:"namespace"`
	ThresholdKeys  []EpochKey                 `json:"threshold_keys"`
	GenesisBeacon  *Beacon                    `json:"genesis_beacon"`
	Schedule       Schedule                   `json:"schedule"`
	Validators     []ValidatorSet             `json:"validator_sets"`
	Reputation     ReputationConfig           `json:"reputation_config"`
	ReceiptChainID *U64                       `json:"receipt_chain_id,omitempty"`
}

type paramName struct{ name, field string }

// paramNames maps §13 constant names to cip11.Params fields, in §13 order.
func paramNames() []paramName {
	return []paramName{
		{"MIN_SUBSET", "MinSubset"},
		{"MAX_SUBSET", "MaxSubset"},
		{"K_HARD_MIN", "KHardMin"},
		{"MIN_STAKE_CBY_WEI", "MinStakeCBYWei"},
		{"RESULT_TX_INCLUSION_GRACE_BLOCKS", "ResultTxInclusionGraceBlocks"},
		{"RESULT_TX_REBROADCAST_INTERVAL_BLOCKS", "ResultTxRebroadcastIntervalBlocks"},
		{"HEARTBEAT_BLOCKS", "HeartbeatBlocks"},
		{"PRESENCE_TIMEOUT_BLOCKS", "PresenceTimeoutBlocks"},
		{"HEARTBEAT_TIMEOUT_BLOCKS", "HeartbeatTimeoutBlocks"},
		{"ACK_TIMEOUT_BLOCKS", "AckTimeoutBlocks"},
		{"MRU_TTL_BLOCKS", "MRUTTLBlocks"},
		{"MRU_WEIGHT_MULTIPLIER", "MRUWeightMultiplier"},
		{"MRU_ACTIVATION_HEIGHT", "MRUActivationHeight"},
		{"SELECTION_SEED_DELAY_VIEWS", "SelectionSeedDelayViews"},
		{"MAX_FRAME_BYTES", "MaxFrameBytes"},
		{"t_hard", "THard"},
		{"t_route", "TRoute"},
		{"RECEIPT_FRESHNESS_BLOCKS", "ReceiptFreshnessBlocks"},
		{"PRESENCE_PROOF_TTL_BLOCKS", "PresenceProofTTLBlocks"},
		{"PRESENCE_CERT_BASE_CYCLES", "PresenceCertBaseCycles"},
		{"PRESENCE_RECEIPT_PRECHECK_CYCLES", "PresenceReceiptPrecheckCycles"},
		{"PRESENCE_RECEIPT_ED25519_VERIFY_CYCLES", "PresenceReceiptEd25519VerifyCycles"},
		{"OVERLAP_BLOCKS", "OverlapBlocks"},
		{"CIP11_TRANSPORT_ENABLED", "TransportEnabled"},
		{"CIP11_PRESENCE_SHADOW_ENABLED", "PresenceShadowEnabled"},
		{"CIP11_PRESENT_FIRST_ENABLED", "PresentFirstEnabled"},
		{"CIP11_POLL_DISABLED", "PollDisabled"},
		{"PRESENCE_HARD_EXCLUDE_ENABLED", "PresenceHardExcludeEnabled"},
	}
}

// encodeParams returns the §13 constants of p that differ from the defaults:
// integers as decimal strings, flags as booleans.
func encodeParams(p cip11.Params) (map[string]json.RawMessage, error) {
	def := reflect.ValueOf(cip11.DefaultParams())
	got := reflect.ValueOf(p)
	out := make(map[string]json.RawMessage)
	for _, pn := range paramNames() {
		g := got.FieldByName(pn.field)
		if g.Equal(def.FieldByName(pn.field)) {
			continue
		}
		var v any
		switch g.Kind() {
		case reflect.Bool:
			v = g.Bool()
		case reflect.Uint32, reflect.Uint64:
			v = U64(g.Uint())
		default:
			v = g.Interface().(cip11.U128)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out[pn.name] = b
	}
	return out, nil
}

// decodeParams applies overrides to cip11.DefaultParams().
func decodeParams(over map[string]json.RawMessage) (cip11.Params, error) {
	p := cip11.DefaultParams()
	pv := reflect.ValueOf(&p).Elem()
	names := make([]string, 0, len(over))
	for k := range over {
		names = append(names, k)
	}
	slices.Sort(names) // deterministic error reporting
	pns := paramNames()
	for _, k := range names {
		i := slices.IndexFunc(pns, func(pn paramName) bool { return pn.name == k })
		if i < 0 {
			return p, fmt.Errorf("%w: unknown parameter %q", ErrMalformed, k)
		}
		if err := setParam(pv.FieldByName(pns[i].field), over[k]); err != nil {
			return p, fmt.Errorf("parameter %s: %w", k, err)
		}
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return p, nil
}

func setParam(f reflect.Value, raw json.RawMessage) error {
	switch f.Kind() {
	case reflect.Bool:
		var b bool
		if err := strictUnmarshal(raw, &b); err != nil {
			return err
		}
		f.SetBool(b)
	case reflect.Uint32, reflect.Uint64:
		var u U64
		if err := strictUnmarshal(raw, &u); err != nil {
			return err
		}
		if f.OverflowUint(uint64(u)) {
			return fmt.Errorf("%w: %d exceeds u32", ErrMalformed, u)
		}
		f.SetUint(uint64(u))
	default:
		var u cip11.U128
		if err := strictUnmarshal(raw, &u); err != nil {
			return err
		}
		f.Set(reflect.ValueOf(u))
	}
	return nil
}

// ValidatorSet is one entry of the validator-set schedule: the number of
// participants of the snapshot active from ActivationHeight on (§5.4).
type ValidatorSet struct {
	ActivationHeight U64    `json:"activation_height"`
	Participants     uint32 `json:"participants"`
	// PeerPubKeys are the snapshot's raw Ed25519 peer_pubkeys in canonical
	// participants order (§5.4, §8.3), one per participant; required when
	// the header has a ReceiptChainID, absent otherwise.
	PeerPubKeys []PeerKey `json:"peer_pubkeys,omitempty"`
}

// PeerKey is a raw 32-byte Ed25519 validator peer_pubkey (§5.4), written
// as 64 lowercase hex digits.
type PeerKey [32]byte

// MarshalText writes lowercase hex.
func (k PeerKey) MarshalText() ([]byte, error) { return textform.AppendHex(nil, k[:]), nil }

// UnmarshalText accepts exactly 64 lowercase hex digits.
func (k *PeerKey) UnmarshalText(s []byte) error { return unhexInto(k[:], s) }

// ParticipantsAt returns the participant count active at height h
// (engine.Validators; D25).
func (h Header) ParticipantsAt(height uint64) (int, error) {
	n := 0
	for _, v := range h.Validators {
		if uint64(v.ActivationHeight) > height {
			break
		}
		n = int(v.Participants)
	}
	return n, nil
}

// MarshalJSON writes the header with Params as its overrides.
func (h Header) MarshalJSON() ([]byte, error) {
	over, err := encodeParams(h.Params)
	if err != nil {
		return nil, err
	}
	w := headerWire{
		Format: h.Format, Version: h.Version, ChainID: h.ChainID, Generator: h.Generator,
		Params: over, Namespace: nonNil(h.Namespace), ThresholdKeys: h.ThresholdKeys,
		GenesisBeacon: h.GenesisBeacon, Schedule: h.Schedule, Validators: h.Validators,
		Reputation: h.Reputation, ReceiptChainID: h.ReceiptChainID,
	}
	if w.ThresholdKeys == nil {
		w.ThresholdKeys = []EpochKey{}
	}
	return marshalCompact(w)
}

// DecodeHeader strictly decodes a header line. A wrong format name or a
// malformed line wraps [ErrMalformed]; another version wraps
// [ErrUnsupportedVersion] (checked before the rest of the line, so a newer
// header with unknown keys is reported as unsupported, not malformed).
func DecodeHeader(line []byte) (Header, error) {
	var probe struct {
		Format  string          `json:"format"`
		Version json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		return Header{}, fmt.Errorf("%w: header: %v", ErrMalformed, err)
	}
	if probe.Format != FormatName {
		return Header{}, fmt.Errorf("%w: header format %q, want %q", ErrMalformed, probe.Format, FormatName)
	}
	if !bytes.Equal(probe.Version, []byte(strconv.Itoa(Version))) {
		return Header{}, fmt.Errorf("%w: version %s (this reader supports %d)", ErrUnsupportedVersion, probe.Version, Version)
	}
	var w headerWire
	if err := strictObject(line, &w); err != nil {
		return Header{}, fmt.Errorf("header: %w", err)
	}
	p, err := decodeParams(w.Params)
	if err != nil {
		return Header{}, fmt.Errorf("header: %w", err)
	}
	h := Header{
		Format: w.Format, Version: w.Version, ChainID: w.ChainID, Generator: w.Generator, Params: p,
		Namespace: w.Namespace, ThresholdKeys: w.ThresholdKeys, GenesisBeacon: w.GenesisBeacon,
		Schedule: w.Schedule, Validators: w.Validators, Reputation: w.Reputation, ReceiptChainID: w.ReceiptChainID,
	}
	return h, h.validate()
}

func (h Header) validate() error {
	for i := 1; i < len(h.ThresholdKeys); i++ {
		if h.ThresholdKeys[i].Epoch <= h.ThresholdKeys[i-1].Epoch {
			return fmt.Errorf("%w: header: threshold_keys not strictly ascending by epoch", ErrMalformed)
		}
	}
	if len(h.Validators) == 0 || h.Validators[0].ActivationHeight != 0 {
		return fmt.Errorf("%w: header: validator_sets must start at activation_height 0", ErrMalformed)
	}
	for i, v := range h.Validators {
		if v.Participants == 0 || (i > 0 && v.ActivationHeight <= h.Validators[i-1].ActivationHeight) {
			return fmt.Errorf("%w: header: validator_sets[%d]: empty or not ascending", ErrMalformed, i)
		}
		switch {
		case h.ReceiptChainID == nil && v.PeerPubKeys != nil:
			return fmt.Errorf("%w: header: validator_sets[%d]: peer_pubkeys without receipt_chain_id", ErrMalformed, i)
		case h.ReceiptChainID != nil && len(v.PeerPubKeys) != int(v.Participants):
			return fmt.Errorf("%w: header: validator_sets[%d]: %d peer_pubkeys for %d participants", ErrMalformed, i, len(v.PeerPubKeys), v.Participants)
		}
	}
	if err := h.Schedule.validate(); err != nil {
		return err
	}
	if h.Reputation.Normalizer == 0 {
		return fmt.Errorf("%w: header: reputation_config.normalizer is 0", ErrMalformed)
	}
	return nil
}

func nonNil(b Bytes) Bytes {
	if b == nil {
		return Bytes{}
	}
	return b
}

// ParamSet is a §13 parameter set in the header's JSON form: an object of
// the constants that differ from cip11.DefaultParams(), keyed by their §13
// names (integers as decimal strings, flags as booleans). Decoding rejects
// unknown names and a set that fails Params.Validate, wrapping ErrMalformed.
// Other formats (the node's genesis file) embed it.
type ParamSet cip11.Params

// MarshalJSON implements json.Marshaler.
func (p ParamSet) MarshalJSON() ([]byte, error) {
	over, err := encodeParams(cip11.Params(p))
	if err != nil {
		return nil, err
	}
	return marshalCompact(over)
}

// UnmarshalJSON implements json.Unmarshaler.
func (p *ParamSet) UnmarshalJSON(b []byte) error {
	var over map[string]json.RawMessage
	if err := strictUnmarshal(b, &over); err != nil {
		return err
	}
	if err := noDuplicateKeys(b); err != nil {
		return err
	}
	v, err := decodeParams(over)
	if err != nil {
		return err
	}
	*p = ParamSet(v)
	return nil
}
