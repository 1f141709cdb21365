package seed

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/cip11/cip11"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustHash(t testing.TB, s string) cip11.Hash {
	var h cip11.Hash
	copy(h[:], mustHex(t, s))
	return h
}

// Frozen values computed by hand with an independent pure-Python Keccak-256
// (original 0x01 padding, checked against keccak256("") and ("abc")) over
// the §9.2 preimages written out byte by byte.
const (
	frozenSig    = "800102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f"
	frozenBeacon = "d0a28bd9e5e8cde299cf9575b6413bbac92f479bef58121557283c3be89e1ca7" // Round(7, 42), scheme 0x01
	frozenJobID  = "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
	frozenSel0   = "c80a6b3deb4fd625bb9cf981e00d69101d375728856f79aa2d0e44373386af62" // mode 0x00, submitted_at 1234567
	frozenSel1   = "f8530fc7b89aaf9324c6d1979fbb83ba1803ecd55cd87ff53b04c8b77bc4289f" // mode 0x01
)

// TestBeaconHashV1Frozen pins beacon_hash_v1 (§9.2) on all three paths.
func TestBeaconHashV1Frozen(t *testing.T) {
	sig := mustHex(t, frozenSig)
	r := Round{Epoch: 7, View: 42}
	got, err := BeaconHashV1(r, SchemeMinSig, sig)
	if err != nil || got.String() != frozenBeacon {
		t.Fatalf("BeaconHashV1 = %v, %v; want %s", got, err, frozenBeacon)
	}
	s, _ := SignatureFromBytes(sig)
	var h Hasher
	if got := h.BeaconHash(r, &s); got.String() != frozenBeacon {
		t.Fatalf("Hasher.BeaconHash = %v", got)
	}
	if got := (Beacon{r, s}).CanonicalSeedBytes(); got.String() != frozenBeacon {
		t.Fatalf("Beacon.CanonicalSeedBytes = %v", got)
	}
}

// TestSelectionSeedV3Frozen pins the v3 preimage and its mode byte (§9.2).
func TestSelectionSeedV3Frozen(t *testing.T) {
	csb, job := mustHash(t, frozenBeacon), mustHash(t, frozenJobID)
	var h Hasher
	for _, tc := range []struct {
		mode Mode
		want string
	}{{ModeImmediate, frozenSel0}, {ModeDelayed, frozenSel1}} {
		got, err := SelectionSeedV3(tc.mode, csb, job, 1234567)
		if err != nil || got.String() != tc.want {
			t.Errorf("mode %d: %v, %v; want %s", tc.mode, got, err, tc.want)
		}
		got2, err := h.SelectionSeed(tc.mode, &csb, &job, 1234567)
		if err != nil || got2 != got {
			t.Errorf("mode %d: Hasher disagrees: %v, %v", tc.mode, got2, err)
		}
	}
	for _, m := range []Mode{2, 0x80, 0xff} {
		if _, err := SelectionSeedV3(m, csb, job, 1); !errors.Is(err, ErrUnknownSelectionMode) {
			t.Errorf("mode %d: err %v", m, err)
		}
	}
}

func TestBeaconHashV1Errors(t *testing.T) {
	for _, tc := range []struct {
		scheme SchemeID
		n      int
		want   error
	}{
		{SchemeMinSig, 47, ErrSeedSignatureLength},
		{SchemeMinSig, 49, ErrSeedSignatureLength},
		{SchemeMinSig, 96, ErrSeedSignatureLength},
		{SchemeMinSig, 0, ErrSeedSignatureLength},
		{SchemeMinPk, 48, ErrSeedSignatureLength},
		{SchemeMinPk, 96, nil},
		{0, 48, ErrUnknownSeedScheme},
		{3, 48, ErrUnknownSeedScheme},
		{0xff, 96, ErrUnknownSeedScheme},
	} {
		_, err := BeaconHashV1(Round{}, tc.scheme, make([]byte, tc.n))
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("scheme %d len %d: err %v, want %v", tc.scheme, tc.n, err, tc.want)
		}
	}
	if _, err := SignatureFromBytes(make([]byte, 47)); !errors.Is(err, ErrSeedSignatureLength) {
		t.Errorf("SignatureFromBytes(47): %v", err)
	}
}

func TestModeFor(t *testing.T) {
	if m, err := ModeFor(1); m != ModeImmediate || err != nil {
		t.Errorf("M=1: %v %v", m, err)
	}
	if m, err := ModeFor(5); m != ModeDelayed || err != nil {
		t.Errorf("M=5: %v %v", m, err)
	}
	if _, err := ModeFor(0); !errors.Is(err, ErrCommitteeSize) {
		t.Errorf("M=0: %v", err)
	}
}

// TestGenesisBeacon covers §9.2 "For M == 1 genesis bootstrapping".
func TestGenesisBeacon(t *testing.T) {
	parent := &Beacon{Round: Round{3, 9}}
	genesis := &Beacon{Round: Round{0, 0}, Signature: Signature{0xaa}}
	if b, err := ParentBeacon(parent, genesis); err != nil || b != *parent {
		t.Errorf("parent available: %v %v", b, err)
	}
	if b, err := ParentBeacon(nil, genesis); err != nil || b != *genesis {
		t.Errorf("parent predates first certified round: %v %v", b, err)
	}
	if _, err := ParentBeacon(nil, nil); !errors.Is(err, ErrNoGenesisBeacon) {
		t.Errorf("no genesis: %v", err)
	}
	if err := CheckGenesisBeacon(true, nil); !errors.Is(err, ErrNoGenesisBeacon) {
		t.Errorf("active without genesis: %v", err)
	}
	if CheckGenesisBeacon(true, genesis) != nil || CheckGenesisBeacon(false, nil) != nil {
		t.Error("valid configurations rejected")
	}
}

func TestHasherAllocs(t *testing.T) {
	var h Hasher
	csb, job := mustHash(t, frozenBeacon), mustHash(t, frozenJobID)
	var s Signature
	h.BeaconHash(Round{}, &s) // first use creates the Keccak state
	n := testing.AllocsPerRun(100, func() {
		c := h.BeaconHash(Round{1, 2}, &s)
		_, _ = h.SelectionSeed(ModeDelayed, &c, &job, 7)
		_, _ = h.SelectionSeed(ModeImmediate, &csb, &job, 7)
	})
	if n != 0 {
		t.Fatalf("%v allocations per run, want 0", n)
	}
}
