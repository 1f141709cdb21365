package wire

import (
	"crypto/ed25519"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/dcbor"
	"github.com/cip11/cip11/internal/textform"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

// Scheme is a §12.6 wire `scheme_id`. Its byte equals the byte of the Role
// that signs with it, which is why [Role.Scheme] is a conversion.
type Scheme byte

// §12.6 scheme ids.
const (
	SchemeSecp256k1 Scheme = 0x01
	SchemeEd25519   Scheme = 0x02
)

// Wire sizes (§12.6): tagged key and signature lengths per scheme.
const (
	RunnerPubKeyLen    = 34 // 0x01 ‖ 33-byte compressed secp256k1
	ValidatorPubKeyLen = 33 // 0x02 ‖ 32-byte Ed25519
	RunnerSigLen       = 65 // r ‖ s ‖ v (D5)
	ValidatorSigLen    = 64 // RFC 8032
)

// KeyLen is the tagged wire length of a key of scheme s, or 0 if s is unknown. See §12.6.
func (s Scheme) KeyLen() int {
	switch s {
	case SchemeSecp256k1:
		return RunnerPubKeyLen
	case SchemeEd25519:
		return ValidatorPubKeyLen
	}
	return 0
}

// SigLen is the signature length of scheme s, or 0 if s is unknown. See §12.6.
func (s Scheme) SigLen() int {
	switch s {
	case SchemeSecp256k1:
		return RunnerSigLen
	case SchemeEd25519:
		return ValidatorSigLen
	}
	return 0
}

// PubKey is a §12.6 scheme-tagged wire public key: `scheme_id ‖ key_bytes`.
// The zero value is "no key"; every other value was validated by
// [ParsePubKey] (known scheme, matching length, and for secp256k1 a valid
// compressed point). PubKey is comparable: equal values are byte-identical.
type PubKey struct {
	b [RunnerPubKeyLen]byte
	n uint8
}

// ParsePubKey validates a wire PubKey (§12.6 "Scheme-tagged keys").
func ParsePubKey(b []byte) (PubKey, error) {
	var k PubKey
	if len(b) == 0 {
		return k, fmt.Errorf("%w: empty", ErrPubKeyLength)
	}
	want := Scheme(b[0]).KeyLen()
	switch {
	case want == 0:
		return k, fmt.Errorf("%w: 0x%02x", ErrPubKeyScheme, b[0])
	case len(b) != want:
		return k, fmt.Errorf("%w: scheme 0x%02x with %d bytes, want %d", ErrPubKeyLength, b[0], len(b), want)
	}
	if Scheme(b[0]) == SchemeSecp256k1 {
		if b[1] != 0x02 && b[1] != 0x03 {
			return k, fmt.Errorf("%w: prefix 0x%02x is not compressed", ErrPubKeyPoint, b[1])
		}
		var xy [64]byte
		if err := parseXY((*[33]byte)(b[1:]), &xy); err != nil {
			return k, fmt.Errorf("%w: %v", ErrPubKeyPoint, err)
		}
	}
	k.n = uint8(copy(k.b[:], b))
	return k, nil
}

// RunnerPubKey tags a secp256k1 public key (§12.6 scheme 0x01, compressed).
func RunnerPubKey(pub *secp256k1.PublicKey) PubKey {
	return runnerPubKey([33]byte(pub.SerializeCompressed()))
}

// runnerPubKey tags a 33-byte SEC1 compressed key known to be valid.
func runnerPubKey(c [33]byte) PubKey {
	k := PubKey{n: RunnerPubKeyLen}
	k.b[0] = byte(SchemeSecp256k1)
	copy(k.b[1:], c[:])
	return k
}

// ValidatorPubKey tags a raw Ed25519 peer_pubkey (§12.6 scheme 0x02).
func ValidatorPubKey(raw [32]byte) PubKey {
	k := PubKey{n: ValidatorPubKeyLen}
	k.b[0] = byte(SchemeEd25519)
	copy(k.b[1:], raw[:])
	return k
}

// IsZero reports whether k is the zero "no key" value. See §12.6.
func (k PubKey) IsZero() bool { return k.n == 0 }

// Bytes returns the tagged wire bytes (a copy). See §12.6.
func (k PubKey) Bytes() []byte { return append([]byte(nil), k.b[:k.n]...) }

// Scheme returns the key's scheme_id. See §12.6.
func (k PubKey) Scheme() Scheme { return Scheme(k.b[0]) }

// Raw returns the tag-stripped key bytes (§12.6 "Authoritative state keys are raw").
func (k PubKey) Raw() []byte {
	if k.n == 0 {
		return nil
	}
	return append([]byte(nil), k.b[1:k.n]...)
}

// CheckRole requires k's scheme to be the one role r signs with (§12.6:
// role-scheme mismatch is fatal).
func (k PubKey) CheckRole(r Role) error {
	if k.n == 0 || k.Scheme() != r.Scheme() {
		return fmt.Errorf("%w: %s key with scheme 0x%02x", ErrPubKeyRole, r, k.b[0])
	}
	return nil
}

// String returns the tagged key as lowercase hex (§12.6).
func (k PubKey) String() string { return textform.Hex(k.b[:k.n]) }

// MarshalText writes lowercase hex of the tagged bytes (D18). See §12.6.
func (k PubKey) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses hex and validates like [ParsePubKey]. See §12.6.
func (k *PubKey) UnmarshalText(b []byte) error {
	raw, err := textform.ParseHex(b)
	if err != nil {
		return err
	}
	v, err := ParsePubKey(raw)
	*k = v
	return err
}

// RunnerAddress derives the runner's EVM address (DECISIONS D4): the last 20
// bytes of keccak256(X‖Y) of the uncompressed key. See §12.6.
func (k PubKey) RunnerAddress() (cip11.Address, error) {
	var a cip11.Address
	if err := k.CheckRole(RoleRunner); err != nil {
		return a, err
	}
	var xy [64]byte
	if err := parseXY((*[33]byte)(k.b[1:RunnerPubKeyLen]), &xy); err != nil {
		return a, fmt.Errorf("%w: %v", ErrPubKeyPoint, err)
	}
	return addressOfXY(&xy), nil
}

func addressOf(pub *secp256k1.PublicKey) cip11.Address {
	xy := [64]byte(pub.SerializeUncompressed()[1:])
	return addressOfXY(&xy)
}

// Sig is a §12.6 role-scheme signature whose role is not fixed by the frame
// (HelloAck.signed_challenge, Goodbye.signed): 65 bytes for a runner, 64 for
// a validator. The zero value is "no signature".
type Sig struct {
	b [RunnerSigLen]byte
	n uint8
}

// ParseSig accepts a 64- or 65-byte signature; which one a frame needs is
// checked against the signer's role ([Sig.CheckRole]). See §12.6.
func ParseSig(b []byte) (Sig, error) {
	var s Sig
	if len(b) != RunnerSigLen && len(b) != ValidatorSigLen {
		return s, fmt.Errorf("%w: %d bytes", ErrSigLength, len(b))
	}
	s.n = uint8(copy(s.b[:], b))
	return s, nil
}

// IsZero reports whether s is the zero "no signature" value. See §12.6.
func (s Sig) IsZero() bool { return s.n == 0 }

// Bytes returns the signature bytes (a copy). See §12.6.
func (s Sig) Bytes() []byte { return append([]byte(nil), s.b[:s.n]...) }

// CheckRole requires s's length to be role r's scheme length (§12.6).
func (s Sig) CheckRole(r Role) error {
	if int(s.n) != r.Scheme().SigLen() {
		return fmt.Errorf("%w: %d bytes for a %s", ErrSigLength, s.n, r)
	}
	return nil
}

// MarshalText writes lowercase hex (D18). See §12.6.
func (s Sig) MarshalText() ([]byte, error) { return hexText(s.b[:s.n]), nil }

// UnmarshalText parses hex and validates like [ParseSig]. See §12.6.
func (s *Sig) UnmarshalText(b []byte) error {
	raw, err := textform.ParseHex(b)
	if err != nil {
		return err
	}
	v, err := ParseSig(raw)
	*s = v
	return err
}

// RunnerSig is a runner's 65-byte `r ‖ s ‖ v` secp256k1 signature (D5). See §12.6.
type RunnerSig [RunnerSigLen]byte

// ValidatorSig is a validator's 64-byte Ed25519 signature (D5). See §12.6.
type ValidatorSig [ValidatorSigLen]byte

// MarshalText writes lowercase hex (D18). See §12.6.
func (s RunnerSig) MarshalText() ([]byte, error) { return hexText(s[:]), nil }

// UnmarshalText reads exactly 130 hex digits. See §12.6.
func (s *RunnerSig) UnmarshalText(b []byte) error { return unhexFixed(s[:], b) }

// MarshalText writes lowercase hex (D18). See §12.6.
func (s ValidatorSig) MarshalText() ([]byte, error) { return hexText(s[:]), nil }

// UnmarshalText reads exactly 128 hex digits. See §12.6.
func (s *ValidatorSig) UnmarshalText(b []byte) error { return unhexFixed(s[:], b) }

// Sig widens a runner signature to the role-agnostic type. See §12.6.
func (s RunnerSig) Sig() Sig { v, _ := ParseSig(s[:]); return v }

// Sig widens a validator signature to the role-agnostic type. See §12.6.
func (s ValidatorSig) Sig() Sig { v, _ := ParseSig(s[:]); return v }

// Bytes is a variable-length byte string (`Vec<u8>`) written as hex in vectors. See §12.6.
type Bytes []byte

// MarshalText writes lowercase hex (D18). See §12.6.
func (b Bytes) MarshalText() ([]byte, error) { return hexText(b), nil }

// UnmarshalText reads hex. See §12.6.
func (b *Bytes) UnmarshalText(t []byte) error {
	v, err := textform.ParseHex(t)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

func hexText(b []byte) []byte { return textform.AppendHex(nil, b) }

func unhexFixed(dst, src []byte) error {
	if len(src) != 2*len(dst) {
		return fmt.Errorf("%w: %d hex digits, want %d", dcbor.ErrByteLength, len(src), 2*len(dst))
	}
	return textform.ParseHexInto(dst, src)
}

// Signer produces role-scheme signatures over §12.6 digests.
type Signer interface {
	Role() Role
	PubKey() PubKey
	SignDigest(d cip11.Hash) (Sig, error)
}

// RunnerKey is a runner's secp256k1 identity key (§3.3 "Runner identity").
type RunnerKey struct {
	priv *secp256k1.PrivateKey
	pub  PubKey
	addr cip11.Address
}

// NewRunnerKey wraps a 32-byte secp256k1 secret (reduced mod N; must be non-zero). See §12.6.
func NewRunnerKey(secret [32]byte) (*RunnerKey, error) {
	priv := secp256k1.PrivKeyFromBytes(secret[:])
	if priv.Key.IsZero() {
		return nil, fmt.Errorf("%w: zero secp256k1 secret", ErrPubKeyPoint)
	}
	pub := priv.PubKey()
	return &RunnerKey{priv: priv, pub: RunnerPubKey(pub), addr: addressOf(pub)}, nil
}

// Role is RoleRunner. See §12.6.
func (k *RunnerKey) Role() Role { return RoleRunner }

// PubKey returns the tagged compressed key. See §12.6.
func (k *RunnerKey) PubKey() PubKey { return k.pub }

// Address returns the runner's D4 address. See §12.6.
func (k *RunnerKey) Address() cip11.Address { return k.addr }

// Sign returns the D5 signature `r ‖ s ‖ v` over d (RFC 6979, low-s),
// through the build's backend ([SecpBackend]). See §12.6.
func (k *RunnerKey) Sign(d cip11.Hash) (RunnerSig, error) {
	var out RunnerSig
	if err := signRunner(k, &d, &out); err != nil {
		return out, err
	}
	if out[64] > 1 {
		// r overflowed N (probability ~2^-128): D5's v has no room for it.
		return RunnerSig{}, fmt.Errorf("%w: recovery code %d", ErrSigRecoveryID, out[64])
	}
	return out, nil
}

// signDecred is the pure-Go signing reference (decred, RFC 6979): out is
// r ‖ s ‖ recovery code (0–3; the caller refuses codes above 1).
func signDecred(k *RunnerKey, d *cip11.Hash, out *RunnerSig) error {
	c := ecdsa.SignCompact(k.priv, d[:], true) // [27+4+code] ‖ r ‖ s
	copy(out[:64], c[1:])
	out[64] = c[0] - 31
	return nil
}

// parseDecred is the pure-Go reference for a 33-byte SEC1 compressed key:
// valid (x < p, on the curve) or an error, and its X‖Y.
func parseDecred(c *[33]byte, xy *[64]byte) error {
	pub, err := secp256k1.ParsePubKey(c[:])
	if err != nil {
		return err
	}
	copy(xy[:], pub.SerializeUncompressed()[1:])
	return nil
}

// SignDigest implements [Signer]. See §12.6.
func (k *RunnerKey) SignDigest(d cip11.Hash) (Sig, error) {
	s, err := k.Sign(d)
	return s.Sig(), err
}

// ValidatorKey is a validator's Ed25519 peer identity key (§3.3).
type ValidatorKey struct {
	priv ed25519.PrivateKey
	pub  PubKey
}

// NewValidatorKey derives the key from its RFC 8032 seed. See §12.6.
func NewValidatorKey(seed [32]byte) *ValidatorKey {
	priv := ed25519.NewKeyFromSeed(seed[:])
	var raw [32]byte
	copy(raw[:], priv.Public().(ed25519.PublicKey))
	return &ValidatorKey{priv: priv, pub: ValidatorPubKey(raw)}
}

// Role is RoleValidator. See §12.6.
func (k *ValidatorKey) Role() Role { return RoleValidator }

// PubKey returns the tagged key. See §12.6.
func (k *ValidatorKey) PubKey() PubKey { return k.pub }

// Sign returns the Ed25519 signature over the 32-byte digest (D5). See §12.6.
func (k *ValidatorKey) Sign(d cip11.Hash) ValidatorSig {
	var out ValidatorSig
	copy(out[:], ed25519.Sign(k.priv, d[:]))
	return out
}

// SignDigest implements [Signer]. See §12.6.
func (k *ValidatorKey) SignDigest(d cip11.Hash) (Sig, error) { return k.Sign(d).Sig(), nil }

// RecoverRunner recovers the signing key from a D5 runner signature,
// enforcing v ∈ {0,1} and low-s (§12.6, D5).
func RecoverRunner(d cip11.Hash, sig RunnerSig) (PubKey, error) {
	xy, err := recoverRunner(d, &sig)
	if err != nil {
		return PubKey{}, err
	}
	return runnerPubKey(compressedXY(&xy)), nil
}

// RecoverRunnerAddress recovers the D4 address of a runner signature's signer. See §12.6.
func RecoverRunnerAddress(d cip11.Hash, sig RunnerSig) (cip11.Address, error) {
	xy, err := recoverRunner(d, &sig)
	if err != nil {
		return cip11.Address{}, err
	}
	return addressOfXY(&xy), nil
}

// recoverRunner checks D5's v ∈ {0,1} and low-s (§12.6), then recovers
// the signer as the 64-byte X‖Y of its uncompressed key through the
// build's backend ([SecpBackend]).
func recoverRunner(d cip11.Hash, sig *RunnerSig) (xy [64]byte, err error) {
	if sig[64] > 1 {
		return xy, fmt.Errorf("%w: v = %d", ErrSigRecoveryID, sig[64])
	}
	var s secp256k1.ModNScalar
	if overflow := s.SetByteSlice(sig[32:64]); overflow || s.IsOverHalfOrder() {
		return xy, ErrSigHighS
	}
	if err := recoverXY(&d, sig, &xy); err != nil {
		return xy, fmt.Errorf("%w: %v", ErrSigInvalid, err)
	}
	return xy, nil
}

// recoverDecred is the pure-Go recovery (decred secp256k1), the backend
// of builds without cgo and the reference the libsecp256k1 backend is
// checked against (TestSecpBackendsAgree). sig's v and s are checked.
func recoverDecred(d *cip11.Hash, sig *RunnerSig, xy *[64]byte) error {
	var c [RunnerSigLen]byte
	c[0] = 31 + sig[64]
	copy(c[1:], sig[:64])
	pub, _, err := ecdsa.RecoverCompact(c[:], d[:])
	if err != nil {
		return err
	}
	copy(xy[:], pub.SerializeUncompressed()[1:])
	return nil
}

// compressedXY is the 33-byte SEC1 compressed form of X‖Y.
func compressedXY(xy *[64]byte) (c [33]byte) {
	c[0] = 0x02 | xy[63]&1
	copy(c[1:], xy[:32])
	return c
}

// addressOfXY is the D4 address: the last 20 bytes of keccak256(X‖Y).
func addressOfXY(xy *[64]byte) (a cip11.Address) {
	h := cip11.Keccak256(xy[:])
	copy(a[:], h[12:])
	return a
}

// VerifyRunner checks a runner signature over d against the wire key want. See §12.6.
func VerifyRunner(d cip11.Hash, sig RunnerSig, want PubKey) error {
	if err := want.CheckRole(RoleRunner); err != nil {
		return err
	}
	xy, err := recoverRunner(d, &sig)
	if err != nil {
		return err
	}
	if [33]byte(want.b[1:RunnerPubKeyLen]) != compressedXY(&xy) {
		return fmt.Errorf("%w: recovered a different key", ErrSigInvalid)
	}
	return nil
}

// VerifyRunnerAddress checks that a runner signature over d recovers addr
// (§3.3: the recovered EVM address MUST equal RunnerRegistration.address).
func VerifyRunnerAddress(d cip11.Hash, sig RunnerSig, addr cip11.Address) error {
	got, err := RecoverRunnerAddress(d, sig)
	if err != nil {
		return err
	}
	if got != addr {
		return fmt.Errorf("%w: recovered %s, want %s", ErrSigSignerMismatch, got, addr)
	}
	return nil
}

// VerifyValidator checks an Ed25519 signature over d under the tagged key. See §12.6.
func VerifyValidator(d cip11.Hash, sig ValidatorSig, pub PubKey) error {
	if err := pub.CheckRole(RoleValidator); err != nil {
		return err
	}
	if !ed25519.Verify(ed25519.PublicKey(pub.b[1:ValidatorPubKeyLen]), d[:], sig[:]) {
		return ErrSigInvalid
	}
	return nil
}

// VerifySig checks a role-scheme signature: role, key scheme and signature
// length must all agree before the scheme's verification runs (§12.6).
func VerifySig(role Role, pub PubKey, d cip11.Hash, sig Sig) error {
	if err := pub.CheckRole(role); err != nil {
		return err
	}
	if err := sig.CheckRole(role); err != nil {
		return err
	}
	if role == RoleRunner {
		return VerifyRunner(d, RunnerSig(sig.b), pub)
	}
	return VerifyValidator(d, ValidatorSig(sig.b[:ValidatorSigLen]), pub)
}
