package cometbft

import (
	"fmt"
	"sync"
	"time"

	cmtcfg "github.com/cometbft/cometbft/config"
	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"
	cmtnode "github.com/cometbft/cometbft/node"
	"github.com/cometbft/cometbft/p2p"
	cmttypes "github.com/cometbft/cometbft/types"

	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/httpapi"
)

// The consensus facts a network validator's GET /status reports
// (node.ConsensusReporter): CometBFT's latest block and its time, whether
// it is block-syncing, its peers, and the active validator set with each
// member's last signed height, read from CometBFT's stored commits.

// signScanDepth bounds the commits read back from the latest block the
// first time (and after a gap): a member not seen signing in them shows 0.
const signScanDepth = 256

// consensusFacts keeps the members' last signed heights between calls,
// and the facts of the latest block it read: the stores are read once a
// height, not once a request (every runner process's chain view asks
// /status each tick).
type consensusFacts struct {
	app *App
	mu  sync.Mutex
	// scanned is the latest height read; lastSigned the greatest height
	// whose commit carries each vote address's signature.
	scanned    int64
	lastSigned map[string]uint64
	// at is the latest height the cache below was built for (0: none),
	// applied the node's applied height then (CometBFT stores a block
	// before the application applies it, which may schedule an epoch);
	// blockTime its header time; members the set in force after it,
	// without Connected (peers come and go within a height).
	at        int64
	applied   uint64
	blockTime time.Time
	members   []member
	refreshes uint64 // how often the stores were read (tests)
}

// member is one validator of the set in force, as /status shows it.
type member struct {
	health httpapi.ValidatorHealth
	id     p2p.ID // its CometBFT node ID (peer lookups)
}

// ConsensusFacts implements node.ConsensusReporter (zero before the
// CometBFT node starts).
func (e *mempoolEngine) ConsensusFacts() node.ConsensusFacts {
	cn := e.n.Load()
	if cn == nil || e.facts == nil {
		return node.ConsensusFacts{}
	}
	return e.facts.read(cn)
}

// PeerPresent implements node.PresenceReporter: the registry indices
// over registry(h) that peer validators' presence views (§8.2 gossip,
// display only) report within the presence timeout of h, the validator's
// height.
func (e *mempoolEngine) PeerPresent() ([]int, uint64) {
	if e.facts == nil {
		return nil, 0
	}
	return e.facts.peerPresent()
}

var (
	_ node.ConsensusReporter = (*mempoolEngine)(nil)
	_ node.PresenceReporter  = (*mempoolEngine)(nil)
)

// roundInterval is the nominal block interval: one round's timeouts
// (propose, prevote, precommit) and the commit timeout.
func roundInterval(c *cmtcfg.ConsensusConfig) time.Duration {
	return c.TimeoutPropose + c.TimeoutPrevote + c.TimeoutPrecommit + c.TimeoutCommit
}

func (f *consensusFacts) read(cn *cmtnode.Node) node.ConsensusFacts {
	latest := cn.BlockStore().Height()
	peers := cn.Switch().Peers()
	out := node.ConsensusFacts{Height: uint64(max(latest, 0)), CatchingUp: cn.ConsensusReactor().WaitSync(),
		Peers: peers.Size(), Interval: roundInterval(cn.Config().Consensus)}
	applied := f.app.v.Height()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.members == nil || latest != f.at || applied != f.applied {
		f.refresh(cn, latest)
		f.applied = applied
	}
	out.Time = f.blockTime
	out.Validators = make([]httpapi.ValidatorHealth, len(f.members))
	for i, m := range f.members {
		out.Validators[i] = m.health
		out.Validators[i].Connected = m.health.Self || peers.Has(m.id)
	}
	return out
}

// refresh reads latest's block time and the commits up to it from the
// stores and rebuilds the members (f.mu held).
func (f *consensusFacts) refresh(cn *cmtnode.Node, latest int64) {
	bs := cn.BlockStore()
	f.refreshes++
	f.at, f.blockTime = latest, time.Time{}
	if latest > 0 {
		if m := bs.LoadBlockMeta(latest); m != nil {
			f.blockTime = m.Header.Time
		}
	}
	if f.lastSigned == nil {
		f.lastSigned = map[string]uint64{}
	}
	for h := max(f.scanned, latest-signScanDepth+1, bs.Base(), 1); h <= latest; h++ {
		var c *cmttypes.Commit
		if h < latest {
			c = bs.LoadBlockCommit(h) // the canonical commit, stored with h+1
		} else {
			c = bs.LoadSeenCommit(h) // the +2/3 this node saw for its latest block
		}
		if c == nil {
			continue
		}
		for _, s := range c.Signatures {
			if k := string(s.ValidatorAddress); s.BlockIDFlag == cmttypes.BlockIDFlagCommit && uint64(h) > f.lastSigned[k] {
				f.lastSigned[k] = uint64(h)
			}
		}
	}
	f.scanned = max(f.scanned, latest)
	e := f.app.epochAt(uint64(max(latest, 0)) + 1)
	addrs := f.app.addrsOf(e)
	f.members = make([]member, 0, len(e.Set))
	for i, v := range e.Set {
		f.members = append(f.members, member{
			health: httpapi.ValidatorHealth{Index: i, PeerKey: fmt.Sprintf("%x", v.PeerPubKey[:]),
				Address: fmt.Sprintf("%X", addrs[i]), Self: i == e.Index, LastSignedHeight: f.lastSigned[string(addrs[i])]},
			id: p2p.PubKeyToID(cmted25519.PubKey(v.PeerPubKey[:])),
		})
	}
}

// peerPresent is PeerPresent (nil without presence gossip).
func (f *consensusFacts) peerPresent() ([]int, uint64) {
	g := f.app.gossip
	if g == nil {
		return nil, 0
	}
	h := f.app.v.Height()
	if h == 0 {
		return nil, 0
	}
	n, err := f.app.v.RegistrySize(h)
	if err != nil || n == 0 {
		return nil, 0
	}
	minH := uint64(1)
	if t := f.app.g.P().PresenceTimeoutBlocks; h+1 > t {
		minH = h + 1 - t
	}
	return g.union(nil, n, minH), h
}

// FirstFailure is the fatal failure (Node.Err) of the first node of nodes
// that has one, naming it by its index ("validator i: …"); nil entries
// (stopped nodes) are skipped. A harness running several nodes reports it
// and ends.
func FirstFailure(nodes []*Node) error {
	for i, nd := range nodes {
		if nd == nil {
			continue
		}
		if err := nd.Err(); err != nil {
			return fmt.Errorf("validator %d: %w", i, err)
		}
	}
	return nil
}
