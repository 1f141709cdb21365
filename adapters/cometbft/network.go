package cometbft

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cmtcfg "github.com/cometbft/cometbft/config"
	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/p2p"
	"github.com/cometbft/cometbft/privval"
	cmttypes "github.com/cometbft/cometbft/types"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/seed"
)

// NetworkOptions describe a generated network (DEVNET ONLY: every secret,
// the threshold shares included, is a function of Seed; D31's dealer).
type NetworkOptions struct {
	Validators int    // n ≥ 1
	Runners    int    // genesis runners
	Seed       uint64 // the devnet seed
	ChainID    uint64 // default 7011
	// BasePort: validator i listens on BasePort+10·i (CometBFT p2p),
	// +1 (QUIC, UDP) and +2 (HTTP API); default 26600.
	BasePort int
	// Host of every address (default 127.0.0.1).
	Host string
	// Params override the devnet parameters (node.DevnetParams).
	Params *cip11.Params
	// Timeouts of CometBFT's consensus (defaults: propose 400 ms, prevote
	// and precommit 100 ms, commit 0).
	TimeoutPropose, TimeoutVote, TimeoutCommit time.Duration
}

// Network is a generated network: one home per validator and the runner
// keys' seed.
type Network struct {
	Opts  NetworkOptions
	Homes []*Home // by share index − 1 (validator_set order)
}

// Home is one validator's files (WriteHome's layout):
//
//	cip11.json              the CIP-11 genesis (node.Genesis, this validator's)
//	validator.key           Ed25519 peer seed and BLS threshold share (0600)
//	config/config.toml      CometBFT's configuration (peers, timeouts)
//	config/genesis.json     CometBFT's genesis (validators named cip11-v<i>)
//	config/node_key.json    the p2p key: the peer key (D29)
//	config/priv_validator_key.json  the vote-signing key (separate, D29)
//	data/                   CometBFT's stores
//	node/                   the validator's data directory (state, block log)
type Home struct {
	Dir     string
	Genesis *node.Genesis
	Keys    *node.ValidatorKeys
	Config  *cmtcfg.Config
	GenDoc  *cmttypes.GenesisDoc
	NodeKey *p2p.NodeKey
	VoteKey cmted25519.PrivKey
	Index   int // share index − 1
}

func derive(label string, s, i uint64) [32]byte {
	return cip11.Keccak256([]byte("cip11-network/"+label), binary.BigEndian.AppendUint64(nil, s), binary.BigEndian.AppendUint64(nil, i))
}

type keccakReader struct {
	s   uint64
	ctr uint64
	buf []byte
}

func (r *keccakReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.buf) == 0 {
			h := derive("dealer", r.s, r.ctr)
			r.ctr++
			r.buf = h[:]
		}
		c := copy(p[n:], r.buf)
		r.buf = r.buf[c:]
		n += c
	}
	return n, nil
}

// NewNetwork derives a network's genesis, keys and configurations (in
// memory; Write stores them under a directory).
func NewNetwork(o NetworkOptions) (*Network, error) {
	if o.Validators < 1 || o.Validators > seed.MaxShares || o.Validators > 64 {
		return nil, fmt.Errorf("%w: %d validators (1 … 64)", node.ErrBadRequest, o.Validators)
	}
	if o.ChainID == 0 {
		o.ChainID = 7011
	}
	if o.BasePort == 0 {
		o.BasePort = 26600
	}
	if o.BasePort < 1024 || o.BasePort+10*o.Validators > 65535 {
		return nil, fmt.Errorf("%w: base port %d for %d validators", node.ErrBadRequest, o.BasePort, o.Validators)
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.TimeoutPropose == 0 {
		o.TimeoutPropose = 400 * time.Millisecond
	}
	if o.TimeoutVote == 0 {
		o.TimeoutVote = 100 * time.Millisecond
	}
	// The CIP-11 genesis of a one-validator devnet, then the network's set.
	d, err := node.NewDevnet(node.GenesisOptions{Runners: o.Runners, Seed: o.Seed, ChainID: o.ChainID, Params: o.Params,
		QUIC: fmt.Sprintf("%s:%d", o.Host, o.BasePort+1), HTTP: fmt.Sprintf("%s:%d", o.Host, o.BasePort+2)})
	if err != nil {
		return nil, err
	}
	base := d.Genesis
	n := o.Validators
	t, err := seed.Threshold(n)
	if err != nil {
		return nil, err
	}
	groupSeed := derive("group", o.Seed, 0)
	group := seed.DeriveSecretKey(groupSeed[:])
	deal, err := seed.DealShares(group, n, t, &keccakReader{s: o.Seed})
	if err != nil {
		return nil, err
	}
	ns := []byte(fmt.Sprintf("cip11-network-%d", o.ChainID))
	gsig, err := seed.SignSeed(group, ns, seed.Round{})
	if err != nil {
		return nil, err
	}
	base.Namespace = ns
	base.GenesisBeacon = chainlog.Beacon{Signature: chainlog.Signature(gsig)}
	// D30: the epoch is the threshold-key epoch, static here: one epoch
	// whose views are the heights.
	base.Schedule = chainlog.Schedule{ViewsPerEpoch: 1 << 62, FirstView: 1, LastKnownEpoch: 0}
	// Peer keys first: the set is ordered by peer_pubkey (D29), and share
	// index i+1 goes to the i-th.
	type member struct {
		edSeed [32]byte
		pub    ed25519.PublicKey
		port   int
	}
	ms := make([]member, n)
	for i := range ms {
		ms[i].edSeed = derive("ed25519", o.Seed, uint64(i))
		ms[i].pub = ed25519.NewKeyFromSeed(ms[i].edSeed[:]).Public().(ed25519.PublicKey)
	}
	slices.SortFunc(ms, func(a, b member) int { return bytes.Compare(a.pub, b.pub) })
	pubShares, err := deal.Public.PublicShares(n)
	if err != nil {
		return nil, err
	}
	set := make([]node.GenesisValidator, n)
	for i := range ms {
		ms[i].port = o.BasePort + 10*i
		set[i] = node.GenesisValidator{PeerPubKey: cip11.Hash(ms[i].pub), ThresholdPubKey: chainlog.PublicKey(pubShares[i]),
			QUIC: fmt.Sprintf("%s:%d", o.Host, ms[i].port+1), HTTP: fmt.Sprintf("%s:%d", o.Host, ms[i].port+2)}
	}
	base.Set = set
	// CometBFT's side: vote keys, node ids, one genesis document.
	gd := &cmttypes.GenesisDoc{ChainID: fmt.Sprintf("cip11-%d", o.ChainID), GenesisTime: time.Unix(1_700_000_000, 0).UTC(),
		InitialHeight: 1, ConsensusParams: cmttypes.DefaultConsensusParams()}
	gd.ConsensusParams.Feature.VoteExtensionsEnableHeight = 1
	net := &Network{Opts: o}
	var peers []string
	votes := make([]cmted25519.PrivKey, n)
	for i := range ms {
		vs := derive("vote", o.Seed, uint64(i))
		votes[i] = cmted25519.GenPrivKeyFromSecret(vs[:])
		gd.Validators = append(gd.Validators, cmttypes.GenesisValidator{Address: votes[i].PubKey().Address(), PubKey: votes[i].PubKey(),
			Power: 10, Name: fmt.Sprintf("cip11-v%d", i)})
		nk := &p2p.NodeKey{PrivKey: cmted25519.PrivKey(ed25519.NewKeyFromSeed(ms[i].edSeed[:]))}
		peers = append(peers, fmt.Sprintf("%s@%s:%d", nk.ID(), o.Host, ms[i].port))
	}
	if err := gd.ValidateAndComplete(); err != nil {
		return nil, err
	}
	for i := range ms {
		g := *base
		g.Set = slices.Clone(set)
		g.Validator = set[i]
		g.Validator.ThresholdPubKey = chainlog.PublicKey(deal.Public.GroupKey())
		if err := g.Validate(); err != nil {
			return nil, err
		}
		keys, err := node.NewValidatorKeys(ms[i].edSeed, deal.Shares[i].Key.Bytes())
		if err != nil {
			return nil, err
		}
		c := cmtcfg.DefaultConfig()
		c.Moniker = fmt.Sprintf("cip11-v%d", i)
		c.P2P.ListenAddress = fmt.Sprintf("tcp://%s:%d", o.Host, ms[i].port)
		c.P2P.PersistentPeers = strings.Join(slices.Delete(slices.Clone(peers), i, i+1), ",")
		c.P2P.PexReactor = false
		c.P2P.AllowDuplicateIP = true
		c.P2P.AddrBookStrict = false
		c.RPC.ListenAddress = ""
		c.Mempool.Recheck = false
		c.Consensus.TimeoutPropose = o.TimeoutPropose
		c.Consensus.TimeoutPrevote = o.TimeoutVote
		c.Consensus.TimeoutPrecommit = o.TimeoutVote
		c.Consensus.TimeoutCommit = o.TimeoutCommit
		c.Instrumentation.Prometheus = false
		c.TxIndex.Indexer = "null" // unused; and v1.0.1 leaves its store open on Stop
		net.Homes = append(net.Homes, &Home{Genesis: &g, Keys: keys, Config: c, GenDoc: gd,
			NodeKey: &p2p.NodeKey{PrivKey: cmted25519.PrivKey(ed25519.NewKeyFromSeed(ms[i].edSeed[:]))}, VoteKey: votes[i], Index: i})
	}
	return net, nil
}

// Write stores every validator's home under dir (dir/v<i>) and the runner
// keys in dir (runner-NNNN.key). It refuses a directory that already holds
// a network (ErrGenesisExists).
func (n *Network) Write(dir string) error {
	for i := range n.Homes {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("v%d", i))); err == nil {
			return fmt.Errorf("%w: %s", node.ErrGenesisExists, filepath.Join(dir, fmt.Sprintf("v%d", i)))
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, h := range n.Homes {
		if err := h.Write(filepath.Join(dir, fmt.Sprintf("v%d", i))); err != nil {
			return err
		}
	}
	for i := range n.Opts.Runners {
		if err := node.WriteRunnerKey(dir, n.Opts.Seed, i); err != nil {
			return err
		}
	}
	return nil
}

// Write stores the home's files under dir (the layout of [Home]).
func (h *Home) Write(dir string) error {
	h.Dir = dir
	h.Config.SetRoot(dir)
	if err := os.MkdirAll(filepath.Join(dir, "config"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		return err
	}
	b, err := h.Genesis.Encode()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "cip11.json"), b, 0o644); err != nil {
		return err
	}
	if err := h.Keys.Write(filepath.Join(dir, "validator.key")); err != nil {
		return err
	}
	cmtcfg.WriteConfigFile(filepath.Join(dir, "config", "config.toml"), h.Config)
	if err := h.GenDoc.SaveAs(h.Config.GenesisFile()); err != nil {
		return err
	}
	if err := h.NodeKey.SaveAs(h.Config.NodeKeyFile()); err != nil {
		return err
	}
	pv := privval.NewFilePV(h.VoteKey, h.Config.PrivValidatorKeyFile(), h.Config.PrivValidatorStateFile())
	return errors.Join(saveFilePV(pv))
}

// saveFilePV saves pv, turning the library's panic on a write error into
// an error.
func saveFilePV(pv *privval.FilePV) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cometbft: saving the vote key: %v", r)
		}
	}()
	pv.Save()
	return nil
}
