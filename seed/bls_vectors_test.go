package seed

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
)

// nulDST is the DST of the external noble-curves MinSig vectors
// (shared/vectors/README.md); seeds use SeedDST (POP).
const nulDST = "BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_"

const nulVectors = "../../shared/vectors/bls12381/min_sig_nul_dst.txt"

// TestMinSigNULVectors checks the BLS primitive (hash-to-G1, signing, point
// encoding, verification) against all 128 external noble-curves vectors
// (§9.2, DECISIONS D12): derive pk = sk·g2, sign, compare the signature
// bytes, then verify.
func TestMinSigNULVectors(t *testing.T) {
	f, err := os.Open(nulVectors)
	if err != nil {
		t.Fatalf("external vectors: %v", err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		parts := strings.Split(line, ":")
		if len(parts) != 3 {
			t.Fatalf("line %d: %d fields", n+1, len(parts))
		}
		skb, _ := hex.DecodeString(parts[0])
		msg, _ := hex.DecodeString(parts[1])
		want, _ := hex.DecodeString(parts[2])
		sk, err := SecretKeyFromBytes(skb)
		if err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		sig, err := sk.sign(msg, nulDST)
		if err != nil || !bytes.Equal(sig[:], want) {
			t.Fatalf("line %d: signature %x, want %x (%v)", n+1, sig, want, err)
		}
		pkb := sk.PublicKey()
		pk, err := DecodePublicKey(pkb[:])
		if err != nil {
			t.Fatalf("line %d: public key: %v", n+1, err)
		}
		if err := verifyMsg(&pk, msg, want, nulDST); err != nil {
			t.Fatalf("line %d: verify: %v", n+1, err)
		}
		if err := verifyMsg(&pk, append(msg, 0), want, nulDST); !errors.Is(err, ErrSeedSignatureInvalid) {
			t.Fatalf("line %d: extended message verified: %v", n+1, err)
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 128 {
		t.Fatalf("checked %d vectors, want 128", n)
	}
}
