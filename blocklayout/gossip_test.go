package blocklayout

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/cip11/cip11/presence"
)

func gossipMsg(t testing.TB, h uint64, n int, idx ...int) []byte {
	t.Helper()
	s, err := presence.NewSet(n, idx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := EncodeGossip(h, n, presence.Encode(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGossipCodec (§8.2, D33): a message decodes to what was published;
// every malformation is ErrGossip, with its specific sentinel (and the
// presence sentinel underneath for a bad field).
func TestGossipCodec(t *testing.T) {
	b := gossipMsg(t, 42, 10, 1, 3, 9)
	// "C11P" ‖ 01 ‖ height 42 (8, BE) ‖ n 10 (4, BE) ‖ a PresenceInputV1:
	// the header is written out by hand here, not by the encoder.
	if want := "4331315001" + "000000000000002a" + "0000000a"; hex.EncodeToString(b[:GossipHeaderBytes]) != want {
		t.Fatalf("header %x, want %s", b[:GossipHeaderBytes], want)
	}
	h, set, err := DecodeGossip(b)
	if err != nil || h != 42 || set.Len() != 3 || !set.Has(9) || set.Has(2) {
		t.Fatalf("decode: h %d, set %v, err %v", h, set.Indices(), err)
	}
	bad := []struct {
		name string
		b    []byte
		want error
	}{
		{"short", b[:10], ErrGossipLength},
		{"empty", nil, ErrGossipLength},
		{"oversize", append(append([]byte{}, b[:GossipHeaderBytes]...), make([]byte, MaxGossipBytes-GossipHeaderBytes+1)...), ErrGossipLength},
		{"magic", append([]byte("C11X"), b[4:]...), ErrGossipMagic},
		{"version", append(append([]byte{}, b[:4]...), append([]byte{2}, b[5:]...)...), ErrGossipVersion},
		{"field", append(append([]byte{}, b[:17]...), 0x09), presence.ErrUnknownVersion},
		{"bit beyond registry", func() []byte {
			c := bytes.Clone(b)
			c[16] = 2 // registry size 2 with index 9 set
			return c
		}(), presence.ErrBitmapLength},
	}
	for _, c := range bad {
		_, _, err := DecodeGossip(c.b)
		if !errors.Is(err, ErrGossip) || !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want ErrGossip and %v", c.name, err, c.want)
		}
	}
	if _, _, err := DecodeGossip(b[:len(b)-1]); !errors.Is(err, ErrGossip) || !errors.Is(err, presence.ErrSparseLength) && !errors.Is(err, presence.ErrBitmapLength) {
		t.Errorf("truncated field: %v", err)
	}
	if _, err := EncodeGossip(1, -1, nil); !errors.Is(err, ErrGossipRegistrySize) {
		t.Errorf("negative registry size: %v", err)
	}
	if _, err := EncodeGossip(1, 8, make([]byte, MaxGossipBytes)); !errors.Is(err, ErrGossipLength) {
		t.Errorf("oversize field: %v", err)
	}
}

// FuzzDecodeGossip: no input panics the decoder; a decoded message
// re-encodes (as the set's canonical PresenceInputV1) to a message that
// decodes to the same height and set.
func FuzzDecodeGossip(f *testing.F) {
	f.Add(gossipMsg(f, 7, 20, 0, 5, 19))
	f.Add(gossipMsg(f, 1, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, set, err := DecodeGossip(b)
		if err != nil {
			return
		}
		again, err := EncodeGossip(h, set.RegistrySize(), presence.Encode(set))
		if err != nil {
			t.Fatal(err)
		}
		h2, set2, err := DecodeGossip(again)
		if err != nil || h2 != h || !set2.Equal(set) {
			t.Fatalf("re-encoded message differs: %v", err)
		}
	})
}
