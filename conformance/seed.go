package conformance

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/dcbor"
	"github.com/cip11/cip11/seed"
)

// seedFunctions lists the vector functions owned by package seed.
func seedFunctions() []Function {
	return []Function{
		{
			Name: "beacon_hash_v1", Spec: "§9.2",
			Description: "canonical_seed_bytes(R) = beacon_hash_v1(R) = keccak256(\"cowboy-beacon-v1\" ‖ epoch_be8 ‖ view_be8 ‖ scheme_id_u8 ‖ signature_len_be2 ‖ signature_bytes) (DECISIONS D1, D2). Inputs: epoch, view (u64 decimal strings), scheme_id (number), signature (hex). Output: canonical_seed_bytes. scheme_id 0x01 (MinSig) requires exactly 48 signature bytes, 0x02 (MinPk, reserved) exactly 96; other lengths and schemes are errors. The signature is hashed, not verified.",
			Generate:    seedGenBeacon, Eval: seedEvalBeacon,
		},
		{
			Name: "selection_seed_v3", Spec: "§9.2",
			Description: "v3 selection seed = keccak256(\"cowboy-runner-select-v3:\" ‖ mode_u8 ‖ canonical_seed_bytes ‖ job_id ‖ submitted_at_le8). Inputs: mode (number; 0 = M == 1 immediate with parent beacon R_{S-1}, 1 = M > 1 delayed with the seed of r_seed), canonical_seed_bytes and job_id (32-byte hex), submitted_at (u64 decimal string, little-endian in the preimage). Output: seed. Any other mode is an error.",
			Generate:    seedGenSelection, Eval: seedEvalSelection,
		},
		{
			Name: "seed_message", Spec: "§9.2",
			Description: "The BLS-signed commonware seed message (DECISIONS D12): uvarint(len(NS ‖ \"_SEED\")) ‖ NS ‖ \"_SEED\" ‖ uvarint(epoch) ‖ uvarint(view), protobuf-style unsigned varints. Inputs: namespace (hex of the namespace bytes NS; may be empty), epoch, view (u64 decimal strings). Output: message (hex).",
			Generate:    seedGenMessage, Eval: seedEvalMessage,
		},
		{
			Name: "seed_verify", Spec: "§9.2",
			Description: fmt.Sprintf("BLS12-381 MinSig threshold seed verification (DECISIONS D12): hash-to-G1 of the seed_message with DST BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_POP_; valid iff e(H(m), public_key) = e(signature, g2). Inputs: public_key (96-byte compressed G2 hex), namespace (hex of NS), epoch, view (u64 decimal strings), signature (48-byte compressed G1 hex). Output: valid. When valid is false the vector also carries error, the reason: public-key defects are reported before signature defects; a well-formed signature that does not verify is ErrSeedSignatureInvalid. Infinity, non-subgroup and off-curve points, non-canonical coordinates, non-compressed flags and any other length are rejected. Valid vectors are signed with the devnet key sk = %s (32-byte big-endian scalar), public_key = sk·g2.", seedKeyHex()),
			Generate:    seedGenVerify, Eval: seedEvalVerify,
		},
		{
			Name: "consumed_seeds", Spec: "§9.2, §12.6",
			Description: "ConsumedSeedsV1 block field (DECISIONS D9, D11): a deterministic-CBOR array of maps {0: seed_epoch, 1: seed_view, 2: seed_signature (48-byte byte string)}, strictly ascending by (seed_epoch, seed_view). Vectors with entries (list of {seed_epoch, seed_view: u64 decimal strings; seed_signature: hex}) encode them to cbor (hex), and cbor must decode back to exactly entries; entries that are unsorted, repeat a round or carry a non-48-byte signature are errors. Vectors without entries give only cbor (hex), which a strict decoder must reject with error (decode→encode must reproduce the input). The codec does not verify signatures.",
			Generate:    seedGenConsumed, Eval: seedEvalConsumed,
		},
		seedThresholdFunction(),
		scheduleFunction(),
	}
}

// seedSentinels lists package seed's exported sentinels for negative vectors.
// Block-validity errors come first: they also wrap the BLS or lookup sentinel.
func seedSentinels() []Sentinel {
	return []Sentinel{
		{"ErrConsumedSeedMissing", seed.ErrConsumedSeedMissing},
		{"ErrConsumedSeedUnused", seed.ErrConsumedSeedUnused},
		{"ErrConsumedSeedUnverified", seed.ErrConsumedSeedUnverified},
		{"ErrNoThresholdKey", seed.ErrNoThresholdKey},
		{"ErrUnknownSeedScheme", seed.ErrUnknownSeedScheme},
		{"ErrSeedSignatureLength", seed.ErrSeedSignatureLength},
		{"ErrUnknownSelectionMode", seed.ErrUnknownSelectionMode},
		{"ErrCommitteeSize", seed.ErrCommitteeSize},
		{"ErrNoGenesisBeacon", seed.ErrNoGenesisBeacon},
		{"ErrPublicKeyLength", seed.ErrPublicKeyLength},
		{"ErrPublicKeyEncoding", seed.ErrPublicKeyEncoding},
		{"ErrPublicKeyNotOnCurve", seed.ErrPublicKeyNotOnCurve},
		{"ErrPublicKeyInfinity", seed.ErrPublicKeyInfinity},
		{"ErrPublicKeyNotInSubgroup", seed.ErrPublicKeyNotInSubgroup},
		{"ErrSignatureEncoding", seed.ErrSignatureEncoding},
		{"ErrSignatureNotOnCurve", seed.ErrSignatureNotOnCurve},
		{"ErrSignatureInfinity", seed.ErrSignatureInfinity},
		{"ErrSignatureNotInSubgroup", seed.ErrSignatureNotInSubgroup},
		{"ErrSeedSignatureInvalid", seed.ErrSeedSignatureInvalid},
		{"ErrSecretKey", seed.ErrSecretKey},
		{"ErrRoundOverflow", seed.ErrRoundOverflow},
		{"ErrRoundOutsideSchedule", seed.ErrRoundOutsideSchedule},
		{"ErrInvalidSchedule", seed.ErrInvalidSchedule},
		{"ErrAdvanceRoundRegressed", seed.ErrAdvanceRoundRegressed},
		{"ErrConsumedSeedsUnsorted", seed.ErrConsumedSeedsUnsorted},
		{"ErrConsumedSeedsDuplicateRound", seed.ErrConsumedSeedsDuplicateRound},
		{"ErrConsumedSeedsConflict", seed.ErrConsumedSeedsConflict},
		{"ErrThresholdParams", seed.ErrThresholdParams},
		{"ErrTooFewPartials", seed.ErrTooFewPartials},
		{"ErrDuplicateIndex", seed.ErrDuplicateIndex},
		{"ErrIndexOutOfRange", seed.ErrIndexOutOfRange},
		{"ErrPartialInvalid", seed.ErrPartialInvalid},
	}
}

// Fixed inputs shared by the seed vectors.
const (
	seedNamespace = "cowboy-conformance"
	seedKeySeed   = "cip11 conformance seed key v1"
	seedMaxU64    = "18446744073709551615"
)

func seedKey() seed.SecretKey { return seed.DeriveSecretKey([]byte(seedKeySeed)) }

func seedKeyHex() string {
	b := seedKey().Bytes()
	return Hex(b[:])
}

func seedRawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // generator only: plain structs always marshal
	}
	return b
}

func seedRound(epoch, view string) (seed.Round, error) {
	e, err := parseU64(epoch)
	if err != nil {
		return seed.Round{}, err
	}
	v, err := parseU64(view)
	return seed.Round{Epoch: e, View: v}, err
}

func seedHash32(s string) (cip11.Hash, error) {
	var h cip11.Hash
	b, err := Unhex(s)
	if err == nil && len(b) != len(h) {
		err = fmt.Errorf("%w: want 32 bytes, got %d", ErrMalformedVector, len(b))
	}
	copy(h[:], b)
	return h, err
}

func seedSign(r seed.Round) seed.Signature {
	s, err := seed.SignSeed(seedKey(), []byte(seedNamespace), r)
	if err != nil {
		panic(err) // generator only: a fixed key and DST cannot fail
	}
	return s
}

func seedU64s(v uint64) string { return strconv.FormatUint(v, 10) }

// ---- beacon_hash_v1 ----

type seedBeaconVector struct {
	Name               string `json:"name"`
	Epoch              string `json:"epoch"`
	View               string `json:"view"`
	SchemeID           int    `json:"scheme_id"`
	Signature          string `json:"signature"`
	CanonicalSeedBytes string `json:"canonical_seed_bytes,omitempty"`
	Error              string `json:"error,omitempty"`
}

func seedGenBeacon() ([]any, error) {
	pattern := make([]byte, 48) // the hand-computed vector of seed/beacon_test.go
	pattern[0] = 0x80
	for i := 1; i < 48; i++ {
		pattern[i] = byte(i)
	}
	real := seedSign(seed.Round{Epoch: 1, View: 5})
	in := []seedBeaconVector{
		{Name: "minsig_pattern_signature", Epoch: "7", View: "42", SchemeID: 1, Signature: Hex(pattern)},
		{Name: "minsig_real_seed_1_5", Epoch: "1", View: "5", SchemeID: 1, Signature: Hex(real[:])},
		{Name: "minsig_round_zero_zero_signature", Epoch: "0", View: "0", SchemeID: 1, Signature: Hex(make([]byte, 48))},
		{Name: "minsig_max_round", Epoch: seedMaxU64, View: seedMaxU64, SchemeID: 1, Signature: Hex(real[:])},
		{Name: "minsig_epoch_view_big_endian", Epoch: "72623859790382856", View: "1", SchemeID: 1, Signature: Hex(real[:])},
		{Name: "minpk_reserved_96_bytes", Epoch: "1", View: "5", SchemeID: 2, Signature: Hex(append(real[:], real[:]...))},
		{Name: "minsig_47_bytes", Epoch: "1", View: "5", SchemeID: 1, Signature: Hex(real[:47]), Error: "ErrSeedSignatureLength"},
		{Name: "minsig_49_bytes", Epoch: "1", View: "5", SchemeID: 1, Signature: Hex(append(real[:], 0)), Error: "ErrSeedSignatureLength"},
		{Name: "minsig_96_bytes", Epoch: "1", View: "5", SchemeID: 1, Signature: Hex(append(real[:], real[:]...)), Error: "ErrSeedSignatureLength"},
		{Name: "minsig_empty_signature", Epoch: "1", View: "5", SchemeID: 1, Signature: "", Error: "ErrSeedSignatureLength"},
		{Name: "minpk_48_bytes", Epoch: "1", View: "5", SchemeID: 2, Signature: Hex(real[:]), Error: "ErrSeedSignatureLength"},
		{Name: "scheme_0_unknown", Epoch: "1", View: "5", SchemeID: 0, Signature: Hex(real[:]), Error: "ErrUnknownSeedScheme"},
		{Name: "scheme_3_unknown", Epoch: "1", View: "5", SchemeID: 3, Signature: Hex(real[:]), Error: "ErrUnknownSeedScheme"},
		{Name: "scheme_255_unknown", Epoch: "1", View: "5", SchemeID: 255, Signature: Hex(append(real[:], real[:]...)), Error: "ErrUnknownSeedScheme"},
	}
	return seedFill(in, func(v *seedBeaconVector) error {
		out, err := seedEvalBeacon(seedRawJSON(v))
		if err == nil {
			v.CanonicalSeedBytes = out["canonical_seed_bytes"].(string)
		}
		return seedExpect(v.Name, v.Error, err)
	})
}

func seedEvalBeacon(raw json.RawMessage) (map[string]any, error) {
	var v seedBeaconVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	r, err := seedRound(v.Epoch, v.View)
	if err != nil {
		return nil, err
	}
	sig, err := Unhex(v.Signature)
	if err != nil {
		return nil, err
	}
	if v.SchemeID < 0 || v.SchemeID > 255 {
		return nil, fmt.Errorf("%w: scheme_id %d", ErrMalformedVector, v.SchemeID)
	}
	h, err := seed.BeaconHashV1(r, seed.SchemeID(v.SchemeID), sig)
	if err != nil {
		return nil, err
	}
	return map[string]any{"canonical_seed_bytes": Hex(h[:])}, nil
}

// ---- selection_seed_v3 ----

type seedSelectionVector struct {
	Name               string `json:"name"`
	Mode               int    `json:"mode"`
	CanonicalSeedBytes string `json:"canonical_seed_bytes"`
	JobID              string `json:"job_id"`
	SubmittedAt        string `json:"submitted_at"`
	Seed               string `json:"seed,omitempty"`
	Error              string `json:"error,omitempty"`
}

func seedGenSelection() ([]any, error) {
	frozenCSB := "d0a28bd9e5e8cde299cf9575b6413bbac92f479bef58121557283c3be89e1ca7"
	frozenJob := "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
	realCSB := seed.Beacon{Round: seed.Round{Epoch: 1, View: 5}, Signature: seedSign(seed.Round{Epoch: 1, View: 5})}.CanonicalSeedBytes()
	job := cip11.Keccak256([]byte("conformance job 1"))
	in := []seedSelectionVector{
		{Name: "immediate_pattern", Mode: 0, CanonicalSeedBytes: frozenCSB, JobID: frozenJob, SubmittedAt: "1234567"},
		{Name: "delayed_pattern", Mode: 1, CanonicalSeedBytes: frozenCSB, JobID: frozenJob, SubmittedAt: "1234567"},
		{Name: "immediate_real_seed", Mode: 0, CanonicalSeedBytes: Hex(realCSB[:]), JobID: Hex(job[:]), SubmittedAt: "100"},
		{Name: "delayed_real_seed", Mode: 1, CanonicalSeedBytes: Hex(realCSB[:]), JobID: Hex(job[:]), SubmittedAt: "100"},
		{Name: "submitted_at_little_endian", Mode: 1, CanonicalSeedBytes: Hex(realCSB[:]), JobID: Hex(job[:]), SubmittedAt: "72623859790382856"},
		{Name: "submitted_at_zero", Mode: 0, CanonicalSeedBytes: Hex(make([]byte, 32)), JobID: Hex(make([]byte, 32)), SubmittedAt: "0"},
		{Name: "submitted_at_max", Mode: 1, CanonicalSeedBytes: Hex(realCSB[:]), JobID: Hex(job[:]), SubmittedAt: seedMaxU64},
		{Name: "mode_2_unknown", Mode: 2, CanonicalSeedBytes: Hex(realCSB[:]), JobID: Hex(job[:]), SubmittedAt: "100", Error: "ErrUnknownSelectionMode"},
		{Name: "mode_255_unknown", Mode: 255, CanonicalSeedBytes: Hex(realCSB[:]), JobID: Hex(job[:]), SubmittedAt: "100", Error: "ErrUnknownSelectionMode"},
	}
	return seedFill(in, func(v *seedSelectionVector) error {
		out, err := seedEvalSelection(seedRawJSON(v))
		if err == nil {
			v.Seed = out["seed"].(string)
		}
		return seedExpect(v.Name, v.Error, err)
	})
}

func seedEvalSelection(raw json.RawMessage) (map[string]any, error) {
	var v seedSelectionVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	csb, err := seedHash32(v.CanonicalSeedBytes)
	if err != nil {
		return nil, err
	}
	job, err := seedHash32(v.JobID)
	if err != nil {
		return nil, err
	}
	at, err := parseU64(v.SubmittedAt)
	if err != nil {
		return nil, err
	}
	if v.Mode < 0 || v.Mode > 255 {
		return nil, fmt.Errorf("%w: mode %d", ErrMalformedVector, v.Mode)
	}
	s, err := seed.SelectionSeedV3(seed.Mode(v.Mode), csb, job, at)
	if err != nil {
		return nil, err
	}
	return map[string]any{"seed": Hex(s[:])}, nil
}

// ---- seed_message ----

type seedMessageVector struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Epoch     string `json:"epoch"`
	View      string `json:"view"`
	Message   string `json:"message"`
}

func seedGenMessage() ([]any, error) {
	ns := Hex([]byte(seedNamespace))
	in := []seedMessageVector{
		{Name: "round_zero", Namespace: ns, Epoch: "0", View: "0"},
		{Name: "one_byte_varints", Namespace: ns, Epoch: "1", View: "127"},
		{Name: "two_byte_varints", Namespace: ns, Epoch: "128", View: "300"},
		{Name: "max_u64_varints", Namespace: ns, Epoch: seedMaxU64, View: seedMaxU64},
		{Name: "mixed_widths", Namespace: ns, Epoch: "16384", View: "2097151"},
		{Name: "empty_namespace", Namespace: "", Epoch: "1", View: "5"},
		{Name: "namespace_122_bytes_one_byte_length", Namespace: Hex([]byte(strings.Repeat("n", 122))), Epoch: "1", View: "5"},
		{Name: "namespace_123_bytes_two_byte_length", Namespace: Hex([]byte(strings.Repeat("n", 123))), Epoch: "1", View: "5"},
		{Name: "namespace_binary_bytes", Namespace: "00ff5f53454544", Epoch: "2", View: "3"},
	}
	return seedFill(in, func(v *seedMessageVector) error {
		out, err := seedEvalMessage(seedRawJSON(v))
		if err == nil {
			v.Message = out["message"].(string)
		}
		return err
	})
}

func seedEvalMessage(raw json.RawMessage) (map[string]any, error) {
	var v seedMessageVector
	if err := DecodeVector(raw, &v); err != nil {
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
	return map[string]any{"message": Hex(seed.SeedMessage(ns, r))}, nil
}

// ---- seed_verify ----

type seedVerifyVector struct {
	Name      string `json:"name"`
	PublicKey string `json:"public_key"`
	Namespace string `json:"namespace"`
	Epoch     string `json:"epoch"`
	View      string `json:"view"`
	Signature string `json:"signature"`
	Valid     bool   `json:"valid"`
	Error     string `json:"error,omitempty"`
}

func seedGenVerify() ([]any, error) {
	pkA := seedKey().PublicKey()
	pkB := seed.DeriveSecretKey([]byte("cip11 conformance seed key v1 (other)")).PublicKey()
	pk, ns := Hex(pkA[:]), Hex([]byte(seedNamespace))
	sig := func(e, v uint64) string { s := seedSign(seed.Round{Epoch: e, View: v}); return Hex(s[:]) }
	s15 := seedSign(seed.Round{Epoch: 1, View: 5})
	neg := s15
	neg[0] ^= 0x20 // flip the y-sign flag: −sig, a valid G1 point that is not the seed
	zeros := strings.Repeat("00", 47)
	fieldP := "1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab"
	good := func(name, e, v, s string) seedVerifyVector {
		return seedVerifyVector{Name: name, PublicKey: pk, Namespace: ns, Epoch: e, View: v, Signature: s}
	}
	bad := func(name, key, e, v, s, want string) seedVerifyVector {
		return seedVerifyVector{Name: name, PublicKey: key, Namespace: ns, Epoch: e, View: v, Signature: s, Error: want}
	}
	s15h := Hex(s15[:])
	in := []seedVerifyVector{
		good("valid_round_1_5", "1", "5", s15h),
		good("valid_round_0_0", "0", "0", sig(0, 0)),
		good("valid_two_byte_varints", "300", "128", sig(300, 128)),
		good("valid_max_view", "3", seedMaxU64, sig(3, ^uint64(0))),
		{Name: "valid_empty_namespace", PublicKey: pk, Namespace: "", Epoch: "1", View: "5", Signature: seedSignNS(nil, 1, 5)},
		bad("wrong_view", pk, "1", "6", s15h, "ErrSeedSignatureInvalid"),
		bad("wrong_epoch", pk, "2", "5", s15h, "ErrSeedSignatureInvalid"),
		bad("epoch_view_swapped", pk, "5", "1", s15h, "ErrSeedSignatureInvalid"),
		{Name: "wrong_namespace", PublicKey: pk, Namespace: Hex([]byte("cowboy-conformancE")), Epoch: "1", View: "5", Signature: s15h, Error: "ErrSeedSignatureInvalid"},
		bad("wrong_public_key", Hex(pkB[:]), "1", "5", s15h, "ErrSeedSignatureInvalid"),
		bad("signature_negated", pk, "1", "5", Hex(neg[:]), "ErrSeedSignatureInvalid"),
		bad("signature_infinity", pk, "1", "5", "c0"+zeros, "ErrSignatureInfinity"),
		bad("signature_infinity_flag_nonzero_x", pk, "1", "5", "c0"+zeros[2:]+"01", "ErrSignatureEncoding"),
		bad("signature_infinity_with_sign_flag", pk, "1", "5", "e0"+zeros, "ErrSignatureEncoding"),
		bad("signature_uncompressed_flag", pk, "1", "5", "0"+s15h[1:], "ErrSignatureEncoding"),
		bad("signature_x_equals_field_modulus", pk, "1", "5", "9"+fieldP[1:], "ErrSignatureEncoding"),
		bad("signature_not_on_curve_x_1", pk, "1", "5", "80"+zeros[2:]+"01", "ErrSignatureNotOnCurve"),
		bad("signature_not_in_subgroup_x_0", pk, "1", "5", "80"+zeros, "ErrSignatureNotInSubgroup"),
		bad("signature_47_bytes", pk, "1", "5", s15h[:94], "ErrSeedSignatureLength"),
		bad("signature_49_bytes", pk, "1", "5", s15h+"00", "ErrSeedSignatureLength"),
		bad("signature_96_bytes_uncompressed", pk, "1", "5", seedUncompressedG1(s15), "ErrSeedSignatureLength"),
		bad("signature_empty", pk, "1", "5", "", "ErrSeedSignatureLength"),
		bad("public_key_infinity", "c0"+strings.Repeat("00", 95), "1", "5", s15h, "ErrPublicKeyInfinity"),
		bad("public_key_uncompressed_flag", "0"+pk[1:], "1", "5", s15h, "ErrPublicKeyEncoding"),
		bad("public_key_c1_equals_field_modulus", "9"+fieldP[1:]+strings.Repeat("00", 48), "1", "5", s15h, "ErrPublicKeyEncoding"),
		bad("public_key_not_on_curve_x_0", "80"+strings.Repeat("00", 95), "1", "5", s15h, "ErrPublicKeyNotOnCurve"),
		bad("public_key_not_in_subgroup_x_2", "80"+strings.Repeat("00", 94)+"02", "1", "5", s15h, "ErrPublicKeyNotInSubgroup"),
		bad("public_key_95_bytes", pk[:190], "1", "5", s15h, "ErrPublicKeyLength"),
		bad("public_key_48_bytes", pk[:96], "1", "5", s15h, "ErrPublicKeyLength"),
		bad("public_key_97_bytes", pk+"00", "1", "5", s15h, "ErrPublicKeyLength"),
		bad("public_key_defect_reported_first", "c0"+strings.Repeat("00", 95), "1", "5", "c0"+zeros, "ErrPublicKeyInfinity"),
	}
	return seedFill(in, func(v *seedVerifyVector) error {
		out, err := seedEvalVerify(seedRawJSON(v))
		if err == nil {
			v.Valid = out["valid"].(bool)
		}
		return seedExpect(v.Name, v.Error, err)
	})
}

func seedSignNS(ns []byte, e, v uint64) string {
	s, err := seed.SignSeed(seedKey(), ns, seed.Round{Epoch: e, View: v})
	if err != nil {
		panic(err)
	}
	return Hex(s[:])
}

// seedUncompressedG1 is the 96-byte uncompressed encoding of a valid signature.
func seedUncompressedG1(s seed.Signature) string {
	p, err := seed.DecodeSignature(s[:])
	if err != nil {
		panic(err)
	}
	raw := p.RawBytes()
	return Hex(raw[:])
}

func seedEvalVerify(raw json.RawMessage) (map[string]any, error) {
	var v seedVerifyVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	pk, err := Unhex(v.PublicKey)
	if err != nil {
		return nil, err
	}
	ns, err := Unhex(v.Namespace)
	if err != nil {
		return nil, err
	}
	sig, err := Unhex(v.Signature)
	if err != nil {
		return nil, err
	}
	r, err := seedRound(v.Epoch, v.View)
	if err != nil {
		return nil, err
	}
	if err := seed.VerifySeed(pk, ns, r, sig); err != nil {
		return nil, err
	}
	return map[string]any{"valid": true}, nil
}

// ---- consumed_seeds ----

type seedEntryJSON struct {
	SeedEpoch     string `json:"seed_epoch"`
	SeedView      string `json:"seed_view"`
	SeedSignature string `json:"seed_signature"`
}

type seedConsumedVector struct {
	Name    string           `json:"name"`
	Entries *[]seedEntryJSON `json:"entries,omitempty"`
	CBOR    *string          `json:"cbor,omitempty"`
	Error   string           `json:"error,omitempty"`
}

func seedEntry(e, v uint64) seedEntryJSON {
	s := seedSign(seed.Round{Epoch: e, View: v})
	return seedEntryJSON{seedU64s(e), seedU64s(v), Hex(s[:])}
}

func seedGenConsumed() ([]any, error) {
	a, b, c := seedEntry(1, 5), seedEntry(1, 300), seedEntry(2, 0)
	big := seedEntry(^uint64(0), ^uint64(0))
	short := a
	short.SeedSignature = a.SeedSignature[:94]
	list := func(es ...seedEntryJSON) *[]seedEntryJSON {
		es = append([]seedEntryJSON{}, es...) // non-nil: "entries": [] for the empty list
		return &es
	}
	sig := a.SeedSignature
	entry := "a3000101050258 30" + sig // {0: 1, 1: 5, 2: sig}
	entry = strings.ReplaceAll(entry, " ", "")
	in := []seedConsumedVector{
		{Name: "empty", Entries: list()},
		{Name: "one_entry", Entries: list(a)},
		{Name: "three_entries_two_epochs", Entries: list(a, b, c)},
		{Name: "max_u64_round", Entries: list(a, big)},
		{Name: "entries_unsorted", Entries: list(b, a), Error: "ErrConsumedSeedsUnsorted"},
		{Name: "entries_epoch_unsorted", Entries: list(c, b), Error: "ErrConsumedSeedsUnsorted"},
		{Name: "entries_duplicate_round", Entries: list(a, a), Error: "ErrConsumedSeedsDuplicateRound"},
		{Name: "entry_signature_47_bytes", Entries: list(short), Error: "ErrByteLength"},
		{Name: "decode_empty_input", CBOR: seedStr(""), Error: "ErrTruncated"},
		{Name: "decode_non_canonical_array_length", CBOR: seedStr("9801" + entry), Error: "ErrNonShortestInt"},
		{Name: "decode_non_canonical_epoch", CBOR: seedStr("81a300180101050258 30" + sig), Error: "ErrNonShortestInt"},
		{Name: "decode_non_canonical_view_uint16", CBOR: seedStr("81a30001011900050258 30" + sig), Error: "ErrNonShortestInt"},
		{Name: "decode_non_canonical_signature_length", CBOR: seedStr("81a3000101050259 0030" + sig), Error: "ErrNonShortestInt"},
		{Name: "decode_indefinite_array", CBOR: seedStr("9f" + entry + "ff"), Error: "ErrIndefiniteLength"},
		{Name: "decode_indefinite_map", CBOR: seedStr("81bf000101050258 30" + sig + "ff"), Error: "ErrIndefiniteLength"},
		{Name: "decode_indefinite_signature", CBOR: seedStr("81a3000101050" + "25f5830" + sig + "ff"), Error: "ErrIndefiniteLength"},
		{Name: "decode_trailing_bytes", CBOR: seedStr("81" + entry + "00"), Error: "ErrTrailingBytes"},
		{Name: "decode_two_arrays", CBOR: seedStr("8080"), Error: "ErrTrailingBytes"},
		{Name: "decode_signature_47_bytes", CBOR: seedStr("81a300010105025 82f" + sig[:94]), Error: "ErrByteLength"},
		{Name: "decode_signature_49_bytes", CBOR: seedStr("81a300010105025 831" + sig + "00"), Error: "ErrByteLength"},
		{Name: "decode_missing_seed_signature", CBOR: seedStr("81a200010105"), Error: "ErrMissingKey"},
		{Name: "decode_missing_seed_epoch", CBOR: seedStr("81a201050258 30" + sig), Error: "ErrMissingKey"},
		{Name: "decode_extra_key_3", CBOR: seedStr("81a4000101050258 30" + sig + "0300"), Error: "ErrUnknownKey"},
		{Name: "decode_map_keys_unsorted", CBOR: seedStr("81a301050001025830" + sig), Error: "ErrKeyOrder"},
		{Name: "decode_map_key_duplicated", CBOR: seedStr("81a300010001025830" + sig), Error: "ErrDuplicateKey"},
		{Name: "decode_text_key", CBOR: seedStr("81a3613000010105025830" + sig), Error: "ErrUnknownKey"},
		{Name: "decode_tag_on_array", CBOR: seedStr("d90103" + "81" + entry), Error: "ErrTag"},
		{Name: "decode_tag_on_epoch", CBOR: seedStr("81a300c1010105025830" + sig), Error: "ErrTag"},
		{Name: "decode_negative_epoch", CBOR: seedStr("81a300200105025830" + sig), Error: "ErrUnexpectedType"},
		{Name: "decode_float_view", CBOR: seedStr("81a3000101f93c00025830" + sig), Error: "ErrUnexpectedType"},
		{Name: "decode_text_signature", CBOR: seedStr("81a3000101050278 30" + sig), Error: "ErrUnexpectedType"},
		{Name: "decode_map_at_top_level", CBOR: seedStr("a0"), Error: "ErrUnexpectedType"},
		{Name: "decode_null_entry", CBOR: seedStr("81f6"), Error: "ErrUnexpectedType"},
		{Name: "decode_truncated_entry", CBOR: seedStr("81a3000101"), Error: "ErrTruncated"},
		{Name: "decode_truncated_signature", CBOR: seedStr("81a3000101050258 30" + sig[:90]), Error: "ErrTruncated"},
		{Name: "decode_array_length_exceeds_input", CBOR: seedStr("9bffffffffffffffff"), Error: "ErrTruncated"},
		{Name: "decode_entries_unsorted", CBOR: seedStr("82" + seedEntryHex(b) + entry), Error: "ErrConsumedSeedsUnsorted"},
		{Name: "decode_entries_duplicate_round", CBOR: seedStr("82" + entry + entry), Error: "ErrConsumedSeedsDuplicateRound"},
	}
	for i := range in {
		if in[i].CBOR != nil {
			*in[i].CBOR = strings.ReplaceAll(*in[i].CBOR, " ", "")
		}
	}
	return seedFill(in, func(v *seedConsumedVector) error {
		out, err := seedEvalConsumed(seedRawJSON(v))
		if err == nil && v.Entries != nil {
			v.CBOR = seedStr(out["cbor"].(string))
		}
		return seedExpect(v.Name, v.Error, err)
	})
}

func seedStr(s string) *string { return &s }

// seedEntryHex is the canonical CBOR of one entry, for building negatives.
func seedEntryHex(e seedEntryJSON) string {
	r, _ := seedRound(e.SeedEpoch, e.SeedView)
	s, _ := Unhex(e.SeedSignature)
	sig, _ := seed.SignatureFromBytes(s)
	b, _ := seed.ConsumedSeedsV1{{Round: r, Signature: sig}}.Encode()
	return Hex(b[1:])
}

func seedEvalConsumed(raw json.RawMessage) (map[string]any, error) {
	var v seedConsumedVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	var b []byte
	if v.CBOR != nil {
		var err error
		if b, err = Unhex(*v.CBOR); err != nil {
			return nil, err
		}
	}
	if v.Entries == nil {
		if v.CBOR == nil {
			return nil, fmt.Errorf("%w: neither entries nor cbor", ErrMalformedVector)
		}
		c, err := seed.DecodeConsumedSeedsV1(b)
		if err != nil {
			return nil, err
		}
		return map[string]any{"entries": seedEntriesJSON(c)}, nil
	}
	c := make(seed.ConsumedSeedsV1, len(*v.Entries))
	for i, e := range *v.Entries {
		var err error
		if c[i], err = seedEntryFromJSON(e); err != nil {
			return nil, err
		}
	}
	enc, err := c.Encode()
	if err != nil {
		return nil, err
	}
	if v.CBOR != nil { // a positive vector: the decoder must agree with it
		dec, err := seed.DecodeConsumedSeedsV1(b)
		if err != nil {
			return nil, fmt.Errorf("decoding the vector's cbor: %v", err) // deliberately not a sentinel
		}
		return map[string]any{"cbor": Hex(enc), "entries": seedEntriesJSON(dec)}, nil
	}
	return map[string]any{"cbor": Hex(enc)}, nil
}

func seedEntryFromJSON(e seedEntryJSON) (seed.ConsumedSeed, error) {
	r, err := seedRound(e.SeedEpoch, e.SeedView)
	if err != nil {
		return seed.ConsumedSeed{}, err
	}
	b, err := Unhex(e.SeedSignature)
	if err != nil {
		return seed.ConsumedSeed{}, err
	}
	if len(b) != seed.SignatureSize {
		return seed.ConsumedSeed{}, fmt.Errorf("%w: seed_signature of %d bytes", dcbor.ErrByteLength, len(b))
	}
	s, _ := seed.SignatureFromBytes(b)
	return seed.ConsumedSeed{Round: r, Signature: s}, nil
}

func seedEntriesJSON(c seed.ConsumedSeedsV1) []seedEntryJSON {
	out := make([]seedEntryJSON, len(c))
	for i, e := range c {
		out[i] = seedEntryJSON{seedU64s(e.Round.Epoch), seedU64s(e.Round.View), Hex(e.Signature[:])}
	}
	return out
}

// ---- shared generator plumbing ----

// seedFill completes each vector with fill and returns them as []any.
func seedFill[T any](in []T, fill func(*T) error) ([]any, error) {
	out := make([]any, len(in))
	for i := range in {
		if err := fill(&in[i]); err != nil {
			return nil, err
		}
		out[i] = in[i]
	}
	return out, nil
}

// seedExpect checks at generation time that a vector fails exactly as named.
func seedExpect(name, want string, err error) error {
	if want == "" {
		if err != nil {
			return fmt.Errorf("vector %s: %w", name, err)
		}
		return nil
	}
	got, serr := SentinelName(err)
	if err == nil || serr != nil || got != want {
		return fmt.Errorf("vector %s: want %s, got %v", name, want, err)
	}
	return nil
}
