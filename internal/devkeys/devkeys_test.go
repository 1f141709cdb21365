package devkeys

import (
	"encoding/hex"
	"testing"
)

// TestDerivationPinned pins the derived bytes: every generated genesis,
// network and key file of a devnet seed depends on them (the docs' and
// tests' seeds name these keys), so they must never change by accident.
func TestDerivationPinned(t *testing.T) {
	sub := Submitter(3)
	for name, c := range map[string]struct {
		got  []byte
		want string
	}{
		"Runner(1, 0)":           {slice(Runner(1, 0)), "eb0cb9ae1324b283d60207bfdc3f52d13b819c3fe0237bcbb07e1e712093975d"},
		"Genesis(bls, 7, 0)":     {slice(Genesis("bls", 7, 0)), "b834c092ba7a10f59f2eb95e07c65b89976cefc2be657cb0e44aa7b33f6e62c0"},
		"Network(ed25519, 1, 2)": {slice(Network("ed25519", 1, 2)), "a645a8fd71ac09eadb70b0c35e5397b596ff278539329d4f98eafcdf938584fc"},
		"Submitter(3)":           {sub[:], "c4675f0008f47ec2e13a50ee27a6c277c81c04b9"},
	} {
		if got := hex.EncodeToString(c.got); got != c.want {
			t.Errorf("%s = %s, want %s", name, got, c.want)
		}
	}
}

func slice(b [32]byte) []byte { return b[:] }
