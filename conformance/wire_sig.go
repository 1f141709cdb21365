package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
)

type sigVector struct {
	Name      string         `json:"name"`
	Role      wire.Role      `json:"role"`
	Digest    cip11.Hash     `json:"digest"`
	PublicKey string         `json:"public_key"`
	Signature string         `json:"signature"`
	Valid     *bool          `json:"valid,omitempty"`
	Address   *cip11.Address `json:"address,omitempty"`
	Error     string         `json:"error,omitempty"`
}

// evalSig verifies one role-scheme signature. valid is false only when a
// well-formed signature fails to verify under the key; every malformation
// (role/scheme/length disagreement, v ∉ {0,1}, high s, unrecoverable) is an error.
func evalSig(v *sigVector) (valid bool, addr *cip11.Address, err error) {
	if !v.Role.Valid() {
		return false, nil, fmt.Errorf("%w: role", ErrMalformedVector)
	}
	kb, err := Unhex(v.PublicKey)
	if err != nil {
		return false, nil, err
	}
	pk, err := wire.ParsePubKey(kb)
	if err != nil {
		return false, nil, err
	}
	if err := pk.CheckRole(v.Role); err != nil {
		return false, nil, err
	}
	sb, err := Unhex(v.Signature)
	if err != nil {
		return false, nil, err
	}
	sig, err := wire.ParseSig(sb)
	if err != nil {
		return false, nil, err
	}
	if err := sig.CheckRole(v.Role); err != nil {
		return false, nil, err
	}
	if v.Role == wire.RoleValidator {
		err := wire.VerifyValidator(v.Digest, wire.ValidatorSig(sb), pk)
		if errors.Is(err, wire.ErrSigInvalid) {
			return false, nil, nil
		}
		return err == nil, nil, err
	}
	rec, err := wire.RecoverRunner(v.Digest, wire.RunnerSig(sb))
	if err != nil {
		return false, nil, err
	}
	a, err := rec.RunnerAddress()
	return rec == pk, &a, err
}

func evalSignatureVector(raw json.RawMessage) (map[string]any, error) {
	var v sigVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	valid, addr, err := evalSig(&v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"valid": valid}
	if addr != nil {
		out["address"] = *addr
	}
	return out, nil
}

// highS returns the malleated twin (r, N−s, v⊕1) of a low-s signature: it
// verifies mathematically, so only the low-s rule rejects it.
func highS(sig wire.RunnerSig) wire.RunnerSig {
	n, _ := new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)
	s := new(big.Int).SetBytes(sig[32:64])
	s.Sub(n, s).FillBytes(sig[32:64])
	sig[64] ^= 1
	return sig
}

func genSignatureVectors() ([]any, error) {
	r1, r2 := wireRunner(1), wireRunner(2)
	v1, v2 := wireValidator(1), wireValidator(2)
	d := label("cip11/vectors/digest-1")
	rs, err := r1.Sign(d)
	if err != nil {
		return nil, err
	}
	vs := v1.Sign(d)
	withV := func(s wire.RunnerSig, v byte) wire.RunnerSig { s[64] = v; return s }
	zeroR := rs
	clear(zeroR[:32])
	flipped := vs
	flipped[0] ^= 1
	in := []struct {
		name string
		role wire.Role
		d    cip11.Hash
		pk   wire.PubKey
		sig  []byte
		err  string
	}{
		{"runner_valid", wire.RoleRunner, d, r1.PubKey(), rs[:], ""},
		{"runner_other_key", wire.RoleRunner, d, r2.PubKey(), rs[:], ""},
		{"runner_other_digest", wire.RoleRunner, label("cip11/vectors/digest-2"), r1.PubKey(), rs[:], ""},
		{"runner_flipped_recovery_id", wire.RoleRunner, d, r1.PubKey(), func() []byte { s := withV(rs, rs[64]^1); return s[:] }(), ""},
		{"validator_valid", wire.RoleValidator, d, v1.PubKey(), vs[:], ""},
		{"validator_other_key", wire.RoleValidator, d, v2.PubKey(), vs[:], ""},
		{"validator_flipped_bit", wire.RoleValidator, d, v1.PubKey(), flipped[:], ""},
		{"runner_high_s", wire.RoleRunner, d, r1.PubKey(), func() []byte { s := highS(rs); return s[:] }(), "ErrSigHighS"},
		{"runner_v_2", wire.RoleRunner, d, r1.PubKey(), func() []byte { s := withV(rs, 2); return s[:] }(), "ErrSigRecoveryID"},
		{"runner_v_27_ethereum_legacy", wire.RoleRunner, d, r1.PubKey(), func() []byte { s := withV(rs, 27+rs[64]); return s[:] }(), "ErrSigRecoveryID"},
		{"runner_r_zero", wire.RoleRunner, d, r1.PubKey(), zeroR[:], "ErrSigInvalid"},
		{"runner_sig_64_bytes", wire.RoleRunner, d, r1.PubKey(), rs[:64], "ErrSigLength"},
		{"validator_sig_65_bytes", wire.RoleValidator, d, v1.PubKey(), append(vs[:], 0), "ErrSigLength"},
		{"runner_role_ed25519_key", wire.RoleRunner, d, v1.PubKey(), rs[:], "ErrPubKeyRole"},
		{"validator_role_secp256k1_key", wire.RoleValidator, d, r1.PubKey(), vs[:], "ErrPubKeyRole"},
		{"signature_empty", wire.RoleValidator, d, v1.PubKey(), nil, "ErrSigLength"},
	}
	var out []any
	for _, x := range in {
		v := sigVector{Name: x.name, Role: x.role, Digest: x.d, PublicKey: x.pk.String(), Signature: hx(x.sig)}
		if x.err != "" {
			v.Error = x.err
		} else {
			valid, addr, err := evalSig(&v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", x.name, err)
			}
			v.Valid, v.Address = &valid, addr
		}
		out = append(out, v)
	}
	// Keys that fail before any signature math.
	out = append(out,
		sigVector{Name: "public_key_unknown_scheme", Role: wire.RoleRunner, Digest: d, PublicKey: "03" + r1.PubKey().String()[2:], Signature: hx(rs[:]), Error: "ErrPubKeyScheme"},
		sigVector{Name: "public_key_not_on_curve", Role: wire.RoleRunner, Digest: d, PublicKey: "0102" + "0000000000000000000000000000000000000000000000000000000000000005", Signature: hx(rs[:]), Error: "ErrPubKeyPoint"},
	)
	return out, nil
}
