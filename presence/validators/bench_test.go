package validators

import (
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
	"golang.org/x/crypto/sha3"
)

// BenchmarkSub5000x100 compares Sub(R) for 5,000 runners over 100
// validators (k = 8) with the 500,000 Keccak-256 calls it needs, both as
// cip11.Keccak256 calls and with one reused Keccak state. Target: Sub ≤
// 1.3 × the Keccak calls.
func BenchmarkSub5000x100(b *testing.B) {
	p := cip11.DefaultParams()
	_, rs := validators(0, 100)
	snap := mustSnapshot(b, 0, rs, 0)
	runners := make([]wire.PubKey, 5000)
	for i := range runners {
		var s [32]byte
		s[0], s[1], s[2], s[31] = 0x22, byte(i), byte(i>>8), 1
		k, err := wire.NewRunnerKey(s)
		if err != nil {
			b.Fatal(err)
		}
		runners[i] = k.PubKey()
	}
	b.Run("sub", func(b *testing.B) {
		for b.Loop() {
			for _, r := range runners {
				if sub, err := snap.Sub(r, p); err != nil || len(sub) != 8 {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("keccak_calls", func(b *testing.B) {
		for b.Loop() {
			for _, r := range runners {
				raw := r.Raw()
				for _, v := range rs {
					_ = cip11.Keccak256(raw, v.PeerPubKey[:])
				}
			}
		}
	})
	b.Run("keccak_reused_state", func(b *testing.B) {
		h := sha3.NewLegacyKeccak256()
		var buf [65]byte
		var out [32]byte
		for b.Loop() {
			for _, r := range runners {
				copy(buf[:33], r.Raw())
				for _, v := range rs {
					copy(buf[33:], v.PeerPubKey[:])
					h.Reset()
					h.Write(buf[:])
					h.Sum(out[:0])
				}
			}
		}
	})
}
