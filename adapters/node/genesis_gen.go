package node

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/internal/devkeys"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

// Generating a genesis and its key files (cip11 genesis): the runner list,
// deterministic keys from a seed (internal/devkeys), writing a home.

// GenesisOptions shape a generated devnet genesis.
type GenesisOptions struct {
	ChainID uint64
	Seed    uint64 // key derivation seed: the same seed gives the same keys
	Runners int
	QUIC    string // validator UDP address (127.0.0.1:7011)
	HTTP    string // validator HTTP address (127.0.0.1:8011)
	Params  *cip11.Params
	// Extra are runners registered at genesis whose keys this genesis
	// does not hold (no key file is written for them), after the Runners
	// derived ones. A zero ReputationX1e9 is DefaultRunnerReputation.
	Extra []GenesisRunner
}

// DefaultRunnerStake and DefaultRunnerReputation are the stake (wei) and
// reputation of a genesis runner given without them (ParseGenesisRunner).
const (
	DefaultRunnerStake      = 1_000_000_000_000_000
	DefaultRunnerReputation = 1_000_000_000
)

// ParseGenesisRunner parses "ADDRESS[:STAKE]" (cip11 genesis -runner): a
// 20-byte address as 40 hex digits (an optional 0x prefix, either case)
// and a decimal stake in wei, not zero (default DefaultRunnerStake).
// Errors wrap ErrRunnerSpec.
func ParseGenesisRunner(spec string) (GenesisRunner, error) {
	addr, stake, found := strings.Cut(spec, ":")
	if found && stake == "" {
		return GenesisRunner{}, fmt.Errorf("%w: %q: empty stake after the colon", ErrRunnerSpec, spec)
	}
	return parseRunner(addr, stake)
}

func parseRunner(addr, stake string) (GenesisRunner, error) {
	r := GenesisRunner{Stake: cip11.U128From64(DefaultRunnerStake), ReputationX1e9: DefaultRunnerReputation}
	h := strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(addr, "0x"), "0X"))
	if err := r.Address.UnmarshalText([]byte(h)); err != nil {
		return r, fmt.Errorf("%w: address %q: %v (want 40 hex digits)", ErrRunnerSpec, addr, err)
	}
	if stake != "" {
		v, err := cip11.ParseU128(stake)
		if err != nil {
			return r, fmt.Errorf("%w: stake %q: %v (want a decimal amount in wei)", ErrRunnerSpec, stake, err)
		}
		r.Stake = v
	}
	if r.Stake.IsZero() {
		return r, fmt.Errorf("%w: %s: stake is zero", ErrRunnerSpec, addr)
	}
	return r, nil
}

// ReadGenesisRunners reads a runners file (cip11 genesis -runners-file):
// one "ADDRESS [STAKE]" per line, fields separated by blanks, "#" starting
// a comment, blank lines ignored. Addresses and stakes are those of
// ParseGenesisRunner; an address listed twice is an error. Errors wrap
// ErrRunnerSpec and name the line.
func ReadGenesisRunners(r io.Reader) ([]GenesisRunner, error) {
	var out []GenesisRunner
	seen := make(map[cip11.Address]int)
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) > 2 {
			return nil, fmt.Errorf("line %d: %w: %d fields, want ADDRESS [STAKE]", n, ErrRunnerSpec, len(f))
		}
		stake := ""
		if len(f) == 2 {
			stake = f[1]
		}
		g, err := parseRunner(f[0], stake)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if prev, ok := seen[g.Address]; ok {
			return nil, fmt.Errorf("line %d: %w: %s already listed on line %d", n, ErrRunnerSpec, g.Address, prev)
		}
		seen[g.Address] = n
		out = append(out, g)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRunnerSpec, err)
	}
	return out, nil
}

// DefaultGenesisParams are a generated genesis's §13 parameters
// (GenerateGenesis, cip11 genesis, the devnets): the defaults with the
// transport and present-first flags on and MRU active from block 1.
func DefaultGenesisParams() cip11.Params {
	p := cip11.DefaultParams()
	p.TransportEnabled = true
	p.PresentFirstEnabled = true
	p.MRUActivationHeight = 1
	return p
}

// GeneratedGenesis is a generated genesis with its secret keys
// (GenerateGenesis).
type GeneratedGenesis struct {
	Genesis    *Genesis
	Validator  *ValidatorKeys
	RunnerKeys []*wire.RunnerKey
}

func derive(label string, s, i uint64) [32]byte { return devkeys.Genesis(label, s, i) }

// GenerateGenesis derives a genesis and its keys from o. DEVNET ONLY:
// every secret is a function of o.Seed (internal/devkeys).
func GenerateGenesis(o GenesisOptions) (*GeneratedGenesis, error) {
	if o.Runners < 0 || o.Runners > 100_000 {
		return nil, fmt.Errorf("%w: %d runners", ErrGenesis, o.Runners)
	}
	if o.QUIC == "" {
		o.QUIC = "127.0.0.1:7011"
	}
	if o.HTTP == "" {
		o.HTTP = "127.0.0.1:8011"
	}
	if o.ChainID == 0 {
		o.ChainID = 7011
	}
	p := DefaultGenesisParams()
	if o.Params != nil {
		p = *o.Params
	}
	blsSeed := derive("bls", o.Seed, 0)
	vk, err := NewValidatorKeys(derive("ed25519", o.Seed, 0), seed.DeriveSecretKey(blsSeed[:]).Bytes())
	if err != nil {
		return nil, err
	}
	ns := []byte(fmt.Sprintf("cip11-devnet-%d", o.ChainID))
	sig, err := seed.SignSeed(vk.Threshold, ns, seed.Round{})
	if err != nil {
		return nil, err
	}
	rc := state.DefaultReputationConfig()
	g := &Genesis{
		Format: GenesisFormat, Version: GenesisVersion, ChainID: chainlog.U64(o.ChainID),
		Params: chainlog.ParamSet(p), Namespace: ns,
		Schedule:      chainlog.Schedule{ViewsPerEpoch: 100_000, FirstView: 1, LastKnownEpoch: 99},
		Reputation:    chainlog.ReputationConfig{Normalizer: chainlog.U64(rc.Normalizer), WMinFloorX1e6: chainlog.U64(rc.WMinFloorX1e6)},
		GenesisBeacon: chainlog.Beacon{Signature: chainlog.Signature(sig)},
		Validator: GenesisValidator{
			PeerPubKey: cip11.Hash(vk.Peer.PubKey().Raw()), ThresholdPubKey: vk.Threshold.PublicKey(),
			QUIC: o.QUIC, HTTP: o.HTTP,
		},
		Runners: []GenesisRunner{},
	}
	d := &GeneratedGenesis{Genesis: g, Validator: vk}
	for i := range o.Runners {
		k, err := wire.NewRunnerKey(derive("runner", o.Seed, uint64(i)))
		if err != nil {
			return nil, err
		}
		d.RunnerKeys = append(d.RunnerKeys, k)
		g.Runners = append(g.Runners, GenesisRunner{
			Address: k.Address(), Stake: cip11.U128From64(1_000_000_000_000_000 + uint64(i)*1_000_000_000_000),
			ReputationX1e9: DefaultRunnerReputation,
		})
	}
	for _, r := range o.Extra {
		if r.ReputationX1e9 == 0 {
			r.ReputationX1e9 = DefaultRunnerReputation
		}
		g.Runners = append(g.Runners, r)
	}
	return d, g.Validate()
}

// Write stores the devnet in dir: genesis.json, validator.key and
// runner-NNNN.key (mode 0600). It refuses, with ErrGenesisExists and no
// file written, when dir already holds any of genesis.json, validator.key
// or a runner-NNNN.key: a new genesis would orphan the chain that the old
// one started (its data directory no longer opens, docs/genesis.md).
func (d *GeneratedGenesis) Write(dir string, s uint64) error {
	for _, name := range d.fileNames(dir) {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return fmt.Errorf("%w: %s (a new genesis orphans the chain it started; remove the files or overwrite deliberately)",
				ErrGenesisExists, filepath.Join(dir, name))
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return d.Overwrite(dir, s)
}

// fileNames are the genesis and key files in dir: the ones d writes and
// every runner-NNNN.key already there.
func (d *GeneratedGenesis) fileNames(dir string) []string {
	names := []string{"genesis.json", "validator.key"}
	for i := range d.RunnerKeys {
		names = append(names, runnerKeyName(i))
	}
	old, _ := filepath.Glob(filepath.Join(dir, "runner-[0-9][0-9][0-9][0-9].key"))
	for _, p := range old {
		names = append(names, filepath.Base(p))
	}
	return names
}

func runnerKeyName(i int) string { return fmt.Sprintf("runner-%04d.key", i) }

// Overwrite is Write without the check: it replaces the genesis and key
// files in dir and removes runner-NNNN.key files beyond this devnet's
// runners (stale keys of the replaced genesis).
func (d *GeneratedGenesis) Overwrite(dir string, s uint64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "runner-[0-9][0-9][0-9][0-9].key"))
	for _, p := range old {
		var i int
		if _, err := fmt.Sscanf(filepath.Base(p), "runner-%04d.key", &i); err == nil && i >= len(d.RunnerKeys) {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	b, err := d.Genesis.Encode()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "genesis.json"), b, 0o644); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "validator.key"), validatorKeyFile{Ed25519Seed: d.Validator.seedBytes, BLSSecretKey: d.Validator.bls}, 0o600); err != nil {
		return err
	}
	for i, k := range d.RunnerKeys {
		f := runnerKeyFile{Address: k.Address(), Secret: devkeys.Runner(s, i)}
		if err := writeJSON(filepath.Join(dir, runnerKeyName(i)), f, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// WriteRunnerKey stores runner i's key file of devnet seed s in dir
// (runner-NNNN.key, mode 0600). DEVNET ONLY.
func WriteRunnerKey(dir string, s uint64, i int) error {
	k, err := wire.NewRunnerKey(devkeys.Runner(s, i))
	if err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, runnerKeyName(i)), runnerKeyFile{Address: k.Address(), Secret: devkeys.Runner(s, i)}, 0o600)
}
