package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/cip11/cip11/internal/dcbor"
)

// Role is a party's role; its byte is the §12.6 `signer_role` table value.
type Role byte

// §12.6 Role bytes.
const (
	RoleRunner    Role = 0x01
	RoleValidator Role = 0x02
)

// AckKind is the §12.6 AckStatus discriminant byte.
type AckKind byte

// §12.6 AckStatus bytes.
const (
	AckAccepted  AckKind = 0x00
	AckDuplicate AckKind = 0x01
	AckReject    AckKind = 0x02
)

// RejectReason is the §12.6 RejectReason byte carried by AckStatus::Reject.
type RejectReason byte

// §12.6 RejectReason bytes. RejectNotApplicable (0xFF) is reserved for the
// JobAck preimage when the status is not Reject; it never appears on the wire.
const (
	RejectAtCapacity             RejectReason = 0x00
	RejectMissingEntitlement     RejectReason = 0x01
	RejectMissingCapability      RejectReason = 0x02
	RejectUnverifiableAssignment RejectReason = 0x03
	RejectOther                  RejectReason = 0x04
	RejectNotApplicable          RejectReason = 0xFF
)

// CancelReason is the §12.6 CancelReason byte (§10.5).
type CancelReason byte

// §12.6 CancelReason bytes.
const (
	CancelReassigned CancelReason = 0x00
	CancelExpired    CancelReason = 0x01
	CancelFailed     CancelReason = 0x02
)

// GoodbyeReason is the §12.6 GoodbyeReason byte (§12.5).
type GoodbyeReason byte

// §12.6 GoodbyeReason bytes.
const (
	GoodbyeUnsupportedVersion GoodbyeReason = 0x00
	GoodbyeWrongChain         GoodbyeReason = 0x01
	GoodbyeAuthFailed         GoodbyeReason = 0x02
	GoodbyeNotInSubset        GoodbyeReason = 0x03
	GoodbyeOverlapExpired     GoodbyeReason = 0x04
	GoodbyeRateLimited        GoodbyeReason = 0x05
	GoodbyeProtocolError      GoodbyeReason = 0x06
	GoodbyeDraining           GoodbyeReason = 0x07
	GoodbyeShutdown           GoodbyeReason = 0x08
)

// Variant names indexed by byte; a byte beyond the table (or an empty
// entry) is unknown. Functions, not globals: the package holds no state.
func roleNames() []string { return []string{1: "Runner", 2: "Validator"} }
func ackNames() []string  { return []string{"Accepted", "Duplicate", "Reject"} }
func rejectNames() []string {
	return []string{"AtCapacity", "MissingEntitlement", "MissingCapability", "UnverifiableAssignment", "Other"}
}
func cancelNames() []string { return []string{"Reassigned", "Expired", "Failed"} }
func goodbyeNames() []string {
	return []string{"UnsupportedVersion", "WrongChain", "AuthFailed", "NotInSubset", "OverlapExpired", "RateLimited", "ProtocolError", "Draining", "Shutdown"}
}

func enumName(names []string, b byte) string {
	if int(b) < len(names) && names[b] != "" {
		return names[b]
	}
	return fmt.Sprintf("0x%02x", b)
}

func enumParse(names []string, kind, s string) (byte, error) {
	for i, n := range names {
		if n != "" && n == s {
			return byte(i), nil
		}
	}
	return 0, fmt.Errorf("%w: %s %q", ErrEnumUnknown, kind, s)
}

// enumCheck accepts v in [lo, hi] — every §12.6 table is contiguous.
func enumCheck(kind string, v, lo, hi uint64) (byte, error) {
	if v < lo || v > hi {
		return 0, fmt.Errorf("%w: %s byte %d", ErrEnumUnknown, kind, v)
	}
	return byte(v), nil
}

// Valid reports whether r is a §12.6 Role.
func (r Role) Valid() bool { return r == RoleRunner || r == RoleValidator }

// Scheme returns the signature scheme the role signs with (§12.6: runner →
// secp256k1, validator → Ed25519).
func (r Role) Scheme() Scheme { return Scheme(r) }

// Peer returns the opposite role. See §12.6.
func (r Role) Peer() Role { return 3 - r }

// String returns the variant name or byte (§12.6).
func (r Role) String() string { return enumName(roleNames(), byte(r)) }

// String returns the variant name or byte (§12.6).
func (k AckKind) String() string { return enumName(ackNames(), byte(k)) }

// String returns the variant name or byte (§12.6).
func (r RejectReason) String() string { return enumName(rejectNames(), byte(r)) }

// String returns the variant name or byte (§12.6).
func (r CancelReason) String() string { return enumName(cancelNames(), byte(r)) }

// String returns the variant name or byte (§12.6).
func (r GoodbyeReason) String() string { return enumName(goodbyeNames(), byte(r)) }

// MarshalText writes the variant name (vector files, D18). See §12.6.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// MarshalText writes the variant name (vector files, D18). See §12.6.
func (r CancelReason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// MarshalText writes the variant name (vector files, D18). See §12.5.
func (r GoodbyeReason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText parses a variant name (vector files, D18). See §12.6.
func (r *Role) UnmarshalText(b []byte) error {
	v, err := enumParse(roleNames(), "Role", string(b))
	*r = Role(v)
	return err
}

// UnmarshalText parses a variant name (vector files, D18). See §12.6.
func (r *CancelReason) UnmarshalText(b []byte) error {
	v, err := enumParse(cancelNames(), "CancelReason", string(b))
	*r = CancelReason(v)
	return err
}

// UnmarshalText parses a variant name (vector files, D18). See §12.5.
func (r *GoodbyeReason) UnmarshalText(b []byte) error {
	v, err := enumParse(goodbyeNames(), "GoodbyeReason", string(b))
	*r = GoodbyeReason(v)
	return err
}

// AckStatus is §10.2 `enum AckStatus { Accepted, Duplicate, Reject(RejectReason) }`.
// Reason is meaningful only when Kind is AckReject.
type AckStatus struct {
	Kind   AckKind
	Reason RejectReason
}

// Accepted returns AckStatus::Accepted. See §12.6.
func Accepted() AckStatus { return AckStatus{Kind: AckAccepted} }

// Duplicate returns AckStatus::Duplicate. See §12.6.
func Duplicate() AckStatus { return AckStatus{Kind: AckDuplicate} }

// Reject returns AckStatus::Reject(r). See §12.6.
func Reject(r RejectReason) AckStatus { return AckStatus{Kind: AckReject, Reason: r} }

// PreimageBytes returns the §12.6 JobAck preimage pair
// (ack_status_byte, reject_reason_byte), the latter 0xFF unless Reject.
func (s AckStatus) PreimageBytes() (status, reason byte) {
	if s.Kind == AckReject {
		return byte(AckReject), byte(s.Reason)
	}
	return byte(s.Kind), byte(RejectNotApplicable)
}

func (s AckStatus) valid() bool {
	switch s.Kind {
	case AckAccepted, AckDuplicate:
		return s.Reason == 0
	case AckReject:
		return s.Reason <= RejectOther
	}
	return false
}

// String returns the variant name or byte (§12.6).
func (s AckStatus) String() string {
	if s.Kind == AckReject {
		return "Reject(" + s.Reason.String() + ")"
	}
	return s.Kind.String()
}

// encode returns the D8 item of s: a unit variant is its byte as an
// unsigned int, Reject(r) is the array [2, r].
func (s AckStatus) encode(c dcbor.Codec) (dcbor.Raw, error) {
	if !s.valid() {
		return nil, fmt.Errorf("%w: AckStatus %d/%d", ErrEnumUnknown, s.Kind, s.Reason)
	}
	if s.Kind == AckReject {
		return c.Marshal([2]uint64{uint64(AckReject), uint64(s.Reason)})
	}
	return c.Marshal(uint64(s.Kind))
}

// decodeAckStatus strictly decodes the D8 item of an AckStatus.
func decodeAckStatus(c dcbor.Codec, raw dcbor.Raw) (AckStatus, error) {
	if len(raw) > 0 && raw[0]>>5 == 4 { // CBOR major type 4: a variant with payload
		var a []uint64
		if err := c.Unmarshal(raw, &a); err != nil {
			return AckStatus{}, err
		}
		switch {
		case len(a) != 2:
			return AckStatus{}, fmt.Errorf("%w: AckStatus array of %d", ErrEnumUnknown, len(a))
		case a[0] != uint64(AckReject):
			return AckStatus{}, fmt.Errorf("%w: AckStatus %d carries a payload", ErrEnumUnknown, a[0])
		}
		r, err := enumCheck("RejectReason", a[1], 0, uint64(RejectOther))
		return Reject(RejectReason(r)), err
	}
	var k uint64
	if err := c.Unmarshal(raw, &k); err != nil {
		return AckStatus{}, err
	}
	if k != uint64(AckAccepted) && k != uint64(AckDuplicate) {
		return AckStatus{}, fmt.Errorf("%w: AckStatus unit variant %d", ErrEnumUnknown, k)
	}
	return AckStatus{Kind: AckKind(k)}, nil
}

// MarshalJSON writes "Accepted", "Duplicate" or {"Reject": "<reason>"} (D18). See §12.6.
func (s AckStatus) MarshalJSON() ([]byte, error) {
	if s.Kind == AckReject {
		return json.Marshal(map[string]string{"Reject": s.Reason.String()})
	}
	return json.Marshal(s.Kind.String())
}

// UnmarshalJSON reads the MarshalJSON form. See §12.6.
func (s *AckStatus) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		r, ok := m["Reject"]
		if !ok || len(m) != 1 {
			return fmt.Errorf("%w: AckStatus %s", ErrEnumUnknown, b)
		}
		v, err := enumParse(rejectNames(), "RejectReason", r)
		*s = Reject(RejectReason(v))
		return err
	}
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return err
	}
	v, err := enumParse(ackNames()[:2], "AckStatus", name)
	*s = AckStatus{Kind: AckKind(v)}
	return err
}
