//go:build cgo && !gofuzz && !cip11_purego

package wire

import (
	"github.com/cip11/cip11"
	libsecp "github.com/ethereum/go-ethereum/crypto/secp256k1"
)

// SecpBackend names the secp256k1 recovery this build uses: here
// libsecp256k1 (bitcoin-core's C library, through go-ethereum's cgo
// wrapper), about 4× faster than the pure-Go recovery on the validator's
// per-handshake and per-heartbeat path. Builds without cgo, or with the
// cip11_purego tag, use decred's pure Go; both give the same results
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
