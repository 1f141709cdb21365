package store

import (
	"bytes"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/modea"
)

// ModeAEntry is one stored §8.3 Mode-A record: a runner's presence_anchor
// and presence_proven_until.
type ModeAEntry struct {
	Runner cip11.Address
	Record modea.Record
}

// ModeAState is the §8.3 Mode-A chain state a [Store] may also hold: one
// [modea.Record] per runner that ever had a certificate accepted. Reads
// include the open batch's writes; PutPresenceAnchor writes into the open
// batch (outside one it wraps ErrNoBatch) and is undone by Discard. The
// block executor (package blockexec) executes SubmitPresenceCertificate
// only over a store that implements it; [Mem] and adapters/pebble do.
type ModeAState interface {
	modea.Store
	// PresenceAnchors returns every record, ascending by runner address
	// (the state digest's order, docs/chainlog.md).
	PresenceAnchors() ([]ModeAEntry, error)
}

var _ ModeAState = (*Mem)(nil)

type modeAUndo struct {
	runner cip11.Address
	prev   modea.Record
	had    bool
}

// PresenceAnchor implements [modea.Reader] (§8.3).
func (m *Mem) PresenceAnchor(runner cip11.Address) (modea.Record, bool, error) {
	if m.closed {
		return modea.Record{}, false, ErrClosed
	}
	r, ok := m.anchors[runner]
	return r, ok, nil
}

// PutPresenceAnchor implements [modea.Store] (§8.3).
func (m *Mem) PutPresenceAnchor(runner cip11.Address, rec modea.Record) error {
	if err := m.writable(); err != nil {
		return err
	}
	if m.anchors == nil {
		m.anchors = make(map[cip11.Address]modea.Record)
	}
	prev, had := m.anchors[runner]
	m.anchors[runner] = rec
	m.anchorUndo = append(m.anchorUndo, modeAUndo{runner: runner, prev: prev, had: had})
	return nil
}

// PresenceAnchors implements [ModeAState]. The slice is the caller's.
func (m *Mem) PresenceAnchors() ([]ModeAEntry, error) {
	if m.closed {
		return nil, ErrClosed
	}
	out := make([]ModeAEntry, 0, len(m.anchors))
	for a, r := range m.anchors {
		out = append(out, ModeAEntry{Runner: a, Record: r})
	}
	slices.SortFunc(out, func(a, b ModeAEntry) int { return bytes.Compare(a.Runner[:], b.Runner[:]) })
	return out, nil
}

// discardAnchors undoes the open batch's Mode-A writes, newest first.
func (m *Mem) discardAnchors() {
	for i := len(m.anchorUndo) - 1; i >= 0; i-- {
		u := m.anchorUndo[i]
		if u.had {
			m.anchors[u.runner] = u.prev
		} else {
			delete(m.anchors, u.runner)
		}
	}
	m.anchorUndo = m.anchorUndo[:0]
}
