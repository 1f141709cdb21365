package mru

import (
	"errors"
	"testing"
)

// frozenJobKinds is the §9.4 table as frozen literals (name ↔ byte). It must
// never change; new variants are appended with the next free byte.
var frozenJobKinds = map[string]byte{
	"Llm": 0x00, "Http": 0x01, "Mcp": 0x02, "Custom": 0x03, "PublishChainRoot": 0x04, "Agent": 0x05,
}

// TestJobKindTablePin is the §9.4 job_kind pin. The spec pins the table
// against both the node and runner JobType enums; this Go implementation has
// neither Rust enum, so it pins the table against frozen name↔byte literals
// and converts from two declared orders by variant name: the node order (the
// table's own order, §9.4) and a runner order with Agent at source index 3
// (§12.6 states only that position; the rest of the runner order is
// illustrative). Any order must yield the same bytes.
func TestJobKindTablePin(t *testing.T) {
	nodeOrder := []string{"Llm", "Http", "Mcp", "Custom", "PublishChainRoot", "Agent"}
	runnerOrder := []string{"Llm", "Http", "Mcp", "Agent", "Custom", "PublishChainRoot"}
	for _, order := range [][]string{nodeOrder, runnerOrder} {
		for discriminant, name := range order {
			k, err := ParseJobKind(name)
			if err != nil {
				t.Fatal(err)
			}
			if byte(k) != frozenJobKinds[name] {
				t.Errorf("%s (source index %d) → 0x%02x, want 0x%02x", name, discriminant, byte(k), frozenJobKinds[name])
			}
		}
	}
	for name, b := range frozenJobKinds {
		k, err := JobKindFromByte(b)
		if err != nil || k.String() != name || !k.Valid() {
			t.Errorf("byte 0x%02x → %v %v, want %s", b, k, err, name)
		}
	}
	consts := map[JobKind]byte{Llm: 0x00, Http: 0x01, Mcp: 0x02, Custom: 0x03, PublishChainRoot: 0x04, Agent: 0x05}
	for k, b := range consts {
		if byte(k) != b {
			t.Errorf("constant %s = 0x%02x, want 0x%02x", k, byte(k), b)
		}
	}
	for b := 0x06; b <= 0xff; b++ {
		if _, err := JobKindFromByte(byte(b)); !errors.Is(err, ErrUnknownJobKind) || JobKind(b).Valid() {
			t.Errorf("byte 0x%02x accepted", b)
		}
	}
	if _, err := ParseJobKind("EthSend"); !errors.Is(err, ErrUnknownJobKind) {
		t.Errorf("EthSend (never landed, §9.4) accepted: %v", err)
	}
	if s := JobKind(0x06).String(); s != "JobKind(0x06)" {
		t.Errorf("String of unknown kind = %q", s)
	}
}
