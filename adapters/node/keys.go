package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/wire"
)

// Key files: a validator's Ed25519 peer seed and BLS threshold shares
// (validator.key), a runner's secp256k1 key (runner-NNNN.key).

// ValidatorKeys are the sole validator's secrets.
type ValidatorKeys struct {
	Peer *wire.ValidatorKey // Ed25519 peer identity (§3.3)
	// Threshold is the BLS12-381 seed key (§9.2): the 1-of-1 key of a
	// single validator, or a network validator's epoch-0 share (D31).
	Threshold seed.SecretKey
	seedBytes [32]byte
	bls       [32]byte
	mu        sync.Mutex       // shares: the devnet dealer adds them while the node runs
	shares    []epochShareFile // a network validator's shares of later epochs
}

type validatorKeyFile struct {
	Ed25519Seed  cip11.Hash       `json:"ed25519_seed"`
	BLSSecretKey cip11.Hash       `json:"bls_secret_key"`
	EpochShares  []epochShareFile `json:"epoch_shares,omitempty"`
}

type epochShareFile struct {
	Epoch  chainlog.U64 `json:"epoch"`
	Secret cip11.Hash   `json:"bls_secret_key"`
}

// AddEpochShare adds the validator's threshold share of epoch e ≥ 1
// (DEVNET: dealt at genesis, D31); epochs are added in ascending order.
func (k *ValidatorKeys) AddEpochShare(e uint64, secret [32]byte) error {
	if _, err := seed.SecretKeyFromBytes(secret[:]); err != nil {
		return fmt.Errorf("%w: epoch %d share: %v", ErrKeyFile, e, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if e == 0 || (len(k.shares) > 0 && uint64(k.shares[len(k.shares)-1].Epoch) >= e) {
		return fmt.Errorf("%w: epoch %d share out of order", ErrKeyFile, e)
	}
	k.shares = append(k.shares, epochShareFile{Epoch: chainlog.U64(e), Secret: secret})
	return nil
}

// Share is the validator's threshold share of epoch e: Threshold for
// epoch 0, an added share otherwise (ok false: none).
func (k *ValidatorKeys) Share(e uint64) (seed.SecretKey, bool) {
	if e == 0 {
		return k.Threshold, true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, s := range k.shares {
		if uint64(s.Epoch) == e {
			sk, err := seed.SecretKeyFromBytes(s.Secret[:])
			return sk, err == nil
		}
	}
	return seed.SecretKey{}, false
}

type runnerKeyFile struct {
	Address cip11.Address `json:"address"`
	Secret  cip11.Hash    `json:"secp256k1_secret"`
}

// NewValidatorKeys builds the validator's keys from their secret bytes.
func NewValidatorKeys(ed25519Seed, blsSecret [32]byte) (*ValidatorKeys, error) {
	sk, err := seed.SecretKeyFromBytes(blsSecret[:])
	if err != nil {
		return nil, fmt.Errorf("%w: bls key: %v", ErrKeyFile, err)
	}
	return &ValidatorKeys{Peer: wire.NewValidatorKey(ed25519Seed), Threshold: sk, seedBytes: ed25519Seed, bls: blsSecret}, nil
}

// LoadValidatorKeys reads a validator key file.
func LoadValidatorKeys(path string) (*ValidatorKeys, error) {
	var f validatorKeyFile
	if err := readStrict(path, &f); err != nil {
		return nil, err
	}
	k, err := NewValidatorKeys(f.Ed25519Seed, f.BLSSecretKey)
	if err != nil {
		return nil, err
	}
	for _, sh := range f.EpochShares {
		if err := k.AddEpochShare(uint64(sh.Epoch), sh.Secret); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return k, nil
}

// LoadRunnerKey reads a runner key file and checks its address.
func LoadRunnerKey(path string) (*wire.RunnerKey, error) {
	var f runnerKeyFile
	if err := readStrict(path, &f); err != nil {
		return nil, err
	}
	k, err := wire.NewRunnerKey(f.Secret)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrKeyFile, err)
	}
	if k.Address() != f.Address {
		return nil, fmt.Errorf("%s: %w: the key is %s's, the file says %s", path, ErrKeyFile, k.Address(), f.Address)
	}
	return k, nil
}

func readStrict(path string, dst any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := decodeStrict(b, dst); err != nil {
		return fmt.Errorf("%s: %w: %v", path, ErrKeyFile, err)
	}
	return nil
}

func writeJSON(path string, v any, mode os.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), mode)
}

// Write stores the keys as a validator.key file (mode 0600).
func (k *ValidatorKeys) Write(path string) error {
	k.mu.Lock()
	shares := slices.Clone(k.shares)
	k.mu.Unlock()
	// Atomically (a temporary file, synced, renamed): a running node
	// rewrites it when the devnet dealer hands it a share, and a crash
	// then must leave the old file or the new one, never neither.
	tmp := path + ".tmp"
	if err := writeJSON(tmp, validatorKeyFile{Ed25519Seed: k.seedBytes, BLSSecretKey: k.bls, EpochShares: shares}, 0o600); err != nil {
		return err
	}
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	serr := f.Sync()
	if err := errors.Join(serr, f.Close()); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Ed25519Seed is the peer key's seed: on a network, the CometBFT node key
// is the same Ed25519 key (D29: peer_pubkey is the p2p identity).
func (k *ValidatorKeys) Ed25519Seed() [32]byte { return k.seedBytes }
