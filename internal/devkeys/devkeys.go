// Package devkeys derives the deterministic secrets of generated devnets
// and test networks: every key is a function of a devnet seed, so a genesis
// and its key files can be regenerated from (seed, counts) alone. DEVNET
// ONLY: whoever knows the seed holds every key. No production genesis may
// use them.
package devkeys

import (
	"encoding/binary"

	"github.com/cip11/cip11"
)

// Genesis is the secret labelled label, number i, of a single-validator
// genesis of seed s (node.GenerateGenesis: "ed25519", "bls", "runner").
func Genesis(label string, s, i uint64) [32]byte {
	return derive("cip11-devnet-genesis/"+label, s, i)
}

// Network is the secret labelled label, number i, of a generated network of
// seed s (cometbft.NewNetwork: peer and vote keys, the dealer's
// randomness, the admin key).
func Network(label string, s, i uint64) [32]byte {
	return derive("cip11-network/"+label, s, i)
}

// Runner is runner i's secp256k1 secret of seed s: the genesis runners'
// keys of both generators.
func Runner(s uint64, i int) [32]byte { return Genesis("runner", s, uint64(i)) }

// Submitter is the devnets' i-th job submitter address.
func Submitter(i int) cip11.Address {
	h := cip11.Keccak256([]byte("cip11-devnet/submitter"), []byte{byte(i)})
	return cip11.Address(h[12:])
}

func derive(label string, s, i uint64) [32]byte {
	return cip11.Keccak256([]byte(label), binary.BigEndian.AppendUint64(nil, s), binary.BigEndian.AppendUint64(nil, i))
}
