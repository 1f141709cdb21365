package blockheader

import (
	"bytes"
	"testing"

	"github.com/cip11/cip11/seed"
)

// FuzzDecode: no input panics; every rejection wraps exactly one sentinel;
// every accepted input re-encodes to itself (D9), and Check neither panics
// nor accepts a header whose finalized height is not height−1; nor does
// CheckSchedule panic or accept a round other than Round(epoch_at(height),
// height) (§9.2, D30). Seeds:
// testdata/fuzz/FuzzDecode and the golden headers.
func FuzzDecode(f *testing.F) {
	f.Add(unhex(f, genesisHex), uint64(1))
	f.Add(unhex(f, block2Hex), uint64(2))
	f.Fuzz(func(t *testing.T, in []byte, height uint64) {
		h, err := Decode(in)
		if err != nil {
			if h != nil {
				t.Fatalf("%x: a header and an error", in)
			}
			if n := countSentinels(err); n != 1 {
				t.Fatalf("%x: %v wraps %d sentinels", in, err, n)
			}
			return
		}
		out, err := Encode(h)
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("decode→encode: %x → %x (%v)", in, out, err)
		}
		if err := Check(h, height); err == nil && h.Finalized+1 != height {
			t.Fatalf("Check accepted finalized %d at height %d", h.Finalized, height)
		} else if err != nil && countSentinels(err) != 1 {
			t.Fatalf("Check: %v wraps %d sentinels", err, countSentinels(err))
		}
		s := seed.HeightSchedule{Activations: []uint64{1, 3}, KnownThrough: 1 << 62}
		if err := CheckSchedule(h, height, s); err == nil {
			if e, _ := s.EpochAt(height); h.Round != (seed.Round{Epoch: e, View: height}) {
				t.Fatalf("CheckSchedule accepted round %v at height %d", h.Round, height)
			}
		} else if countSentinels(err) != 1 {
			t.Fatalf("CheckSchedule: %v wraps %d sentinels", err, countSentinels(err))
		}
	})
}
