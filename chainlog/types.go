package chainlog

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/textform"
	"github.com/cip11/cip11/state"
)

// Format identification of the header line.
const (
	// FormatName is the value of the header's "format" key.
	FormatName = "cip11-chainlog"
	// Version is the only format version this package reads and writes.
	Version = 2
)

// Sentinel errors. Every decoding failure wraps exactly one of them (or
// ErrPruned, base.go).
var (
	// ErrMalformed: the log is not a well-formed chain log of a supported
	// version (bad JSON, unknown or missing key, bad decimal or hex, wrong
	// length, out-of-range value, non-consecutive heights, over-long line).
	ErrMalformed = errors.New("chainlog: malformed log")
	// ErrUnsupportedVersion: the header names a format version other than
	// [Version].
	ErrUnsupportedVersion = errors.New("chainlog: unsupported format version")
)

// U64 is a protocol u64, written as a canonical decimal string (no sign,
// no leading zeros, at most 2^64−1).
type U64 uint64

// MarshalText writes the decimal form.
func (u U64) MarshalText() ([]byte, error) { return textform.AppendU64(nil, uint64(u)), nil }

// UnmarshalText accepts only the canonical decimal form (D18).
func (u *U64) UnmarshalText(b []byte) error {
	v, err := textform.ParseU64(b)
	if err != nil {
		return fmt.Errorf("%w: u64: %w", ErrMalformed, err)
	}
	*u = U64(v)
	return nil
}

// Bytes is a variable-length byte string, written as lowercase hex without
// 0x. An empty string is an empty (non-nil) byte string.
type Bytes []byte

// MarshalText writes lowercase hex.
func (b Bytes) MarshalText() ([]byte, error) { return textform.AppendHex(nil, b), nil }

// UnmarshalText accepts lowercase hex of even length (D18).
func (b *Bytes) UnmarshalText(s []byte) error {
	v, err := textform.ParseHex(s)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	*b = v
	return nil
}

// Signature is a 48-byte MinSig seed signature (96 lowercase hex digits).
type Signature [48]byte

// MarshalText writes lowercase hex.
func (g Signature) MarshalText() ([]byte, error) { return textform.AppendHex(nil, g[:]), nil }

// UnmarshalText accepts exactly 96 lowercase hex digits.
func (g *Signature) UnmarshalText(s []byte) error { return unhexInto(g[:], s) }

// PublicKey is a 96-byte MinSig threshold public key (192 lowercase hex digits).
type PublicKey [96]byte

// MarshalText writes lowercase hex.
func (k PublicKey) MarshalText() ([]byte, error) { return textform.AppendHex(nil, k[:]), nil }

// UnmarshalText accepts exactly 192 lowercase hex digits.
func (k *PublicKey) UnmarshalText(s []byte) error { return unhexInto(k[:], s) }

func unhexInto(dst, s []byte) error {
	if err := textform.ParseHexInto(dst, s); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

// Health is a Runner Registry HealthStatus, written by name.
type Health uint8

// HealthStatus values: the state package's, so the two can never drift.
const (
	Healthy      = Health(state.Healthy)
	Unhealthy    = Health(state.Unhealthy)
	Paused       = Health(state.Paused)
	Deregistered = Health(state.Deregistered)
)

func healthNames() [4]string { return [...]string{"healthy", "unhealthy", "paused", "deregistered"} }

// String returns the name written to the log.
func (h Health) String() string {
	if h <= Deregistered {
		return healthNames()[h]
	}
	return fmt.Sprintf("Health(%d)", uint8(h))
}

// MarshalText writes the name; an unknown value is an error.
func (h Health) MarshalText() ([]byte, error) {
	if h > Deregistered {
		return nil, fmt.Errorf("%w: health %d", ErrMalformed, uint8(h))
	}
	return []byte(healthNames()[h]), nil
}

// UnmarshalText accepts one of the four names.
func (h *Health) UnmarshalText(b []byte) error {
	for i, n := range healthNames() {
		if n == string(b) {
			*h = Health(i)
			return nil
		}
	}
	return fmt.Errorf("%w: unknown health %q", ErrMalformed, b)
}

// Round is a consensus round (epoch, view).
type Round struct {
	Epoch U64 `json:"epoch"`
	View  U64 `json:"view"`
}

// Beacon is an execution-readable seed: its round and MinSig signature.
type Beacon struct {
	Epoch     U64       `json:"epoch"`
	View      U64       `json:"view"`
	Signature Signature `json:"signature"`
}

// Registry operation names.
const (
	OpRegister = "register"
	OpUpdate   = "update"
)

// RegistryOp is one Runner Registry change applied at the end of the block,
// after its CIP-11 execution. "register" appends a runner to
// ACTIVE_RUNNERS_KEY (stake and reputation_x1e9 required; health defaults
// to healthy, last_heartbeat to the block height, delegated_active to 0).
// "update" changes the named fields of a registered runner; an absent field
// keeps its value.
type RegistryOp struct {
	Op              string        `json:"op"`
	Address         cip11.Address `json:"address"`
	Health          *Health       `json:"health,omitempty"`
	Stake           *cip11.U128   `json:"stake,omitempty"`
	DelegatedActive *cip11.U128   `json:"delegated_active,omitempty"`
	ReputationX1e9  *U64          `json:"reputation_x1e9,omitempty"`
	LastHeartbeat   *U64          `json:"last_heartbeat,omitempty"`
}

// Tx is one CIP-11-relevant transaction of the block, in block order
// (D23): exactly one of its fields is set.
type Tx struct {
	Submit       *Submit       `json:"submit,omitempty"`
	ResultSubmit *ResultSubmit `json:"result_submit,omitempty"`
	Verified     *Verified     `json:"verified,omitempty"`
	// Certificate is a SubmitPresenceCertificate (§8.3); only in a log whose
	// header has a ReceiptChainID.
	Certificate *Certificate `json:"certificate,omitempty"`
	// Reconfigure is a devnet admin reconfiguration (§5.3–§5.4, D30–D31,
	// SPEC-NOTES C11); only in a log whose header has a height schedule.
	Reconfigure *Reconfigure `json:"reconfigure,omitempty"`
}

// Reconfigure is one in-band validator-set change: the §5.4
// ValidatorSetSnapshot(E+1) with its activation height (emitting
// ValidatorSetActivated(E+1, h_a) when the block commits), E+1's threshold
// group key and every member's public share (D31), consensus key (D29)
// and addresses. DEVNET ONLY: a chain accepts it from the genesis's admin
// key (SPEC-NOTES C11); the executor checks its place in the schedule
// (blockexec.CheckReconfigure), not its signer.
type Reconfigure struct {
	Epoch      U64         `json:"epoch"`
	Activation U64         `json:"activation_height"`
	GroupKey   PublicKey   `json:"group_key"`
	Set        []SetMember `json:"validator_set"`
}

// SetMember is one validator of a [Reconfigure]'s set.
type SetMember struct {
	PeerPubKey      PeerKey   `json:"peer_pubkey"`      // raw Ed25519 peer key (§5.4, D29)
	ThresholdPubKey PublicKey `json:"threshold_pubkey"` // public share of index i+1 (D31)
	ConsensusPubKey PeerKey   `json:"consensus_pubkey"` // CometBFT vote key (D29)
	QUIC            string    `json:"quic"`             // UDP host:port runners dial
	HTTP            string    `json:"http"`             // HTTP API
}

// EncodeReconfigure is r's canonical bytes: compact JSON in field order
// (the admin transaction's payload, SPEC-NOTES C11).
func EncodeReconfigure(r *Reconfigure) ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	return marshalCompact(r)
}

// DecodeReconfigure strictly decodes canonical [EncodeReconfigure] bytes:
// anything else (unknown or missing keys, other spacing or key order)
// wraps ErrMalformed.
func DecodeReconfigure(b []byte) (*Reconfigure, error) {
	var r Reconfigure
	if err := strictUnmarshal(b, &r); err != nil {
		return nil, err
	}
	canon, err := EncodeReconfigure(&r)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(canon, b) {
		return nil, fmt.Errorf("%w: reconfigure is not in canonical form", ErrMalformed)
	}
	return &r, nil
}

// Validate checks what needs no chain state: a non-empty set of at most
// MaxReconfigureSet, strictly ascending by peer_pubkey (§5.4), with
// addresses. Errors wrap ErrMalformed.
func (r *Reconfigure) Validate() error { return r.validate() }

func (r *Reconfigure) validate() error {
	if len(r.Set) == 0 || len(r.Set) > MaxReconfigureSet {
		return fmt.Errorf("%w: reconfigure: %d validators (1 … %d)", ErrMalformed, len(r.Set), MaxReconfigureSet)
	}
	for i, m := range r.Set {
		if i > 0 && bytes.Compare(r.Set[i-1].PeerPubKey[:], m.PeerPubKey[:]) >= 0 {
			return fmt.Errorf("%w: reconfigure: validator_set not strictly ascending by peer_pubkey at %d", ErrMalformed, i)
		}
		if m.QUIC == "" || len(m.QUIC) > 255 || len(m.HTTP) > 255 {
			return fmt.Errorf("%w: reconfigure: validator_set[%d]: quic %q / http %q", ErrMalformed, i, m.QUIC, m.HTTP)
		}
	}
	return nil
}

// MaxReconfigureSet bounds a [Reconfigure]'s set (seed.MaxShares is
// larger; D29 devnets stay at 64).
const MaxReconfigureSet = 64

// Certificate is one SubmitPresenceCertificate system instruction (§8.3).
// runner_signed, the ordinary transaction signature, was checked by the
// transaction path and is not recorded.
type Certificate struct {
	Runner   cip11.Address `json:"runner"`
	Height   U64           `json:"height"`
	Receipts []Receipt     `json:"receipts"`
}

// Receipt is one §8.3 PresenceReceipt. The key and signature fields hold
// the wire bytes as submitted (scheme-tagged PubKeys, §12.6): a receipt
// whose bytes are not a valid key or a 64-byte signature is not counted
// (§8.3 evaluation order, step 2), it does not make the block invalid.
type Receipt struct {
	ValidatorPubKey  Bytes      `json:"validator_pubkey"`
	RunnerPubKey     Bytes      `json:"runner_pubkey"`
	SubsetEpoch      U64        `json:"subset_epoch"`
	ValidatorSetHash cip11.Hash `json:"validator_set_hash"`
	BlockHeight      U64        `json:"block_height"`
	NonceEcho        U64        `json:"nonce_echo"`
	AcceptingNew     bool       `json:"accepting_new"`
	ValidatorSigned  Bytes      `json:"validator_signed"`
}

// CertificateOutcome is what executing one SubmitPresenceCertificate
// produced (§8.3): Result is "accepted" or the rejection's name
// (blockexec.CertificateResultName), Anchor and ProvenUntil the new
// presence_anchor / presence_proven_until (0 when rejected), Counted the
// number of retained signature-valid receipts, Cycles what it was charged.
type CertificateOutcome struct {
	Tx          uint32        `json:"tx"`
	Runner      cip11.Address `json:"runner"`
	Result      string        `json:"result"`
	Anchor      U64           `json:"anchor"`
	ProvenUntil U64           `json:"proven_until"`
	Counted     uint32        `json:"counted"`
	Cycles      U64           `json:"cycles"`
}

// Submit is one JobSubmit instruction.
type Submit struct {
	JobID         cip11.Hash    `json:"job_id"`
	Submitter     cip11.Address `json:"submitter"`
	JobKind       uint8         `json:"job_kind"`
	CommitteeSize uint32        `json:"committee_size"`
	TimeoutBlocks U64           `json:"timeout_blocks"`
}

// ResultSubmit is an included JobResultSubmit of one committee runner
// (§11.2: the runner delivered).
type ResultSubmit struct {
	JobID  cip11.Hash    `json:"job_id"`
	Runner cip11.Address `json:"runner"`
}

// Verified is one verified result (§9.4 write path input): the
// consensus-matching runners and the two ineligible sets. The committee
// order is the job record's.
type Verified struct {
	JobID             cip11.Hash      `json:"job_id"`
	Matching          []cip11.Address `json:"matching"`
	RunnersToSlash    []cip11.Address `json:"runners_to_slash"`
	RunnersUnrewarded []cip11.Address `json:"runners_unrewarded"`
}

// Assignment is one committee the block wrote (§9.2), in processing order.
type Assignment struct {
	JobID            cip11.Hash      `json:"job_id"`
	SubmittedAt      U64             `json:"submitted_at"`
	AssignmentHeight U64             `json:"assignment_height"`
	DeadlineBlock    U64             `json:"deadline_block"`
	Mode             uint8           `json:"mode"`
	Branch           string          `json:"branch"`
	Seed             cip11.Hash      `json:"seed"`
	Committee        []cip11.Address `json:"committee"`
	Reselection      uint32          `json:"reselection"`
}

// MRUWrite is one §9.4 mru_key write made by the block's verified results.
type MRUWrite struct {
	Submitter  cip11.Address `json:"submitter"`
	JobKind    uint8         `json:"job_kind"`
	Runner     cip11.Address `json:"runner"`
	SetAtBlock U64           `json:"set_at_block"`
}

// Output is what executing a block produced.
type Output struct {
	Assignments     []Assignment `json:"assignments"`
	PendingWritten  []Bytes      `json:"pending_written"`
	PendingConsumed []cip11.Hash `json:"pending_consumed"`
	Expired         []cip11.Hash `json:"expired"`
	MRUWrites       []MRUWrite   `json:"mru_writes"`
	// Certificates has one entry per Tx.Certificate of the block, in
	// transaction order; omitted when the block has none.
	Certificates []CertificateOutcome `json:"certificates,omitempty"`
	StateDigest  cip11.Hash           `json:"state_digest"`
}

// Block is one block line: the inputs CIP-11 execution consumed and, under
// "out", what it produced.
type Block struct {
	Height U64   `json:"height"`
	Round  Round `json:"round"`
	// ParentBeacon is R_{H−1}; nil (JSON null) means the parent predates the
	// first certified round and the header's genesis beacon applies.
	ParentBeacon *Beacon `json:"parent_beacon"`
	// Finalized is the highest height finalized and applied when this block
	// executes (§9.2 condition 1); nil (JSON null) means none.
	Finalized *U64 `json:"finalized"`
	// Presence is the committed PresenceInputV1 bytes; nil (JSON null) means
	// the block has no field.
	Presence *Bytes `json:"presence"`
	// ConsumedSeeds is the committed ConsumedSeedsV1 bytes (0x80 when empty).
	ConsumedSeeds Bytes        `json:"consumed_seeds"`
	Registry      []RegistryOp `json:"registry"`
	// Heartbeats are registry indices (positions in ACTIVE_RUNNERS_KEY after
	// this block's registrations) whose last_heartbeat becomes the height.
	Heartbeats []uint32 `json:"heartbeats"`
	Txs        []Tx     `json:"txs"`
	Out        Output   `json:"out"`
}
