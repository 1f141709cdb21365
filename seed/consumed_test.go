package seed

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/cip11/cip11/internal/dcbor"
)

func sigOf(b byte) Signature {
	var s Signature
	for i := range s {
		s[i] = b
	}
	return s
}

var (
	sigA = strings.Repeat("11", 48)
	sigB = strings.Repeat("22", 48)
	// entryA/entryB are hand-written D11 entries: {0: 1, 1: 2, 2: h'11…'} and
	// {0: 1, 1: 300, 2: h'22…'} (300 → 19 012c).
	entryA = "a3" + "0001" + "0102" + "025830" + sigA
	entryB = "a3" + "0001" + "0119012c" + "025830" + sigB
)

// TestConsumedSeedsEncodeFrozen pins the D11 layout against hand-written CBOR.
func TestConsumedSeedsEncodeFrozen(t *testing.T) {
	for _, tc := range []struct {
		c    ConsumedSeedsV1
		want string
	}{
		{nil, "80"},
		{ConsumedSeedsV1{}, "80"},
		{ConsumedSeedsV1{{Round{1, 2}, sigOf(0x11)}, {Round{1, 300}, sigOf(0x22)}}, "82" + entryA + entryB},
		{ConsumedSeedsV1{{Round{math.MaxUint64, 24}, sigOf(0x11)}}, "81a3001bffffffffffffffff011818025830" + sigA},
	} {
		got, err := tc.c.Encode()
		if err != nil || !bytes.Equal(got, mustHex(t, tc.want)) {
			t.Errorf("Encode(%v) = %x, %v; want %s", tc.c, got, err, tc.want)
			continue
		}
		dec, err := DecodeConsumedSeedsV1(got)
		if err != nil || len(dec) != len(tc.c) {
			t.Errorf("Decode(%x) = %v, %v", got, dec, err)
		}
		for i := range dec {
			if dec[i] != tc.c[i] {
				t.Errorf("entry %d: %v != %v", i, dec[i], tc.c[i])
			}
		}
	}
}

func TestConsumedSeedsEncodeErrors(t *testing.T) {
	a, b := ConsumedSeed{Round{1, 2}, sigOf(1)}, ConsumedSeed{Round{1, 300}, sigOf(2)}
	if _, err := (ConsumedSeedsV1{b, a}).Encode(); !errors.Is(err, ErrConsumedSeedsUnsorted) {
		t.Errorf("unsorted: %v", err)
	}
	if _, err := (ConsumedSeedsV1{a, a}).Encode(); !errors.Is(err, ErrConsumedSeedsDuplicateRound) {
		t.Errorf("duplicate: %v", err)
	}
	c, err := BuildConsumedSeeds([]ConsumedSeed{b, a, b})
	if err != nil || len(c) != 2 || c[0] != a || c[1] != b {
		t.Errorf("BuildConsumedSeeds = %v, %v", c, err)
	}
	b2 := b
	b2.Signature[0] ^= 1
	if _, err := BuildConsumedSeeds([]ConsumedSeed{b, a, b2}); !errors.Is(err, ErrConsumedSeedsConflict) {
		t.Errorf("conflict: %v", err)
	}
}

// TestConsumedSeedsDecodeErrors: every malformation has its own sentinel
// (§12.6 deterministic profile of package internal/dcbor, DECISIONS D9).
func TestConsumedSeedsDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     error
	}{
		{"empty input", "", dcbor.ErrTruncated},
		{"non-canonical array length", "9800", dcbor.ErrNonShortestInt},
		{"non-canonical epoch", "81a3001801" + "0102025830" + sigA, dcbor.ErrNonShortestInt},
		{"non-canonical view", "81a300010119002a025830" + sigA, dcbor.ErrNonShortestInt},
		{"non-canonical sig length", "81a3000101020259003" + "0" + sigA, dcbor.ErrNonShortestInt},
		{"indefinite array", "9f" + entryA + "ff", dcbor.ErrIndefiniteLength},
		{"indefinite map", "81bf00010102025830" + sigA + "ff", dcbor.ErrIndefiniteLength},
		{"indefinite bytes", "81a30001010202" + "5f5830" + sigA + "ff", dcbor.ErrIndefiniteLength},
		{"trailing bytes", "80" + "00", dcbor.ErrTrailingBytes},
		{"trailing after entry", "81" + entryA + "80", dcbor.ErrTrailingBytes},
		{"signature 47 bytes", "81a30001010202582f" + sigA[2:], dcbor.ErrByteLength},
		{"signature 49 bytes", "81a3000101020258311" + "1" + sigA, dcbor.ErrByteLength},
		{"signature 96 bytes", "81a30001010202586" + "0" + sigA + sigA, dcbor.ErrByteLength},
		{"missing seed_signature", "81a200010102", dcbor.ErrMissingKey},
		{"missing seed_view", "81a20001025830" + sigA, dcbor.ErrMissingKey},
		{"extra key", "81a4000101020258 30" + sigA + "0300", dcbor.ErrUnknownKey},
		{"unsorted keys", "81a301020001025830" + sigA, dcbor.ErrKeyOrder},
		{"duplicate key", "81a300010001025830" + sigA, dcbor.ErrDuplicateKey},
		{"text key", "81a3" + "613001" + "0102" + "025830" + sigA, dcbor.ErrUnknownKey},
		{"tag on array", "c0" + "80", dcbor.ErrTag},
		{"tag on signature", "81a30001010202c25830" + sigA, dcbor.ErrTag},
		{"negative epoch", "81a3002001" + "02025830" + sigA, dcbor.ErrUnexpectedType},
		{"float epoch", "81a300f93c00" + "0102025830" + sigA, dcbor.ErrUnexpectedType},
		{"map at top level", "a0", dcbor.ErrUnexpectedType},
		{"text signature", "81a30001010202783" + "0" + sigA, dcbor.ErrUnexpectedType},
		{"reserved additional info", "1c", dcbor.ErrMalformed},
		{"truncated entry", "81a3000101", dcbor.ErrTruncated},
		{"truncated signature", "81a300010102025830" + sigA[:90], dcbor.ErrTruncated},
		{"huge array length", "9bffffffffffffffff", dcbor.ErrTruncated},
		{"unsorted entries", "82" + entryB + entryA, ErrConsumedSeedsUnsorted},
		{"duplicate round", "82" + entryA + entryA, ErrConsumedSeedsDuplicateRound},
	} {
		in := mustHex(t, strings.ReplaceAll(tc.in, " ", ""))
		got, err := DecodeConsumedSeedsV1(in)
		if !errors.Is(err, tc.want) || got != nil {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

// TestConsumedSeedsValidity covers the three block-validity rules of §9.2
// "Consumed-seed commitment".
func TestConsumedSeedsValidity(t *testing.T) {
	ns := []byte("cowboy-test")
	sk1, sk2 := DeriveSecretKey([]byte("epoch 1")), DeriveSecretKey([]byte("epoch 2"))
	pk1, pk2 := sk1.PublicKey(), sk2.PublicKey()
	v1, _ := NewVerifier(pk1[:], ns)
	v2, _ := NewVerifier(pk2[:], ns)
	keys := MemoryThresholdKeys{1: v1, 2: v2}
	mk := func(sk SecretKey, r Round) ConsumedSeed {
		s, err := SignSeed(sk, ns, r)
		if err != nil {
			t.Fatal(err)
		}
		return ConsumedSeed{r, s}
	}
	a, b, c := mk(sk1, Round{1, 5}), mk(sk1, Round{1, 9}), mk(sk2, Round{2, 0})
	good := ConsumedSeedsV1{a, b, c}
	processed := []Round{{2, 0}, {1, 5}, {1, 9}, {1, 5}}
	if err := ValidateConsumedSeeds(good, processed, keys); err != nil {
		t.Fatalf("valid block: %v", err)
	}
	if err := ValidateConsumedSeeds(nil, nil, keys); err != nil {
		t.Fatalf("empty block: %v", err)
	}
	wrongKey := mk(sk2, Round{1, 9}) // signed by epoch 2's key, named epoch 1
	for _, tc := range []struct {
		name      string
		c         ConsumedSeedsV1
		processed []Round
		want      error
	}{
		{"missing entry", ConsumedSeedsV1{a, c}, processed, ErrConsumedSeedMissing},
		{"missing, none committed", nil, processed, ErrConsumedSeedMissing},
		{"unused entry", good, []Round{{1, 5}, {2, 0}}, ErrConsumedSeedUnused},
		{"unused trailing entry", good, []Round{{1, 5}, {1, 9}}, ErrConsumedSeedUnused},
		{"unused, nothing processed", good, nil, ErrConsumedSeedUnused},
		{"wrong epoch key", ConsumedSeedsV1{a, wrongKey, c}, processed, ErrConsumedSeedUnverified},
		{"signature of another round", ConsumedSeedsV1{a, {Round{1, 9}, a.Signature}, c}, processed, ErrConsumedSeedUnverified},
		{"unknown epoch", ConsumedSeedsV1{mk(sk1, Round{3, 1})}, []Round{{3, 1}}, ErrNoThresholdKey},
		{"unsorted", ConsumedSeedsV1{b, a, c}, processed, ErrConsumedSeedsUnsorted},
		{"duplicate", ConsumedSeedsV1{a, a, b, c}, processed, ErrConsumedSeedsDuplicateRound},
	} {
		if err := ValidateConsumedSeeds(tc.c, tc.processed, keys); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	err := ValidateConsumedSeeds(ConsumedSeedsV1{a, wrongKey, c}, processed, keys)
	if !errors.Is(err, ErrSeedSignatureInvalid) {
		t.Errorf("unverified entry should also wrap the BLS sentinel: %v", err)
	}
}

func TestSeedFor(t *testing.T) {
	c := ConsumedSeedsV1{{Round{1, 2}, sigOf(0x11)}, {Round{1, 300}, sigOf(0x22)}}
	if s, ok := c.SeedFor(Round{1, 300}); !ok || s != sigOf(0x22) {
		t.Errorf("SeedFor hit: %v", ok)
	}
	if _, ok := c.SeedFor(Round{1, 3}); ok {
		t.Error("SeedFor miss")
	}
	// Frozen: beacon_hash_v1 of Round(7, 42) with the frozen signature.
	sig, _ := SignatureFromBytes(mustHex(t, frozenSig))
	c2 := ConsumedSeedsV1{{Round{7, 42}, sig}}
	if h, err := c2.CanonicalSeedBytesFor(Round{7, 42}); err != nil || h.String() != frozenBeacon {
		t.Errorf("CanonicalSeedBytesFor = %v, %v", h, err)
	}
	if h := c2[0].CanonicalSeedBytes(); h.String() != frozenBeacon {
		t.Errorf("ConsumedSeed.CanonicalSeedBytes = %v", h)
	}
	if _, err := c2.CanonicalSeedBytesFor(Round{7, 43}); !errors.Is(err, ErrConsumedSeedMissing) {
		t.Errorf("missing: %v", err)
	}
}
