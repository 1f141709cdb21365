package cometbft

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	"github.com/cip11/cip11/internal/devkeys"
	"github.com/cip11/cip11/seed"
)

// genesisPower is every validator's CometBFT voting power (D29: equal).
const genesisPower = 10

// NetworkOptions describe a generated network (DEVNET ONLY: every secret,
// the threshold shares included, is a function of Seed; D31's dealer).
type NetworkOptions struct {
	Validators int    // n ≥ 1
	Runners    int    // genesis runners
	Seed       uint64 // the devnet seed
	ChainID    uint64 // default 7011
	// BasePort: a validator listens on BasePort+10·k (CometBFT p2p, TCP),
	// +1 (QUIC, UDP) and +2 (HTTP API, TCP), where k is the number of
	// homes before it on the same host; default 26600. On one host (the
	// default) validator i is at BasePort+10·i; on distinct hosts every
	// validator uses BasePort … BasePort+2.
	BasePort int
	// Host of every address when Hosts is nil (default 127.0.0.1).
	Host string
	// Hosts, if not nil, names each pool member's host, home v<i> on
	// Hosts[i]: an IP address or a DNS name (CheckHost), one per member
	// (len = max(Members, Validators)). Home v<i> listens on Hosts[i] (its
	// CometBFT p2p listen address, QUIC and HTTP addresses) and every
	// other home and runner dials it there: the genesis validator_set and
	// the persistent peers name it.
	Hosts []string
	// Params override the devnet parameters (node.DefaultGenesisParams).
	Params *cip11.Params
	// Timeouts of CometBFT's consensus (defaults: propose 400 ms, prevote
	// and precommit 100 ms, commit 0).
	TimeoutPropose, TimeoutVote, TimeoutCommit time.Duration
	// Members is the size of the generated validator pool (default
	// Validators): epoch 0 is pool positions 0 … Validators−1, and a
	// later epoch may add the others.
	Members int
	// Epochs schedules reconfigurations (DEVNET: the dealer deals every
	// epoch's shares at genesis, D31): epoch e+1 is Epochs[e].
	Epochs []EpochPlan
	// RPC: every home serves CometBFT's RPC on BasePort+10·k+3 (TCP), which
	// state sync's light client reads light blocks from (StateSyncOptions);
	// off: no RPC listener.
	RPC bool
	// InBand, DEVNET ONLY, leaves Epochs out of the genesis: the genesis
	// names a devnet admin (its key a function of Seed) and each planned
	// epoch is added in band, by the admin's signed reconfiguration
	// transaction (Network.Reconfiguration, SPEC-NOTES C11), its shares
	// handed to the members only then.
	InBand bool
}

// EpochPlan is one scheduled validator-set epoch (§5.3–§5.4, D30): from
// Activation on, the validators are the pool Members (ascending positions:
// the pool is ordered by peer_pubkey).
type EpochPlan struct {
	Activation uint64
	Members    []int
}

// Network is a generated network: one home per validator and the runner
// keys' seed.
type Network struct {
	Opts  NetworkOptions
	Homes []*Home // by pool position: epoch 0's share index − 1 first
	// Dealer is the InBand devnet dealer and admin (nil otherwise):
	// the planned epochs' sets and shares, handed out by Reconfiguration;
	// Write stores it as dealer.json.
	Dealer *devkeys.Dealer
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
	Index   int // epoch-0 share index − 1 (−1: not in epoch 0)
}

func derive(label string, s, i uint64) [32]byte { return devkeys.Network(label, s, i) }

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
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	n, pool := o.Validators, max(o.Members, o.Validators)
	if pool > 64 {
		return nil, fmt.Errorf("%w: %d members (≤ 64)", node.ErrBadRequest, pool)
	}
	hosts := o.Hosts
	if hosts == nil {
		hosts = slices.Repeat([]string{o.Host}, pool)
	}
	if len(hosts) != pool {
		return nil, fmt.Errorf("%w: %d hosts for %d homes (one each)", node.ErrBadRequest, len(hosts), pool)
	}
	for i, h := range hosts {
		if err := CheckHost(h); err != nil {
			return nil, fmt.Errorf("host of home v%d: %w", i, err)
		}
	}
	if m := MaxPerHost(hosts); o.BasePort < 1024 || o.BasePort+10*m > 65535 {
		return nil, fmt.Errorf("%w: base port %d for %d validators on one host", node.ErrBadRequest, o.BasePort, m)
	}
	if o.TimeoutPropose == 0 {
		o.TimeoutPropose = 400 * time.Millisecond
	}
	if o.TimeoutVote == 0 {
		o.TimeoutVote = 100 * time.Millisecond
	}
	// The CIP-11 genesis of a one-validator devnet, then the network's set.
	d, err := node.GenerateGenesis(node.GenesisOptions{Runners: o.Runners, Seed: o.Seed, ChainID: o.ChainID, Params: o.Params,
		QUIC: hostPort(hosts[0], o.BasePort+1), HTTP: hostPort(hosts[0], o.BasePort+2)})
	if err != nil {
		return nil, err
	}
	base := d.Genesis
	// The pool's keys, ordered by peer_pubkey (D29): a set of pool
	// positions in ascending order is canonically ordered, and the home of
	// position i is v<i>.
	type member struct {
		edSeed [32]byte
		pub    ed25519.PublicKey
		host   string
		port   int
		vote   cmted25519.PrivKey
	}
	ms := make([]member, pool)
	for i := range ms {
		ms[i].edSeed = derive("ed25519", o.Seed, uint64(i))
		ms[i].pub = ed25519.NewKeyFromSeed(ms[i].edSeed[:]).Public().(ed25519.PublicKey)
	}
	slices.SortFunc(ms, func(a, b member) int { return bytes.Compare(a.pub, b.pub) })
	onHost := map[string]int{} // homes so far on each host (hostKey)
	for i := range ms {
		k := hostKey(hosts[i])
		ms[i].host, ms[i].port = hosts[i], o.BasePort+10*onHost[k]
		onHost[k]++
		vs := derive("vote", o.Seed, uint64(i))
		ms[i].vote = cmted25519.GenPrivKeyFromSecret(vs[:])
	}
	// The epochs: 0 is positions 0 … n−1, then each plan's members; every
	// epoch's shares come from the devnet dealer (D31).
	plans := append([]EpochPlan{{Activation: 1, Members: seqTo(n)}}, o.Epochs...)
	ns := []byte(fmt.Sprintf("cip11-network-%d", o.ChainID))
	type dealt struct {
		members []int
		group   [seed.PublicKeySize]byte
		secrets [][32]byte
		pubs    [][96]byte
	}
	epochs := make([]dealt, len(plans))
	var gsig seed.Signature
	for e, pl := range plans {
		if err := checkPlan(pl, e, plans, pool, base.P().OverlapBlocks); err != nil {
			return nil, err
		}
		t, err := seed.Threshold(len(pl.Members))
		if err != nil {
			return nil, err
		}
		groupSeed := derive("group", o.Seed, uint64(e))
		group := seed.DeriveSecretKey(groupSeed[:])
		deal, err := seed.DealShares(group, len(pl.Members), t, &keccakReader{s: o.Seed, ctr: uint64(e) << 32})
		if err != nil {
			return nil, err
		}
		pubs, err := deal.Public.PublicShares(len(pl.Members))
		if err != nil {
			return nil, err
		}
		d := dealt{members: pl.Members, group: deal.Public.GroupKey()}
		for i := range pl.Members {
			d.secrets = append(d.secrets, deal.Shares[i].Key.Bytes())
			d.pubs = append(d.pubs, pubs[i])
		}
		epochs[e] = d
		if e == 0 {
			if gsig, err = seed.SignSeed(group, ns, seed.Round{}); err != nil {
				return nil, err
			}
		}
	}
	entry := func(e, i int) node.GenesisValidator {
		m := ms[epochs[e].members[i]]
		cpk := cip11.Hash(m.vote.PubKey().Bytes())
		return node.GenesisValidator{PeerPubKey: cip11.Hash(m.pub), ThresholdPubKey: chainlog.PublicKey(epochs[e].pubs[i]),
			QUIC: hostPort(m.host, m.port+1), HTTP: hostPort(m.host, m.port+2), ConsensusPubKey: &cpk}
	}
	base.Namespace = ns
	base.GenesisBeacon = chainlog.Beacon{Signature: chainlog.Signature(gsig)}
	// D30: the epoch is the threshold-key epoch and the view the height.
	base.Schedule = chainlog.Schedule{KnownThrough: 1 << 62}
	for _, pl := range plans {
		base.Schedule.Activations = append(base.Schedule.Activations, chainlog.U64(pl.Activation))
	}
	base.Set = nil
	for i := range plans[0].Members {
		base.Set = append(base.Set, entry(0, i))
	}
	net := &Network{Opts: o}
	if o.InBand {
		as := derive("devnet-admin", o.Seed, 0)
		net.Dealer = &devkeys.Dealer{Format: devkeys.DealerFormat, ChainID: chainlog.U64(o.ChainID), AdminSecret: as}
	}
	for e := 1; e < len(plans); e++ {
		ge := node.GenesisEpoch{Activation: chainlog.U64(plans[e].Activation), GroupKey: chainlog.PublicKey(epochs[e].group)}
		for i := range plans[e].Members {
			ge.Set = append(ge.Set, entry(e, i))
		}
		if !o.InBand {
			base.Epochs = append(base.Epochs, ge)
			continue
		}
		es := node.EpochSet{Epoch: uint64(e), Activation: uint64(ge.Activation), GroupKey: ge.GroupKey, Set: ge.Set}
		r, err := es.Reconfigure()
		if err != nil {
			return nil, err
		}
		de := devkeys.DealtEpoch{Reconfigure: *r}
		for j, m := range plans[e].Members {
			de.Shares = append(de.Shares, devkeys.DealtShare{Home: m, Secret: epochs[e].secrets[j]})
		}
		net.Dealer.Epochs = append(net.Dealer.Epochs, de)
	}
	if o.InBand {
		base.Schedule.Activations = base.Schedule.Activations[:1]
		a, err := net.Dealer.Admin()
		if err != nil {
			return nil, err
		}
		base.ReconfigAdmin = &a
	}
	// CometBFT's side: epoch 0's vote keys, node ids, one genesis document.
	gd := &cmttypes.GenesisDoc{ChainID: fmt.Sprintf("cip11-%d", o.ChainID), GenesisTime: time.Unix(1_700_000_000, 0).UTC(),
		InitialHeight: 1, ConsensusParams: cmttypes.DefaultConsensusParams()}
	gd.ConsensusParams.Feature.VoteExtensionsEnableHeight = 1
	gd.ConsensusParams.Evidence.MaxAgeNumBlocks = EvidenceMaxAgeBlocks
	gd.ConsensusParams.Evidence.MaxAgeDuration = EvidenceMaxAge
	var peers []string
	for i := range ms {
		if i < n {
			gd.Validators = append(gd.Validators, cmttypes.GenesisValidator{Address: ms[i].vote.PubKey().Address(), PubKey: ms[i].vote.PubKey(),
				Power: genesisPower, Name: fmt.Sprintf("cip11-v%d", i)})
		}
		nk := &p2p.NodeKey{PrivKey: cmted25519.PrivKey(ed25519.NewKeyFromSeed(ms[i].edSeed[:]))}
		peers = append(peers, string(nk.ID())+"@"+hostPort(ms[i].host, ms[i].port))
	}
	if err := gd.ValidateAndComplete(); err != nil {
		return nil, err
	}
	for i := range ms {
		g := *base
		g.Set = slices.Clone(base.Set)
		g.Epochs = slices.Clone(base.Epochs)
		var keys *node.ValidatorKeys
		for e := range epochs {
			j := slices.Index(epochs[e].members, i)
			if j < 0 {
				continue
			}
			if keys == nil { // the first epoch it is a member of names it
				g.Validator = entry(e, j)
				g.Validator.ThresholdPubKey = chainlog.PublicKey(epochs[0].group)
				var bls [32]byte
				if e == 0 {
					bls = epochs[0].secrets[j]
				} else { // not in epoch 0: a key that signs nothing
					u := derive("unused-share", o.Seed, uint64(i))
					bls = seed.DeriveSecretKey(u[:]).Bytes()
				}
				var err error
				if keys, err = node.NewValidatorKeys(ms[i].edSeed, bls); err != nil {
					return nil, err
				}
			}
			if e > 0 && !o.InBand {
				if err := keys.AddEpochShare(uint64(e), epochs[e].secrets[j]); err != nil {
					return nil, err
				}
			}
		}
		if keys == nil {
			return nil, fmt.Errorf("%w: member %d is in no epoch", node.ErrBadRequest, i)
		}
		if err := g.Validate(); err != nil {
			return nil, err
		}
		c := cmtcfg.DefaultConfig()
		c.Moniker = fmt.Sprintf("cip11-v%d", i)
		// Listen on the named host itself, which is also what the peers
		// dial and the node advertises (docs/network.md, "Hosts").
		c.P2P.ListenAddress = "tcp://" + hostPort(ms[i].host, ms[i].port)
		c.P2P.PersistentPeers = strings.Join(slices.Delete(slices.Clone(peers), i, i+1), ",")
		c.P2P.PexReactor = false
		c.P2P.AllowDuplicateIP = true
		c.P2P.AddrBookStrict = false
		c.RPC.ListenAddress = ""
		if o.RPC {
			c.RPC.ListenAddress = "tcp://" + hostPort(ms[i].host, ms[i].port+3)
		}
		c.Mempool.Recheck = false
		c.Consensus.TimeoutPropose = o.TimeoutPropose
		c.Consensus.TimeoutPrevote = o.TimeoutVote
		c.Consensus.TimeoutPrecommit = o.TimeoutVote
		c.Consensus.TimeoutCommit = o.TimeoutCommit
		c.Instrumentation.Prometheus = false
		c.TxIndex.Indexer = "null" // unused; and v1.0.1 leaves its store open on Stop
		net.Homes = append(net.Homes, &Home{Genesis: &g, Keys: keys, Config: c, GenDoc: gd,
			NodeKey: &p2p.NodeKey{PrivKey: cmted25519.PrivKey(ed25519.NewKeyFromSeed(ms[i].edSeed[:]))}, VoteKey: ms[i].vote, Index: g.SelfIndex()})
	}
	return net, nil
}

// The evidence age of the networks NewNetwork writes (CometBFT's
// consensus_params.evidence; its defaults are 100,000 blocks and 48 h).
// CometBFT v1.0.1's block pruning (store.BlockStore.PruneBlocks) keeps the
// header and commit of every pruned height still inside the evidence age
// (both bounds: evidence expires only past the block count and the
// duration) and then moves its base past them, so no later pruning ever
// visits them again: they stay forever. Issue 31's soak measured 1.5 KB a
// block of that (the blockstore growing 17.8 to 25.1 MiB from 5,000 to
// 10,000 blocks with 1,000 kept, at 4.5 blocks a second, inside a
// 5-minute age). The age must therefore have passed for every height a
// validator prunes: 256 blocks (node.MinKeepBlocks, the least retention:
// a pruned height is always older) and 1 s, so the block bound decides.
// The app acts on no evidence (a double-sign is CometBFT's to detect and
// report; CIP-11 slashes no validator).
const (
	EvidenceMaxAgeBlocks = 256
	EvidenceMaxAge       = time.Second
)

// ErrBadHost is a host that is neither an IP address to dial nor a DNS
// name (CheckHost's errors are it and node.ErrBadRequest).
var ErrBadHost = errors.New("not a host")

// hostError is CheckHost's complaint: the host and why.
type hostError struct{ host, why string }

func (e *hostError) Error() string { return fmt.Sprintf("%q: %s", e.host, e.why) }

func (e *hostError) Is(target error) bool {
	return target == ErrBadHost || target == node.ErrBadRequest
}

// CheckHost accepts what NetworkOptions.Hosts may name: an IPv4 or IPv6
// address that can be dialled (not the unspecified 0.0.0.0 or ::, not
// multicast; IPv6 without brackets or a zone), or a DNS name of letters,
// digits and hyphens (RFC 1123: dot-separated labels of 1 to 63
// characters, none starting or ending with a hyphen, at most 253 in all,
// the last label not all digits, so that a mistyped IPv4 address is not
// taken for a name). A host carries no port: the ports follow BasePort.
func CheckHost(h string) error {
	bad := func(why string) error { return &hostError{host: h, why: why} }
	if h == "" {
		return bad("empty")
	}
	if ip := net.ParseIP(h); ip != nil {
		switch {
		case ip.IsUnspecified():
			return bad("the unspecified address cannot be dialled; name each validator's own address")
		case ip.IsMulticast():
			return bad("a multicast address")
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(h); err == nil || strings.ContainsAny(h, "[]") {
		return bad("a host has no port (and an IPv6 address no brackets): the ports follow the base port")
	}
	if len(h) > 253 {
		return bad("longer than 253 characters")
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return bad("each dot-separated label must be 1 to 63 characters")
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return bad("a label starts or ends with a hyphen")
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return bad("neither an IP address nor a host name (letters, digits, hyphens and dots)")
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return bad("neither an IP address nor a host name (a name's last label is not all digits)")
	}
	return nil
}

// hostKey is h as hosts are compared: an IP address in canonical form, a
// name in lower case.
func hostKey(h string) string {
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return strings.ToLower(h)
}

// MaxPerHost is the largest number of hosts that name the same machine
// (hostKey): the port blocks NewNetwork needs above BasePort.
func MaxPerHost(hosts []string) int {
	n, m := map[string]int{}, 0
	for _, h := range hosts {
		k := hostKey(h)
		n[k]++
		m = max(m, n[k])
	}
	return m
}

// hostPort is host:port, an IPv6 host in brackets.
func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// AddThenRemove is the devnet's two-step reconfiguration of an
// n-validator network (cip11 genesis / devnet -reconfigure): a pool of n+1,
// pool member n joins at addAt (epoch 1: all n+1) and member 0 leaves at
// removeAt (epoch 2: members 1 … n). It returns NetworkOptions.Members and
// .Epochs.
func AddThenRemove(n int, addAt, removeAt uint64) (members int, epochs []EpochPlan) {
	all := seqTo(n + 1)
	return n + 1, []EpochPlan{{Activation: addAt, Members: all}, {Activation: removeAt, Members: all[1:]}}
}

// seqTo is 0 … n−1.
func seqTo(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// checkPlan checks epoch e's plan: members strictly ascending pool
// positions (so the set is canonically ordered, D29), a changed set (§5.4:
// an unchanged identity list is no new epoch), an activation ≥ 3 after
// the previous one (CometBFT applies updates two heights on) and at least
// OVERLAP_BLOCKS after it (node.CheckActivations: §5.4 retires epoch e−2
// only at activation(e−1) + OVERLAP_BLOCKS; SPEC-NOTES C9).
func checkPlan(pl EpochPlan, e int, plans []EpochPlan, pool int, overlap uint64) error {
	if len(pl.Members) == 0 {
		return fmt.Errorf("%w: epoch %d has no members", node.ErrBadRequest, e)
	}
	for i, m := range pl.Members {
		if m < 0 || m >= pool || (i > 0 && m <= pl.Members[i-1]) {
			return fmt.Errorf("%w: epoch %d members %v (ascending positions below %d)", node.ErrBadRequest, e, pl.Members, pool)
		}
	}
	if e == 0 {
		return nil
	}
	prev := plans[e-1]
	if slices.Equal(pl.Members, prev.Members) {
		return fmt.Errorf("%w: epoch %d has epoch %d's members (§5.4: not a reconfiguration)", node.ErrBadRequest, e, e-1)
	}
	if pl.Activation < 3 || pl.Activation <= prev.Activation+2 {
		return fmt.Errorf("%w: epoch %d activates at %d (≥ 3 and > the previous activation %d + 2)", node.ErrBadRequest, e, pl.Activation, prev.Activation)
	}
	acts := make([]uint64, e+1)
	for i := range acts {
		acts[i] = plans[i].Activation
	}
	if err := node.CheckActivations(acts, overlap); err != nil {
		return fmt.Errorf("%w: %w", node.ErrBadRequest, err)
	}
	return nil
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
	if n.Dealer != nil { // DEVNET: the dealer's and admin's secrets (0600)
		b, err := json.MarshalIndent(n.Dealer, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "dealer.json"), append(b, '\n'), 0o600); err != nil {
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
