package blockheader

import (
	"bytes"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/cip11/cip11/seed"
)

func genU64(t *rapid.T, label string) uint64 {
	return rapid.OneOf(rapid.Uint64Range(0, 30), rapid.Uint64()).Draw(t, label)
}

func genSig(t *rapid.T, label string) seed.Signature {
	return seed.Signature(rapid.SliceOfN(rapid.Byte(), seed.SignatureSize, seed.SignatureSize).Draw(t, label))
}

// genHeader draws any header Encode accepts (Check not applied).
func genHeader(t *rapid.T) *Header {
	h := &Header{Version: Version, Round: seed.Round{Epoch: genU64(t, "epoch"), View: genU64(t, "view")},
		Finalized: genU64(t, "finalized")}
	if rapid.Bool().Draw(t, "beacon?") {
		h.ParentBeacon = &seed.Beacon{Round: seed.Round{Epoch: genU64(t, "b.epoch"), View: genU64(t, "b.view")}, Signature: genSig(t, "b.sig")}
	}
	if rapid.Bool().Draw(t, "presence?") {
		h.Presence = rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "presence")
	}
	var seeds []seed.ConsumedSeed
	for range rapid.IntRange(0, 4).Draw(t, "seeds") {
		seeds = append(seeds, seed.ConsumedSeed{Round: seed.Round{Epoch: genU64(t, "s.epoch"), View: genU64(t, "s.view")}, Signature: genSig(t, "s.sig")})
	}
	var err error
	if h.ConsumedSeeds, err = seed.BuildConsumedSeeds(seeds); err != nil {
		t.Skip("two signatures for one round")
	}
	if h.ConsumedSeeds == nil {
		h.ConsumedSeeds = seed.ConsumedSeedsV1{} // D11: nil encodes as the empty list, which decodes non-nil
	}
	return h
}

// TestRapidRoundTrip: for any encodable header, Decode(Encode(h)) == h and
// the bytes are reproduced (D9), and the encoding starts with the magic.
func TestRapidRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := genHeader(t)
		b, err := Encode(h)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		if !IsHeader(b) {
			t.Fatalf("no magic: %x", b)
		}
		d, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(%x): %v", b, err)
		}
		if !reflect.DeepEqual(d, h) {
			t.Fatalf("Decode = %+v, want %+v", d, h)
		}
		if again, err := Encode(d); err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encode differs: %v", err)
		}
	})
}
