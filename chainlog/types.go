package chainlog

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/state"
)

// Format identification of the header line.
const (
	// FormatName is the value of the header's "format" key.
	FormatName = "cip11-chainlog"
	// Version is the only format version this package reads and writes.
	Version = 1
)

// Sentinel errors. Every decoding failure wraps exactly one of them.
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
func (u U64) MarshalText() ([]byte, error) { return strconv.AppendUint(nil, uint64(u), 10), nil }

// UnmarshalText accepts only the canonical decimal form.
func (u *U64) UnmarshalText(b []byte) error {
	if len(b) == 0 || len(b) > 20 || (len(b) > 1 && b[0] == '0') {
		return fmt.Errorf("%w: u64 %q is not a canonical decimal", ErrMalformed, b)
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return fmt.Errorf("%w: u64 %q is not a canonical decimal", ErrMalformed, b)
		}
	}
	v, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("%w: u64 %q out of range", ErrMalformed, b)
	}
	*u = U64(v)
	return nil
}

// U128 is a protocol u128 (stake), written as a canonical decimal string.
type U128 cip11.U128

// String returns the decimal form.
func (u U128) String() string { return cip11.U128(u).String() }

// MarshalText writes the decimal form.
func (u U128) MarshalText() ([]byte, error) { return []byte(cip11.U128(u).String()), nil }

// UnmarshalText accepts only the canonical decimal form below 2^128.
func (u *U128) UnmarshalText(b []byte) error {
	if len(b) == 0 || len(b) > 39 || (len(b) > 1 && b[0] == '0') {
		return fmt.Errorf("%w: u128 %q is not a canonical decimal", ErrMalformed, b)
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return fmt.Errorf("%w: u128 %q is not a canonical decimal", ErrMalformed, b)
		}
	}
	v, err := cip11.ParseU128(string(b))
	if err != nil || cip11.U128(v).String() != string(b) {
		return fmt.Errorf("%w: u128 %q out of range", ErrMalformed, b)
	}
	*u = U128(v)
	return nil
}

// Bytes is a variable-length byte string, written as lowercase hex without
// 0x. An empty string is an empty (non-nil) byte string.
type Bytes []byte

// MarshalText writes lowercase hex.
func (b Bytes) MarshalText() ([]byte, error) {
	out := make([]byte, hex.EncodedLen(len(b)))
	hex.Encode(out, b)
	return out, nil
}

// UnmarshalText accepts lowercase hex of even length.
func (b *Bytes) UnmarshalText(s []byte) error {
	v, err := unhex(s, -1)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// Address is a 20-byte runner or submitter address (40 lowercase hex digits).
type Address cip11.Address

// String returns lowercase hex.
func (a Address) String() string { return hex.EncodeToString(a[:]) }

// MarshalText writes lowercase hex.
func (a Address) MarshalText() ([]byte, error) { return Bytes(a[:]).MarshalText() }

// UnmarshalText accepts exactly 40 lowercase hex digits.
func (a *Address) UnmarshalText(s []byte) error { return unhexInto(a[:], s) }

// Hash is a 32-byte value: job_id, selection seed or state digest (64
// lowercase hex digits).
type Hash cip11.Hash

// String returns lowercase hex.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// MarshalText writes lowercase hex.
func (h Hash) MarshalText() ([]byte, error) { return Bytes(h[:]).MarshalText() }

// UnmarshalText accepts exactly 64 lowercase hex digits.
func (h *Hash) UnmarshalText(s []byte) error { return unhexInto(h[:], s) }

// Signature is a 48-byte MinSig seed signature (96 lowercase hex digits).
type Signature [48]byte

// MarshalText writes lowercase hex.
func (g Signature) MarshalText() ([]byte, error) { return Bytes(g[:]).MarshalText() }

// UnmarshalText accepts exactly 96 lowercase hex digits.
func (g *Signature) UnmarshalText(s []byte) error { return unhexInto(g[:], s) }

// PublicKey is a 96-byte MinSig threshold public key (192 lowercase hex digits).
type PublicKey [96]byte

// MarshalText writes lowercase hex.
func (k PublicKey) MarshalText() ([]byte, error) { return Bytes(k[:]).MarshalText() }

// UnmarshalText accepts exactly 192 lowercase hex digits.
func (k *PublicKey) UnmarshalText(s []byte) error { return unhexInto(k[:], s) }

func unhexInto(dst, s []byte) error {
	v, err := unhex(s, len(dst))
	if err != nil {
		return err
	}
	copy(dst, v)
	return nil
}

// unhex decodes lowercase hex; want ≥ 0 demands exactly want bytes.
func unhex(s []byte, want int) ([]byte, error) {
	if want >= 0 && len(s) != 2*want {
		return nil, fmt.Errorf("%w: want %d hex digits, got %d", ErrMalformed, 2*want, len(s))
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return nil, fmt.Errorf("%w: byte string is not lowercase hex", ErrMalformed)
		}
	}
	if len(s)%2 != 0 {
		return nil, fmt.Errorf("%w: odd-length hex", ErrMalformed)
	}
	out := make([]byte, len(s)/2)
	if _, err := hex.Decode(out, s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return out, nil
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
	Op              string  `json:"op"`
	Address         Address `json:"address"`
	Health          *Health `json:"health,omitempty"`
	Stake           *U128   `json:"stake,omitempty"`
	DelegatedActive *U128   `json:"delegated_active,omitempty"`
	ReputationX1e9  *U64    `json:"reputation_x1e9,omitempty"`
	LastHeartbeat   *U64    `json:"last_heartbeat,omitempty"`
}

// Submit is one JobSubmit instruction, in transaction order.
type Submit struct {
	JobID         Hash    `json:"job_id"`
	Submitter     Address `json:"submitter"`
	JobKind       uint8   `json:"job_kind"`
	CommitteeSize uint32  `json:"committee_size"`
	TimeoutBlocks U64     `json:"timeout_blocks"`
}

// Result is one verified result (§9.4 write path input): the committee in
// the stored selection order, the consensus-matching runners, and the two
// ineligible sets.
type Result struct {
	JobID             Hash      `json:"job_id"`
	Submitter         Address   `json:"submitter"`
	JobKind           uint8     `json:"job_kind"`
	Committee         []Address `json:"committee"`
	Matching          []Address `json:"matching"`
	RunnersToSlash    []Address `json:"runners_to_slash"`
	RunnersUnrewarded []Address `json:"runners_unrewarded"`
}

// Assignment is one committee the block wrote (§9.2), in processing order.
type Assignment struct {
	JobID            Hash      `json:"job_id"`
	SubmittedAt      U64       `json:"submitted_at"`
	AssignmentHeight U64       `json:"assignment_height"`
	DeadlineBlock    U64       `json:"deadline_block"`
	Mode             uint8     `json:"mode"`
	Branch           string    `json:"branch"`
	Seed             Hash      `json:"seed"`
	Committee        []Address `json:"committee"`
}

// MRUWrite is one §9.4 mru_key write made by the block's verified results.
type MRUWrite struct {
	Submitter  Address `json:"submitter"`
	JobKind    uint8   `json:"job_kind"`
	Runner     Address `json:"runner"`
	SetAtBlock U64     `json:"set_at_block"`
}

// Output is what executing a block produced.
type Output struct {
	Assignments     []Assignment `json:"assignments"`
	PendingWritten  []Bytes      `json:"pending_written"`
	PendingConsumed []Hash       `json:"pending_consumed"`
	MRUWrites       []MRUWrite   `json:"mru_writes"`
	StateDigest     Hash         `json:"state_digest"`
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
	Submits    []Submit `json:"submits"`
	Results    []Result `json:"results"`
	Out        Output   `json:"out"`
}
