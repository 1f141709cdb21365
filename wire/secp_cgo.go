//go:build cgo && !gofuzz && !cip11_purego

package wire

import (
	"errors"

	"github.com/cip11/cip11"
	libsecp "github.com/ethereum/go-ethereum/crypto/secp256k1"
)

// SecpBackend names the secp256k1 implementation this build uses for
// recovery, signing and key parsing: here libsecp256k1 (bitcoin-core's C
// library, through go-ethereum's cgo wrapper), about 4× faster recovery
// than the pure Go on the validator's per-handshake and per-heartbeat
// path. Builds without cgo, or with the cip11_purego tag, use decred's
// pure Go; both give the same bytes and the same verdicts
// (TestSecpBackendsAgree, and every golden vector under either build).
const SecpBackend = "libsecp256k1"

// recoverXY recovers the signer of sig (v and s already checked) as X‖Y.
func recoverXY(d *cip11.Hash, sig *RunnerSig, xy *[64]byte) error {
	pub, err := libsecp.RecoverPubkey(d[:], sig[:])
	if err != nil {
		return err
	}
	if len(pub) != 65 || pub[0] != 0x04 {
		return libsecp.ErrRecoverFailed
	}
	copy(xy[:], pub[1:])
	return nil
}

// signRunner signs d with RFC 6979 nonces and low s, like signDecred.
func signRunner(k *RunnerKey, d *cip11.Hash, out *RunnerSig) error {
	secret := k.priv.Key.Bytes()
	sig, err := libsecp.Sign(d[:], secret[:])
	clear(secret[:])
	if err != nil {
		return err
	}
	copy(out[:], sig)
	return nil
}

var errNotOnCurve = errors.New("not a secp256k1 point")

// parseXY validates a compressed key and returns X‖Y, like parseDecred.
func parseXY(c *[33]byte, xy *[64]byte) error {
	x, y := libsecp.DecompressPubkey(c[:])
	if x == nil || y == nil {
		return errNotOnCurve
	}
	x.FillBytes(xy[:32])
	y.FillBytes(xy[32:])
	return nil
}
