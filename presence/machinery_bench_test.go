package presence

import (
	"crypto/ed25519"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
	"golang.org/x/crypto/sha3"
)

// nopModeAStore has no anchors and forgets writes, so one certificate can
// be accepted on every benchmark iteration.
type nopModeAStore struct{}

func (nopModeAStore) PresenceAnchor(cip11.Address) (ModeARecord, bool, error) {
	return ModeARecord{}, false, nil
}
func (nopModeAStore) PutPresenceAnchor(cip11.Address, ModeARecord) error { return nil }

// BenchmarkCertificateT11 compares a t_hard = 11 certificate of 11 valid
// receipts (k = 11 over |V| = 12) with 11 bare Ed25519 verifications of the
// same digests, in the same run. Target: certificate ≤ 1.15 × bare.
func BenchmarkCertificateT11(b *testing.B) {
	p := cip11.DefaultParams()
	p.MinSubset, p.MaxSubset, p.THard = 11, 20, 11
	ks, rs := validators(0, 12)
	keys := map[PeerKey]*wire.ValidatorKey{}
	for _, k := range ks {
		keys[peerOf(k)] = k
	}
	snap := mustSnapshot(b, 0, rs, 0)
	runner := rkey(b, 1)
	sub, _ := snap.Sub(runner.PubKey(), p)
	if len(sub) != 11 {
		b.Fatalf("k = %d", len(sub))
	}
	var receipts []wire.PresenceReceipt
	var pubs []ed25519.PublicKey
	var digests []cip11.Hash
	for _, v := range sub {
		r := wire.PresenceReceipt{ValidatorPubKey: v.WirePubKey(), RunnerPubKey: runner.PubKey(), SubsetEpoch: 0,
			ValidatorSetHash: snap.Hash(), BlockHeight: 100, NonceEcho: 1, AcceptingNew: true}
		if err := r.Sign(testChainID, keys[v]); err != nil {
			b.Fatal(err)
		}
		d, _ := r.Digest(testChainID)
		receipts, pubs, digests = append(receipts, r), append(pubs, ed25519.PublicKey(v[:])), append(digests, d)
	}
	reg := registryWith(b, runner.Address())
	view := regAt(b, reg, 100)
	e := Epochs{Current: snap}
	cert := &Certificate{Runner: runner.Address(), Height: 100, Receipts: receipts}
	b.Run("certificate", func(b *testing.B) {
		for b.Loop() {
			c := &CertificateContext{Params: p, ChainID: testChainID, CurrentHeight: 100, Epochs: e,
				Registry: view, Store: nopModeAStore{}, Meter: &CycleMeter{Limit: plenty}}
			if _, err := ProcessCertificate(c, cert); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ed25519x11", func(b *testing.B) {
		for b.Loop() {
			for i := range receipts {
				if !ed25519.Verify(pubs[i], digests[i][:], receipts[i].ValidatorSigned[:]) {
					b.Fatal("bad signature")
				}
			}
		}
	})
}

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
