package conformance

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/seed"
)

// ---- seed_threshold_recover (DECISIONS D31) ----

// Fixed inputs of the threshold vectors: the group secret and the ChaCha8
// seed of the devnet dealer's coefficient stream.
const (
	seedThrSecretSeed = "cip11 conformance threshold group secret v1"
	seedThrRandLabel  = "cip11 conformance threshold dealing v1"
)

func seedThresholdFunction() Function {
	return Function{
		Name: "seed_threshold_recover", Spec: "§9.2",
		Description: fmt.Sprintf("Threshold seed recovery (DECISIONS D31): each partial is the BLS12-381 MinSig signature of the seed_message (DECISIONS D12) with the share of its index; the group signature is sigma = sum of lambda_i * sigma_i in G1 over the first threshold partials in list order, lambda_i = prod_{j != i} x_j / (x_j - x_i) mod r with x_i the index (Lagrange at 0). Inputs: public_key (96-byte compressed G2 group key), public_shares (list of 96-byte compressed G2 keys; the public share of index i is at position i-1, so n = its length), namespace (hex of NS), epoch, view (u64 decimal strings), threshold (number t, 1 <= t <= n; D31 gives t = n - floor((n-1)/3)), partials (list of {index: number 1..n, signature: 48-byte compressed G1 hex}). Output: signature (48-byte compressed G1 hex), which must verify as a seed_verify signature under public_key. Checks in order: threshold in 1..n; every index in 1..n and no index twice (over all partials); at least threshold partials; the first threshold partials decode strictly and verify under their public shares (decoded strictly: not infinity, in G2; the shares of indices no used partial names are never read); the interpolated point is not infinity (else ErrPartialInvalid); the recovered signature verifies under public_key. Partials beyond the first threshold are not verified or used. Dealt from the group secret sk = %s (32-byte big-endian scalar; public_key = sk*g2 and every signature = sk*H(m)) with a random polynomial of degree t-1 (test/devnet dealer; production keys come from consensus DKG).", seedThrSecretHex()),
		Generate:    seedGenThreshold, Eval: seedEvalThreshold,
	}
}

func seedThrSecret() seed.SecretKey { return seed.DeriveSecretKey([]byte(seedThrSecretSeed)) }

func seedThrSecretHex() string {
	b := seedThrSecret().Bytes()
	return Hex(b[:])
}

type seedPartialJSON struct {
	Index     uint32 `json:"index"`
	Signature string `json:"signature"`
}

type seedThresholdVector struct {
	Name         string            `json:"name"`
	PublicKey    string            `json:"public_key"`
	PublicShares []string          `json:"public_shares"`
	Namespace    string            `json:"namespace"`
	Epoch        string            `json:"epoch"`
	View         string            `json:"view"`
	Threshold    int               `json:"threshold"`
	Partials     []seedPartialJSON `json:"partials"`
	Signature    string            `json:"signature,omitempty"`
	Error        string            `json:"error,omitempty"`
}

// seedThrDealing is one fixed dealing of the group secret: n shares, the D31
// threshold, public shares and the partials of every share for round r.
type seedThrDealing struct {
	t        int
	pk       string
	shares   []string
	partials []seedPartialJSON
}

func seedThrDeal(n int, ns []byte, r seed.Round) (seedThrDealing, error) {
	t, err := seed.Threshold(n)
	if err != nil {
		return seedThrDealing{}, err
	}
	d, err := seed.DealShares(seedThrSecret(), n, t, rand.NewChaCha8(cip11.Keccak256([]byte(seedThrRandLabel), []byte{byte(n)})))
	if err != nil {
		return seedThrDealing{}, err
	}
	pub, err := d.Public.PublicShares(n)
	if err != nil {
		return seedThrDealing{}, err
	}
	gk := d.Public.GroupKey()
	out := seedThrDealing{t: t, pk: Hex(gk[:])}
	for i, s := range d.Shares {
		p, err := seed.SignPartial(s, ns, r)
		if err != nil {
			return seedThrDealing{}, err
		}
		out.shares = append(out.shares, Hex(pub[i][:]))
		out.partials = append(out.partials, seedPartialJSON{p.Index, Hex(p.Signature[:])})
	}
	return out, nil
}

// The G2 encodings the vectors refuse as public shares (seed_verify's
// public_key_infinity and public_key_not_in_subgroup_x_2).
var (
	g2Infinity      = "c0" + strings.Repeat("00", 95)
	g2NotInSubgroup = "80" + strings.Repeat("00", 94) + "02"
)

// seedThrZeroDeal is a dealing of the group secret 0 (generator only): the
// share of index i is a·i mod r, f(x) = a·x, so every partial verifies under
// its public share and any t of them interpolate to the point at infinity.
// pk is carried as the vector's group key (never reached).
func seedThrZeroDeal(n int, ns []byte, r seed.Round, pk string) (seedThrDealing, error) {
	order, _ := new(big.Int).SetString("73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001", 16)
	h := cip11.Keccak256([]byte("cip11 conformance threshold zero dealing v1"))
	a := new(big.Int).Mod(new(big.Int).SetBytes(h[:]), order)
	t, err := seed.Threshold(n)
	if err != nil {
		return seedThrDealing{}, err
	}
	out := seedThrDealing{t: t, pk: pk}
	for i := 1; i <= n; i++ {
		var kb [32]byte
		new(big.Int).Mod(new(big.Int).Mul(a, big.NewInt(int64(i))), order).FillBytes(kb[:])
		k, err := seed.SecretKeyFromBytes(kb[:])
		if err != nil {
			return seedThrDealing{}, err
		}
		pub := k.PublicKey()
		p, err := seed.SignPartial(seed.Share{Index: uint32(i), Key: k}, ns, r)
		if err != nil {
			return seedThrDealing{}, err
		}
		out.shares = append(out.shares, Hex(pub[:]))
		out.partials = append(out.partials, seedPartialJSON{p.Index, Hex(p.Signature[:])})
	}
	return out, nil
}

// pick returns the partials of the given 1-based indices, in that order.
func (d seedThrDealing) pick(idx ...int) []seedPartialJSON {
	out := make([]seedPartialJSON, 0, len(idx))
	for _, i := range idx {
		out = append(out, d.partials[i-1])
	}
	return out
}

func seedGenThreshold() ([]any, error) {
	ns := []byte(seedNamespace)
	r15, r2300 := seed.Round{Epoch: 1, View: 5}, seed.Round{Epoch: 2, View: 300}
	d4, err := seedThrDeal(4, ns, r15)
	if err != nil {
		return nil, err
	}
	d7, err := seedThrDeal(7, ns, r15)
	if err != nil {
		return nil, err
	}
	d1, err := seedThrDeal(1, ns, r15)
	if err != nil {
		return nil, err
	}
	d4b, err := seedThrDeal(4, ns, r2300) // the same dealing, another round
	if err != nil {
		return nil, err
	}
	d10, err := seedThrDeal(10, nil, r15)
	if err != nil {
		return nil, err
	}
	zero4, err := seedThrZeroDeal(4, ns, r15, d4.pk)
	if err != nil {
		return nil, err
	}
	nsHex := Hex(ns)
	vec := func(name string, d seedThrDealing, e, v string, ps []seedPartialJSON, want string) seedThresholdVector {
		return seedThresholdVector{Name: name, PublicKey: d.pk, PublicShares: d.shares, Namespace: nsHex,
			Epoch: e, View: v, Threshold: d.t, Partials: ps, Error: want}
	}
	with := func(v seedThresholdVector, f func(*seedThresholdVector)) seedThresholdVector { f(&v); return v }
	repl := func(p seedPartialJSON, index uint32, sig string) seedPartialJSON {
		if index != 0 || sig == "" {
			p.Index = index
		}
		if sig != "" {
			p.Signature = sig
		}
		return p
	}
	zeros := strings.Repeat("00", 47)
	otherPK := seed.DeriveSecretKey([]byte("cip11 conformance seed key v1 (other)")).PublicKey()
	in := []seedThresholdVector{
		vec("n4_t3_indices_1_2_3", d4, "1", "5", d4.pick(1, 2, 3), ""),
		vec("n4_t3_indices_2_3_4", d4, "1", "5", d4.pick(2, 3, 4), ""),
		vec("n4_t3_indices_4_1_3_unordered", d4, "1", "5", d4.pick(4, 1, 3), ""),
		vec("n4_t3_all_four_first_three_used", d4, "1", "5", d4.pick(1, 2, 4, 3), ""),
		vec("n4_t3_round_2_300", d4b, "2", "300", d4b.pick(3, 1, 4), ""),
		vec("n7_t5_indices_3_7_1_6_4", d7, "1", "5", d7.pick(3, 7, 1, 6, 4), ""),
		vec("n1_t1_partial_is_group_signature", d1, "1", "5", d1.pick(1), ""),
		with(vec("n10_t7_empty_namespace", d10, "1", "5", d10.pick(10, 9, 8, 7, 6, 5, 4), ""), func(v *seedThresholdVector) { v.Namespace = "" }),
		vec("too_few_partials", d4, "1", "5", d4.pick(1, 2), "ErrTooFewPartials"),
		vec("too_few_partials_none", d4, "1", "5", []seedPartialJSON{}, "ErrTooFewPartials"),
		vec("duplicate_index", d4, "1", "5", d4.pick(1, 2, 1), "ErrDuplicateIndex"),
		vec("duplicate_index_beyond_threshold", d4, "1", "5", d4.pick(1, 2, 3, 2), "ErrDuplicateIndex"),
		vec("duplicate_index_other_signature", d4, "1", "5", []seedPartialJSON{d4.partials[0], d4.partials[1], repl(d4.partials[2], 2, "")}, "ErrDuplicateIndex"),
		vec("index_out_of_range_zero", d4, "1", "5", []seedPartialJSON{repl(d4.partials[0], 0, ""), d4.partials[1], d4.partials[2]}, "ErrIndexOutOfRange"),
		vec("index_out_of_range_n_plus_1", d4, "1", "5", []seedPartialJSON{d4.partials[0], d4.partials[1], repl(d4.partials[2], 5, "")}, "ErrIndexOutOfRange"),
		vec("index_out_of_range_u32_max", d4, "1", "5", []seedPartialJSON{d4.partials[0], d4.partials[1], repl(d4.partials[2], ^uint32(0), "")}, "ErrIndexOutOfRange"),
		vec("index_out_of_range_beyond_threshold", d4, "1", "5", append(d4.pick(1, 2, 3), repl(d4.partials[3], 5, "")), "ErrIndexOutOfRange"),
		vec("partial_does_not_verify_wrong_round", d4, "1", "5", []seedPartialJSON{d4.partials[0], d4.partials[1], d4b.partials[2]}, "ErrPartialInvalid"),
		vec("partial_does_not_verify_other_index", d4, "1", "5", []seedPartialJSON{repl(d4.partials[1], 1, ""), d4.partials[2], d4.partials[3]}, "ErrPartialInvalid"),
		vec("partial_does_not_verify_group_signature", d4, "1", "5", []seedPartialJSON{d4.partials[0], d4.partials[1], repl(d4.partials[2], 3, seedThrGroupSig(ns, r15))}, "ErrPartialInvalid"),
		vec("partial_signature_47_bytes", d4, "1", "5", []seedPartialJSON{d4.partials[0], repl(d4.partials[1], 2, d4.partials[1].Signature[:94]), d4.partials[2]}, "ErrSeedSignatureLength"),
		vec("partial_signature_infinity", d4, "1", "5", []seedPartialJSON{d4.partials[0], repl(d4.partials[1], 2, "c0"+zeros), d4.partials[2]}, "ErrSignatureInfinity"),
		vec("partial_signature_not_on_curve", d4, "1", "5", []seedPartialJSON{d4.partials[0], repl(d4.partials[1], 2, "80"+zeros[2:]+"01"), d4.partials[2]}, "ErrSignatureNotOnCurve"),
		vec("partial_signature_not_in_subgroup", d4, "1", "5", []seedPartialJSON{d4.partials[0], repl(d4.partials[1], 2, "80"+zeros), d4.partials[2]}, "ErrSignatureNotInSubgroup"),
		with(vec("public_share_95_bytes", d4, "1", "5", d4.pick(1, 2, 3), "ErrPublicKeyLength"), func(v *seedThresholdVector) {
			v.PublicShares = append([]string{v.PublicShares[0][:190]}, v.PublicShares[1:]...)
		}),
		with(vec("threshold_zero", d4, "1", "5", d4.pick(1, 2, 3), "ErrThresholdParams"), func(v *seedThresholdVector) { v.Threshold = 0 }),
		with(vec("threshold_above_n", d4, "1", "5", d4.pick(1, 2, 3, 4), "ErrThresholdParams"), func(v *seedThresholdVector) { v.Threshold = 5 }),
		with(vec("no_public_shares", d4, "1", "5", d4.pick(1), "ErrThresholdParams"), func(v *seedThresholdVector) {
			v.PublicShares, v.Threshold = []string{}, 1
		}),
		with(vec("public_share_infinity", d4, "1", "5", d4.pick(1, 2, 3), "ErrPublicKeyInfinity"), func(v *seedThresholdVector) {
			v.PublicShares = slices.Clone(v.PublicShares)
			v.PublicShares[1] = g2Infinity
		}),
		with(vec("public_share_not_in_subgroup", d4, "1", "5", d4.pick(1, 2, 3), "ErrPublicKeyNotInSubgroup"), func(v *seedThresholdVector) {
			v.PublicShares = slices.Clone(v.PublicShares)
			v.PublicShares[2] = g2NotInSubgroup
		}),
		with(vec("unused_public_share_infinity_not_decoded", d4, "1", "5", d4.pick(1, 2, 3), ""), func(v *seedThresholdVector) {
			v.PublicShares = slices.Clone(v.PublicShares)
			v.PublicShares[3] = g2Infinity
		}),
		vec("recovery_lands_on_infinity", zero4, "1", "5", zero4.pick(1, 2, 3), "ErrPartialInvalid"),
		with(vec("recovered_wrong_group_key", d4, "1", "5", d4.pick(1, 2, 3), "ErrSeedSignatureInvalid"), func(v *seedThresholdVector) { v.PublicKey = Hex(otherPK[:]) }),
	}
	return seedFill(in, func(v *seedThresholdVector) error {
		out, err := seedEvalThreshold(seedRawJSON(v))
		if err == nil {
			v.Signature = out["signature"].(string)
			// Cross-check at generation: the recovered signature is the group
			// secret's direct signature (an independent path from Lagrange).
			nsb, _ := Unhex(v.Namespace)
			r, _ := seedRound(v.Epoch, v.View)
			if want := seedThrGroupSig(nsb, r); v.Signature != want {
				return fmt.Errorf("vector %s: recovered %s, sk·H(m) %s", v.Name, v.Signature, want)
			}
		}
		return seedExpect(v.Name, v.Error, err)
	})
}

// seedThrGroupSig is the group secret's direct signature sk·H(m) (hex).
func seedThrGroupSig(ns []byte, r seed.Round) string {
	s, err := seed.SignSeed(seedThrSecret(), ns, r)
	if err != nil {
		panic(err) // generator only: a fixed key and DST cannot fail
	}
	return Hex(s[:])
}

func seedEvalThreshold(raw json.RawMessage) (map[string]any, error) {
	var v seedThresholdVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	if v.PublicShares == nil || v.Partials == nil {
		return nil, fmt.Errorf("%w: public_shares and partials are required", ErrMalformedVector)
	}
	pk, err := Unhex(v.PublicKey)
	if err != nil {
		return nil, err
	}
	ns, err := Unhex(v.Namespace)
	if err != nil {
		return nil, err
	}
	r, err := seedRound(v.Epoch, v.View)
	if err != nil {
		return nil, err
	}
	shares := make([][]byte, len(v.PublicShares))
	for i, s := range v.PublicShares {
		if shares[i], err = Unhex(s); err != nil {
			return nil, err
		}
	}
	partials := make([]seed.Partial, len(v.Partials))
	for i, p := range v.Partials {
		b, err := Unhex(p.Signature)
		if err != nil {
			return nil, err
		}
		s, err := seed.SignatureFromBytes(b)
		if err != nil {
			return nil, fmt.Errorf("partial %d: %w", i, err)
		}
		partials[i] = seed.Partial{Index: p.Index, Signature: s}
	}
	sig, err := seed.RecoverVerified(shares, ns, r, v.Threshold, partials)
	if err != nil {
		return nil, err
	}
	if err := seed.VerifySeed(pk, ns, r, sig[:]); err != nil {
		return nil, fmt.Errorf("recovered signature under public_key: %w", err)
	}
	return map[string]any{"signature": Hex(sig[:])}, nil
}
