package modea

import (
	"crypto/ed25519"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

// nopStore has no anchors and forgets writes, so one certificate can
// be accepted on every benchmark iteration.
type nopStore struct{}

func (nopStore) PresenceAnchor(cip11.Address) (Record, bool, error) {
	return Record{}, false, nil
}
func (nopStore) PutPresenceAnchor(cip11.Address, Record) error { return nil }

// BenchmarkCertificateT11 compares a t_hard = 11 certificate of 11 valid
// receipts (k = 11 over |V| = 12) with 11 bare Ed25519 verifications of the
// same digests, in the same run. Target: certificate ≤ 1.15 × bare.
func BenchmarkCertificateT11(b *testing.B) {
	p := cip11.DefaultParams()
	p.MinSubset, p.MaxSubset, p.THard = 11, 20, 11
	ks, rs := validatorKeys(0, 12)
	keys := map[validators.PeerKey]*wire.ValidatorKey{}
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
	e := validators.Epochs{Current: snap}
	cert := &Certificate{Runner: runner.Address(), Height: 100, Receipts: receipts}
	b.Run("certificate", func(b *testing.B) {
		for b.Loop() {
			c := &CertificateContext{Params: p, ChainID: testChainID, CurrentHeight: 100, Epochs: e,
				Registry: view, Store: nopStore{}, Meter: &CycleMeter{Limit: plenty}}
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
