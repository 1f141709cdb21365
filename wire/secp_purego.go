//go:build !cgo || gofuzz || cip11_purego

package wire

import "github.com/cip11/cip11"

// SecpBackend names the secp256k1 implementation this build uses: decred's
// pure Go (no cgo, or the cip11_purego tag). See the cgo build's SecpBackend.
const SecpBackend = "decred"

func recoverXY(d *cip11.Hash, sig *RunnerSig, xy *[64]byte) error {
	return recoverDecred(d, sig, xy)
}

func signRunner(k *RunnerKey, d *cip11.Hash, out *RunnerSig) error { return signDecred(k, d, out) }

func parseXY(c *[33]byte, xy *[64]byte) error { return parseDecred(c, xy) }
