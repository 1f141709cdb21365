package seed_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/seed"
)

// An M > 1 job: verify the committed seed for r_seed, then derive the §9.2
// v3 selection seed from its canonical_seed_bytes.
func ExampleVerifier() {
	ns := []byte("cowboy-devnet")
	sk := seed.DeriveSecretKey([]byte("example threshold key"))
	pk := sk.PublicKey()
	v, err := seed.NewVerifier(pk[:], ns)
	if err != nil {
		panic(err)
	}
	sched := seed.FixedSchedule{ViewsPerEpoch: 100, LastKnownEpoch: 10}
	rSeed, mappable, err := seed.SeedRound(sched.Advance, seed.Round{Epoch: 0, View: 98}, 3)
	fmt.Println(rSeed, mappable, err)

	sig, _ := seed.SignSeed(sk, ns, rSeed) // consensus produces this
	fmt.Println(v.Verify(rSeed, sig[:]))
	fmt.Println(v.Verify(seed.Round{Epoch: 1, View: 2}, sig[:]) != nil)
	// Output:
	// (1, 1) true <nil>
	// <nil>
	// true
}

// The per-job hot path: one Hasher per goroutine, no allocation.
func ExampleHasher_SelectionSeed() {
	var h seed.Hasher
	var sig seed.Signature // the verified 48-byte parent beacon signature
	csb := h.BeaconHash(seed.Round{Epoch: 0, View: 0}, &sig)
	jobID := cip11.Keccak256([]byte("job"))
	s, err := h.SelectionSeed(seed.ModeImmediate, &csb, &jobID, 1)
	fmt.Println(len(s), err)
	_, err = h.SelectionSeed(2, &csb, &jobID, 1)
	fmt.Println(err)
	// Output:
	// 32 <nil>
	// seed: unknown selection mode byte: 0x02
}

// A block's ConsumedSeedsV1 field: encode, strictly decode, look up.
func ExampleConsumedSeedsV1() {
	c, _ := seed.BuildConsumedSeeds([]seed.ConsumedSeed{
		{Round: seed.Round{Epoch: 1, View: 300}},
		{Round: seed.Round{Epoch: 1, View: 2}},
	})
	b, _ := c.Encode()
	fmt.Printf("%x…\n", b[:12])
	d, err := seed.DecodeConsumedSeedsV1(b)
	fmt.Println(len(d), err)
	_, err = seed.DecodeConsumedSeedsV1(append(b, 0))
	fmt.Println(err)
	// Output:
	// 82a300010102025830000000…
	// 2 <nil>
	// seed: ConsumedSeedsV1: dcbor: bytes after the CBOR item: 1 at offset 115
}

// M == 1 selection reads the parent beacon, or the configured genesis
// beacon while the parent predates the first certified round.
func ExampleParentBeacon() {
	genesis := &seed.Beacon{Round: seed.Round{Epoch: 0, View: 0}}
	b, err := seed.ParentBeacon(nil, genesis)
	fmt.Println(b.Round, err)
	_, err = seed.ParentBeacon(nil, nil)
	fmt.Println(err)
	// Output:
	// (0, 0) <nil>
	// seed: no genesis beacon configured: parent beacon unavailable
}

// A 4-validator devnet (DECISIONS D31): deal shares of one secret, sign
// partials in ExtendVote, verify each against its public share, and recover
// the group seed from t = 3 of them.
func ExampleRecoverVerified() {
	ns, r := []byte("cowboy-devnet"), seed.Round{Epoch: 0, View: 42}
	n := 4
	t, _ := seed.Threshold(n)
	group := seed.DeriveSecretKey([]byte("example group secret"))
	d, err := seed.DealShares(group, n, t, rand.NewChaCha8([32]byte{1})) // devnet/test only
	if err != nil {
		panic(err)
	}
	ps, _ := d.Public.PublicShares(n)
	pub := make([][]byte, n) // pub[i-1]: public share of index i (D29 position i-1)
	for i := range ps {
		pub[i] = ps[i][:]
	}
	var partials []seed.Partial
	for _, i := range []int{4, 2, 1} { // any t validators, any order
		p, _ := seed.SignPartial(d.Shares[i-1], ns, r)
		partials = append(partials, p)
	}
	sig, err := seed.RecoverVerified(pub, ns, r, t, partials)
	gk := d.Public.GroupKey()
	direct, _ := seed.SignSeed(group, ns, r)
	fmt.Println(t, err, seed.VerifySeed(gk[:], ns, r, sig[:]), sig == direct)
	_, err = seed.RecoverVerified(pub, ns, r, t, partials[:2])
	fmt.Println(err)
	// Output:
	// 3 <nil> <nil> true
	// seed: fewer than t partial signatures: 2 of t = 3
}
