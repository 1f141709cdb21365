package blocklayout

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cip11/cip11/seed"
)

// TestVoteExtension (D31, SPEC-NOTES C2): the extension of height h is the
// share's partial of Round(0, h); t of them recover the group signature of
// that round (checked against the group key with seed.VerifySeed), and each
// rule of the verify side has its sentinel under ErrExtension.
func TestVoteExtension(t *testing.T) {
	ns := []byte("cip11-test")
	d, err := seed.DealShares(seed.DeriveSecretKey([]byte("extension test")), 4, 3, rand.NewChaCha8([32]byte{1}))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := d.Public.PublicShares(4)
	if err != nil {
		t.Fatal(err)
	}
	shares := make([][]byte, len(pub))
	for i := range pub {
		shares[i] = pub[i][:]
	}
	var ps []seed.Partial
	for _, s := range d.Shares[1:] {
		ext, err := VoteExtension(s, ns, ExtensionRound(0, 9))
		if err != nil || len(ext) != seed.SignatureSize {
			t.Fatalf("share %d: %d bytes, %v", s.Index, len(ext), err)
		}
		if err := VerifyVoteExtension(shares, ns, ExtensionRound(0, 9), s.Index, ext); err != nil {
			t.Fatalf("share %d: %v", s.Index, err)
		}
		ps = append(ps, seed.Partial{Index: s.Index, Signature: seed.Signature(ext)})
		// D30: the same height in another epoch is another round.
		other, err := VoteExtension(s, ns, ExtensionRound(1, 9))
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifyVoteExtension(shares, ns, ExtensionRound(0, 9), s.Index, other); !errors.Is(err, ErrExtension) || !errors.Is(err, seed.ErrPartialInvalid) {
			t.Fatalf("share %d: the epoch-1 partial verified as epoch 0's: %v", s.Index, err)
		}
	}
	sig, err := seed.Recover(4, 3, ps)
	if err != nil {
		t.Fatal(err)
	}
	gk := d.Public.GroupKey()
	if err := seed.VerifySeed(gk[:], ns, seed.Round{Epoch: 0, View: 9}, sig[:]); err != nil {
		t.Fatalf("recovered signature is not the group's of Round(0, 9): %v", err)
	}
	ext := ps[0].Signature[:] // index 2, height 9
	cases := []struct {
		name  string
		h     uint64
		index uint32
		ext   []byte
		want  error
	}{
		{"wrong height", 10, 2, ext, seed.ErrPartialInvalid},
		{"another share's partial", 9, 3, ext, seed.ErrPartialInvalid},
		{"unknown signer 0", 9, 0, ext, seed.ErrIndexOutOfRange},
		{"unknown signer n+1", 9, 5, ext, seed.ErrIndexOutOfRange},
		{"47 bytes", 9, 2, ext[:47], seed.ErrSeedSignatureLength},
		{"49 bytes", 9, 2, append(append([]byte{}, ext...), 0), seed.ErrSeedSignatureLength},
		{"empty", 9, 2, nil, seed.ErrSeedSignatureLength},
	}
	for _, c := range cases {
		err := VerifyVoteExtension(shares, ns, ExtensionRound(0, c.h), c.index, c.ext)
		if !errors.Is(err, ErrExtension) || !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want ErrExtension and %v", c.name, err, c.want)
		}
	}
}
