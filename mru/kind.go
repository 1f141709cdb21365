package mru

import (
	"errors"
	"fmt"
)

// JobKind is the §9.4 job_kind byte: a CIP-11-owned stable consensus byte
// table, authoritative independent of any Rust enum discriminant or source
// order (the node and runner JobType enums are declared in different orders).
// New variants are appended with the next free byte.
type JobKind uint8

// The §9.4 job_kind table.
const (
	Llm              JobKind = 0x00
	Http             JobKind = 0x01
	Mcp              JobKind = 0x02
	Custom           JobKind = 0x03
	PublishChainRoot JobKind = 0x04
	Agent            JobKind = 0x05
)

// ErrUnknownJobKind: a byte or name outside the §9.4 job_kind table.
var ErrUnknownJobKind = errors.New("mru: unknown job_kind")

// jobKindNames is the table by byte; lookups by name search it, so no
// declaration order anywhere decides a byte.
func jobKindNames() [6]string {
	return [...]string{
		Llm: "Llm", Http: "Http", Mcp: "Mcp", Custom: "Custom",
		PublishChainRoot: "PublishChainRoot", Agent: "Agent",
	}
}

// Valid reports whether k is in the §9.4 table.
func (k JobKind) Valid() bool { return int(k) < len(jobKindNames()) }

// String returns the JobType variant name (§9.4), or "JobKind(0xNN)".
func (k JobKind) String() string {
	if !k.Valid() {
		return fmt.Sprintf("JobKind(0x%02x)", uint8(k))
	}
	return jobKindNames()[k]
}

// ParseJobKind maps a JobType variant name to its §9.4 byte. This is how an
// enum from either stack converts: by variant name, never by discriminant.
func ParseJobKind(name string) (JobKind, error) {
	for b, n := range jobKindNames() {
		if n == name {
			return JobKind(b), nil
		}
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownJobKind, name)
}

// JobKindFromByte checks a job_kind byte against the §9.4 table.
func JobKindFromByte(b byte) (JobKind, error) {
	if k := JobKind(b); k.Valid() {
		return k, nil
	}
	return 0, fmt.Errorf("%w: 0x%02x", ErrUnknownJobKind, b)
}
