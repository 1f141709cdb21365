package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/modea"
	"github.com/cip11/cip11/store"
)

// testModeA is the contract of [store.ModeAState] (§8.3 presence_anchor /
// presence_proven_until), for a store that implements it: writes need an
// open batch, reads see the batch, Discard undoes it, Commit keeps it, the
// enumeration is ascending by runner address and merges the batch, and a
// reopened store (if persistent) has the committed records.
func testModeA(t *testing.T, open Opener) {
	s, reopen := open(t)
	ms, ok := s.(store.ModeAState)
	if !ok {
		_ = s.Close()
		t.Skip("the store holds no Mode-A state")
	}
	defer func() { _ = s.Close() }()
	a, b, c := cip11.Address{0x30}, cip11.Address{0x10}, cip11.Address{0x20}
	r1, r2, r3 := modea.Record{Anchor: 5, ProvenUntil: 65}, modea.Record{Anchor: 7, ProvenUntil: 67}, modea.Record{Anchor: 9, ProvenUntil: 69}
	if err := ms.PutPresenceAnchor(a, r1); !errors.Is(err, store.ErrNoBatch) {
		t.Fatalf("PutPresenceAnchor outside a batch: %v, want ErrNoBatch", err)
	}
	list := func(want ...store.ModeAEntry) {
		t.Helper()
		got, err := ms.PresenceAnchors()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("PresenceAnchors = %v, want %v", got, want)
		}
	}
	read := func(addr cip11.Address, want modea.Record, wantOK bool) {
		t.Helper()
		got, ok, err := ms.PresenceAnchor(addr)
		if err != nil || ok != wantOK || got != want {
			t.Fatalf("PresenceAnchor(%s) = %v %v %v, want %v %v", addr, got, ok, err, want, wantOK)
		}
	}
	must(t, "Begin(1)", s.Begin(1))
	must(t, "put a", ms.PutPresenceAnchor(a, r1))
	must(t, "put b", ms.PutPresenceAnchor(b, r2))
	read(a, r1, true)
	list(store.ModeAEntry{Runner: b, Record: r2}, store.ModeAEntry{Runner: a, Record: r1})
	s.Discard()
	read(a, modea.Record{}, false)
	list()
	must(t, "Begin(2)", s.Begin(2))
	must(t, "put a", ms.PutPresenceAnchor(a, r1))
	must(t, "Commit(2)", s.Commit())
	must(t, "Begin(3)", s.Begin(3))
	must(t, "put c", ms.PutPresenceAnchor(c, r2))
	must(t, "overwrite a", ms.PutPresenceAnchor(a, r3))
	list(store.ModeAEntry{Runner: c, Record: r2}, store.ModeAEntry{Runner: a, Record: r3})
	s.Discard()
	read(a, r1, true)
	list(store.ModeAEntry{Runner: a, Record: r1})
	must(t, "Begin(4)", s.Begin(4))
	must(t, "put c", ms.PutPresenceAnchor(c, r2))
	must(t, "overwrite a", ms.PutPresenceAnchor(a, r3))
	must(t, "Commit(4)", s.Commit())
	want := []store.ModeAEntry{{Runner: c, Record: r2}, {Runner: a, Record: r3}}
	list(want...)
	if reopen == nil {
		return
	}
	must(t, "Close", s.Close())
	s = reopen()
	if ms, ok = s.(store.ModeAState); !ok {
		t.Fatal("the reopened store lost ModeAState")
	}
	list(want...)
	read(c, r2, true)
}
