package cometbft

import (
	"testing"
	"time"

	"github.com/cip11/cip11/seed"
)

// The vote-extension check against the bare BLS verification it wraps
// (D31; issue 19: goal VerifyVoteExtension ≤ 1.1 × VerifySeed). Both
// verify validator 1's partial of Round(0, 7) under its public share.
//
//	go test -run '^$' -bench 'VerifyVoteExtension|VerifySeed|VerifierVerify' -count 5 ./adapters/cometbft/

const benchHeight = 7

func benchPartial(b *testing.B) (*handNet, seed.Partial) {
	hn := newHandNet(b, 4, 0, 1)
	return hn, hn.partial(b, 1, benchHeight)
}

// BenchmarkVerifyVoteExtension is App.VerifyExtension (the body of
// VerifyVoteExtension): the sender's index by address, the length, the
// pairing check under its pre-decoded public share.
func BenchmarkVerifyVoteExtension(b *testing.B) {
	hn, p := benchPartial(b)
	a := hn.apps[0]
	for b.Loop() {
		if err := a.VerifyExtension(benchHeight, hn.addrs[1], p.Signature[:]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifySeed is the bare seed.VerifySeed of the same partial under
// the same public share (decoding the key on every call).
func BenchmarkVerifySeed(b *testing.B) {
	hn, p := benchPartial(b)
	pub := hn.nw.Homes[0].Genesis.Set[1].ThresholdPubKey
	for b.Loop() {
		if err := seed.VerifySeed(pub[:], hn.ns, round(benchHeight), p.Signature[:]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifierVerify is seed.Verifier.Verify with the key decoded
// once, what App.VerifyExtension calls: the floor of the comparison.
func BenchmarkVerifierVerify(b *testing.B) {
	hn, p := benchPartial(b)
	pub := hn.nw.Homes[0].Genesis.Set[1].ThresholdPubKey
	v, err := seed.NewVerifier(pub[:], hn.ns)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := v.Verify(round(benchHeight), p.Signature[:]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppHeight is the CIP-11 application's whole CPU cost of one
// height on 4 validators, driven by hand in one goroutine (no CometBFT, no
// network): the 4 ExtendVote partials (built into LocalLastCommit), the
// 12 VerifyVoteExtension checks of the others' partials, the proposer's
// PrepareProposal (recovering the parent seed), 3 ProcessProposal checks,
// and 4 FinalizeBlock + Commit. Empty blocks over 8 genesis runners.
//
//	go test -run '^$' -bench AppHeight -count 5 ./adapters/cometbft/
func BenchmarkAppHeight(b *testing.B) {
	hn := newHandNet(b, 4, 8, 4)
	h := uint64(1)
	for b.Loop() {
		p := int(h % 4)
		txs := hn.prepare(b, p, h, nil)
		hn.decide(b, p, h, txs)
		for j := range hn.addrs {
			ext := hn.partial(b, j, h) // validator j's ExtendVote (signed once; the next height's LocalLastCommit reuses it)
			for i, a := range hn.apps {
				if i == j {
					continue
				}
				if err := a.VerifyExtension(h, hn.addrs[j], ext.Signature[:]); err != nil {
					b.Fatal(err)
				}
			}
		}
		h++
	}
}

// BenchmarkStatusNetwork is one GET /status answer (Validator.Status) of a
// validator in a running two-validator network with 200 genesis runners:
// CometBFT's facts (the latest block and its time, peers, the set with
// each member's last signed height) and the node's counts, what every
// runner process's chain view asks each tick.
//
//	go test -run '^$' -bench StatusNetwork -count 5 ./adapters/cometbft/
func BenchmarkStatusNetwork(b *testing.B) {
	_, nodes, _ := startNetWith(b, 2, 200, nil)
	waitHeight(b, nodes, 4, 60*time.Second)
	b.ReportAllocs()
	for b.Loop() {
		if st := nodes[0].V.Status(); st.Height == 0 || len(st.Validators) != 2 {
			b.Fatalf("status %+v", st)
		}
	}
}
