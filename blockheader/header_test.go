package blockheader

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cip11/cip11/internal/dcbor"
	"github.com/cip11/cip11/seed"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sig(b byte) seed.Signature {
	var s seed.Signature
	for i := range s {
		s[i] = b
	}
	return s
}

// Hand-assembled encodings (§12.6, D7, D11; SPEC-NOTES H1–H3), written from
// the layout in doc.go, not produced by Encode.
const (
	magicHex = "43313148" // "C11H"
	// genesisHex is block 1: round (0, 1), no beacon, finalized 0, no
	// presence field, no consumed seeds.
	genesisHex = magicHex + "a6 0001 01a2000001 01 02f6 0300 04f6 0580"
	sigAA      = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	sigBB      = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	// block2Hex is block 2: round (0, 2), beacon of (0, 1) signed 0xaa…,
	// finalized 1, presence 01 00 (empty bitmap), one consumed seed of
	// round (0, 1) signed 0xbb….
	block2Hex = magicHex + "a6 0001 01a2000001 02 02a3000001010258 30" + sigAA +
		"0301 04420100 0581a3000001010258 30" + sigBB
)

func genesis() *Header {
	return &Header{Version: 1, Round: seed.Round{Epoch: 0, View: 1}, ConsumedSeeds: seed.ConsumedSeedsV1{}}
}

func block2() *Header {
	return &Header{
		Version:       1,
		Round:         seed.Round{Epoch: 0, View: 2},
		ParentBeacon:  &seed.Beacon{Round: seed.Round{Epoch: 0, View: 1}, Signature: sig(0xaa)},
		Finalized:     1,
		Presence:      []byte{0x01, 0x00},
		ConsumedSeeds: seed.ConsumedSeedsV1{{Round: seed.Round{Epoch: 0, View: 1}, Signature: sig(0xbb)}},
	}
}

// TestGolden pins the D32 layout against hand-assembled bytes, both ways.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    *Header
		hex  string
	}{{"genesis", genesis(), genesisHex}, {"block2", block2(), block2Hex}} {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			got, err := Encode(tc.h)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("Encode = %x, %v\nwant     %x", got, err, want)
			}
			dec, err := Decode(want)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(dec, tc.h) {
				t.Fatalf("Decode = %+v, want %+v", dec, tc.h)
			}
			if err := Check(dec, tc.h.Round.View); err != nil {
				t.Fatalf("Check: %v", err)
			}
		})
	}
}

// TestRoundTrip: decode→encode is the identity, including the three
// spellings of the presence field (null, empty, bytes) and a header at the
// u64 limits.
func TestRoundTrip(t *testing.T) {
	max := ^uint64(0)
	cases := []*Header{genesis(), block2(),
		{Version: 1, Round: seed.Round{Epoch: 3, View: 9}, Presence: []byte{}, Finalized: 8,
			ParentBeacon: &seed.Beacon{Round: seed.Round{Epoch: 2, View: 8}}},
		{Version: 1, Round: seed.Round{Epoch: max, View: max}, Finalized: max - 1,
			ParentBeacon:  &seed.Beacon{Round: seed.Round{Epoch: max, View: max - 1}, Signature: sig(0xff)},
			Presence:      bytes.Repeat([]byte{0xff}, MaxPresenceBytes),
			ConsumedSeeds: seed.ConsumedSeedsV1{{Round: seed.Round{Epoch: 1, View: 1}}, {Round: seed.Round{Epoch: max, View: 0}}}},
	}
	for i, h := range cases {
		b, err := Encode(h)
		if err != nil {
			t.Fatalf("#%d: Encode: %v", i, err)
		}
		d, err := Decode(b)
		if err != nil {
			t.Fatalf("#%d: Decode: %v", i, err)
		}
		if (d.Presence == nil) != (h.Presence == nil) || !bytes.Equal(d.Presence, h.Presence) {
			t.Fatalf("#%d: presence %x (nil %v), want %x (nil %v)", i, d.Presence, d.Presence == nil, h.Presence, h.Presence == nil)
		}
		again, err := Encode(d)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("#%d: decode→encode differs: %v", i, err)
		}
		if err := Check(d, h.Round.View); err != nil {
			t.Fatalf("#%d: Check: %v", i, err)
		}
	}
}

// TestEncodeNilSeedsIsEmptyArray: a nil ConsumedSeeds is the empty list
// (D11: 0x80), and decodes as an empty, non-nil list.
func TestEncodeNilSeedsIsEmptyArray(t *testing.T) {
	h := genesis()
	h.ConsumedSeeds = nil
	b, err := Encode(h)
	if err != nil || !bytes.Equal(b, unhex(t, genesisHex)) {
		t.Fatalf("Encode = %x, %v", b, err)
	}
}

// replace returns s with old replaced once, failing if old is absent.
func replace(t *testing.T, s, old, new string) string {
	t.Helper()
	s = strings.ReplaceAll(s, " ", "")
	if !strings.Contains(s, old) {
		t.Fatalf("%q not in %q", old, s)
	}
	return strings.Replace(s, old, new, 1)
}

// TestDecodeDefects: one input per defect, each failing with exactly its
// sentinel (D9; SPEC-NOTES H1–H3).
func TestDecodeDefects(t *testing.T) {
	g := strings.ReplaceAll(genesisHex, " ", "")
	b2 := strings.ReplaceAll(block2Hex, " ", "")
	longPresence := "045a" + "00040001" + strings.Repeat("01", MaxPresenceBytes+1)
	for _, tc := range []struct {
		name, in string
		want     error
	}{
		{"empty", "", ErrNotHeader},
		{"short magic", "433131", ErrNotHeader},
		{"devnet transaction magic", "43313154" + g[8:], ErrNotHeader},
		{"lowercase magic", "63313168" + g[8:], ErrNotHeader},
		{"magic only", magicHex, dcbor.ErrTruncated},
		{"too large", magicHex + strings.Repeat("00", MaxHeaderBytes), ErrHeaderTooLarge},
		{"version 2", replace(t, g, "a60001", "a60002"), ErrHeaderVersion},
		{"version 0", replace(t, g, "a60001", "a60000"), ErrHeaderVersion},
		{"version above u8", replace(t, g, "a60001", "a600190100"), dcbor.ErrIntRange},
		{"presence too long", replace(t, g, "04f6", longPresence), ErrPresenceTooLong},
		{"trailing byte", g + "00", dcbor.ErrTrailingBytes},
		{"non-shortest finalized", replace(t, g, "0300", "031800"), dcbor.ErrNonShortestInt},
		{"non-shortest view", replace(t, g, "a2000001", "a200001801"), dcbor.ErrNonShortestInt},
		{"missing consumed seeds", magicHex + "a5" + replace(t, g, "0580", "")[10:], dcbor.ErrMissingKey},
		{"unknown key 6", replace(t, g, "a6", "a7") + "0600", dcbor.ErrUnknownKey},
		{"keys unsorted", magicHex + "a6 01a200000101 0001 02f6 0300 04f6 0580", dcbor.ErrKeyOrder},
		{"indefinite map", replace(t, g, "a6", "bf") + "ff", dcbor.ErrIndefiniteLength},
		{"tag on header", replace(t, g, "a6", "c0a6"), dcbor.ErrTag},
		{"null consumed seeds", replace(t, g, "0580", "05f6"), dcbor.ErrUnexpectedType},
		{"null round", replace(t, g, "01a200000101", "01f6"), dcbor.ErrUnexpectedType},
		{"text presence", replace(t, g, "04f6", "0462 0100"), dcbor.ErrUnexpectedType},
		{"beacon signature 47 bytes", replace(t, b2, "5830"+sigAA, "582f"+sigAA[2:]), dcbor.ErrByteLength},
		{"truncated", g[:len(g)-2], dcbor.ErrTruncated},
		{"consumed seeds unsorted", replace(t, b2, "0581", "0582a30000010202 5830"+sigBB), seed.ErrConsumedSeedsUnsorted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := unhex(t, tc.in)
			h, err := Decode(in)
			if h != nil || !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %v, %v; want %v", h, err, tc.want)
			}
			if n := countSentinels(err); n != 1 {
				t.Fatalf("%v wraps %d sentinels", err, n)
			}
		})
	}
}

// TestEncodeRefuses: Encode refuses what Decode would refuse.
func TestEncodeRefuses(t *testing.T) {
	big := make(seed.ConsumedSeedsV1, MaxHeaderBytes/50) // an entry is 58 bytes
	for i := range big {
		big[i].Round = seed.Round{Epoch: 0, View: uint64(i)}
	}
	for _, tc := range []struct {
		name string
		mut  func(*Header) *Header
		want error
	}{
		{"nil", func(*Header) *Header { return nil }, ErrNilHeader},
		{"version 0", func(h *Header) *Header { h.Version = 0; return h }, ErrHeaderVersion},
		{"presence too long", func(h *Header) *Header { h.Presence = make([]byte, MaxPresenceBytes+1); return h }, ErrPresenceTooLong},
		{"seeds unsorted", func(h *Header) *Header {
			h.ConsumedSeeds = seed.ConsumedSeedsV1{{Round: seed.Round{View: 2}}, {Round: seed.Round{View: 1}}}
			return h
		}, seed.ErrConsumedSeedsUnsorted},
		{"seeds duplicate", func(h *Header) *Header {
			h.ConsumedSeeds = seed.ConsumedSeedsV1{{Round: seed.Round{View: 1}}, {Round: seed.Round{View: 1}}}
			return h
		}, seed.ErrConsumedSeedsDuplicateRound},
		{"too large", func(h *Header) *Header { h.ConsumedSeeds = big; return h }, ErrHeaderTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Encode(tc.mut(block2()))
			if b != nil || !errors.Is(err, tc.want) {
				t.Fatalf("Encode = %d bytes, %v; want %v", len(b), err, tc.want)
			}
		})
	}
}

// TestCheck: each placement rule fails with its own sentinel (D22, D30–D32).
func TestCheck(t *testing.T) {
	at := func(height uint64) *Header {
		if height == 1 {
			return genesis()
		}
		h := block2()
		h.Round.View, h.ParentBeacon.Round.View, h.Finalized = height, height-1, height-1
		return h
	}
	for _, tc := range []struct {
		name   string
		height uint64
		mut    func(*Header)
		want   error
	}{
		{"genesis ok", 1, func(*Header) {}, nil},
		{"block 2 ok", 2, func(*Header) {}, nil},
		{"epoch change ok", 9, func(h *Header) { h.Round.Epoch = 1 }, nil},
		{"seed of the parent round ok", 9, func(h *Header) { h.ConsumedSeeds[0].Round.View = 8 }, nil},
		{"version 2", 2, func(h *Header) { h.Version = 2 }, ErrHeaderVersion},
		{"height 0", 0, func(*Header) {}, ErrZeroHeight},
		{"view not height", 3, func(h *Header) { h.Round.View = 4 }, ErrRoundView},
		{"missing beacon above 1", 2, func(h *Header) { h.ParentBeacon = nil }, ErrBeaconMissing},
		{"beacon at 1", 1, func(h *Header) { h.ParentBeacon = &seed.Beacon{} }, ErrBeaconUnexpected},
		{"beacon view not h-1", 5, func(h *Header) { h.ParentBeacon.Round.View = 3 }, ErrBeaconRound},
		{"beacon epoch after round", 5, func(h *Header) { h.ParentBeacon.Round.Epoch = 1 }, ErrBeaconRound},
		{"finalized not h-1", 5, func(h *Header) { h.Finalized = 3 }, ErrFinalized},
		{"finalized 1 at genesis", 1, func(h *Header) { h.Finalized = 1 }, ErrFinalized},
		{"finalized h", 5, func(h *Header) { h.Finalized = 5 }, ErrFinalized},
		{"seed of the proposal round", 5, func(h *Header) { h.ConsumedSeeds[0].Round.View = 5 }, ErrSeedRound},
		{"seed of a later epoch", 5, func(h *Header) { h.ConsumedSeeds[0].Round = seed.Round{Epoch: 1, View: 0} }, ErrSeedRound},
		{"seeds unsorted", 5, func(h *Header) {
			h.ConsumedSeeds = seed.ConsumedSeedsV1{{Round: seed.Round{View: 2}}, {Round: seed.Round{View: 1}}}
		}, seed.ErrConsumedSeedsUnsorted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := at(max(tc.height, 1))
			tc.mut(h)
			err := Check(h, tc.height)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.want) || countSentinels(err) != 1 {
				t.Fatalf("Check = %v, want %v", err, tc.want)
			}
		})
	}
	if err := Check(nil, 1); !errors.Is(err, ErrNilHeader) {
		t.Fatalf("Check(nil) = %v", err)
	}
}

func TestFinalizedHeight(t *testing.T) {
	if genesis().FinalizedHeight() != nil || (*Header)(nil).FinalizedHeight() != nil {
		t.Fatal("finalized 0 must be none (nil)")
	}
	h := block2()
	f := h.FinalizedHeight()
	if f == nil || *f != 1 {
		t.Fatalf("FinalizedHeight = %v", f)
	}
	*f = 7
	if h.Finalized != 1 {
		t.Fatal("FinalizedHeight aliases the header")
	}
}

// sentinels is every error Decode, Encode, Check and CheckSchedule may wrap.
func sentinels() []error {
	return []error{ErrNotHeader, ErrHeaderTooLarge, ErrHeaderVersion, ErrPresenceTooLong, ErrNilHeader,
		ErrZeroHeight, ErrRoundView, ErrBeaconMissing, ErrBeaconUnexpected, ErrBeaconRound, ErrFinalized, ErrSeedRound,
		ErrHeightUnscheduled, ErrRoundEpoch, ErrBeaconEpoch, seed.ErrInvalidSchedule, seed.ErrRoundOutsideSchedule,
		seed.ErrConsumedSeedsUnsorted, seed.ErrConsumedSeedsDuplicateRound,
		dcbor.ErrTruncated, dcbor.ErrTrailingBytes, dcbor.ErrMalformed, dcbor.ErrNonShortestInt, dcbor.ErrIndefiniteLength,
		dcbor.ErrTag, dcbor.ErrUnexpectedType, dcbor.ErrIntRange, dcbor.ErrInvalidUTF8, dcbor.ErrKeyOrder,
		dcbor.ErrDuplicateKey, dcbor.ErrUnknownKey, dcbor.ErrMissingKey, dcbor.ErrByteLength, dcbor.ErrNotCanonical}
}

func countSentinels(err error) int {
	n := 0
	for _, s := range sentinels() {
		if errors.Is(err, s) {
			n++
		}
	}
	return n
}

// TestDecodeCopies: the decoded header owns its bytes; reusing the input
// buffer (CometBFT's tx slice) cannot change it.
func TestDecodeCopies(t *testing.T) {
	in := unhex(t, block2Hex)
	h, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 0
	}
	if !reflect.DeepEqual(h, block2()) {
		t.Fatalf("header changed with its input: %+v", h)
	}
}
