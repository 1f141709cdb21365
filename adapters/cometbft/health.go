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

// consensusFacts keeps the members' last signed heights between calls.
type consensusFacts struct {
	app *App
	mu  sync.Mutex
	// scanned is the latest height read; lastSigned the greatest height
	// whose commit carries each vote address's signature.
	scanned    int64
	lastSigned map[string]uint64
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

var _ node.ConsensusReporter = (*mempoolEngine)(nil)

// roundInterval is the nominal block interval: one round's timeouts
// (propose, prevote, precommit) and the commit timeout.
func roundInterval(c *cmtcfg.ConsensusConfig) time.Duration {
	return c.TimeoutPropose + c.TimeoutPrevote + c.TimeoutPrecommit + c.TimeoutCommit
}

func (f *consensusFacts) read(cn *cmtnode.Node) node.ConsensusFacts {
	bs := cn.BlockStore()
	latest := bs.Height()
	out := node.ConsensusFacts{Height: uint64(max(latest, 0)), CatchingUp: cn.ConsensusReactor().WaitSync(),
		Peers: cn.Switch().Peers().Size(), Interval: roundInterval(cn.Config().Consensus)}
	if latest > 0 {
		if m := bs.LoadBlockMeta(latest); m != nil {
			out.Time = m.Header.Time
		}
	}
	f.mu.Lock()
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
	e := f.app.epochAt(out.Height + 1)
	peers := cn.Switch().Peers()
	addrs := f.app.addrsOf(e)
	for i, v := range e.Set {
		self := i == e.Index
		id := p2p.PubKeyToID(cmted25519.PubKey(v.PeerPubKey[:]))
		out.Validators = append(out.Validators, httpapi.ValidatorHealth{Index: i, PeerKey: fmt.Sprintf("%x", v.PeerPubKey[:]),
			Address: fmt.Sprintf("%X", addrs[i]), Self: self, Connected: self || peers.Has(id),
			LastSignedHeight: f.lastSigned[string(addrs[i])]})
	}
	f.mu.Unlock()
	if g := f.app.gossip; g != nil && out.Height > 0 {
		h := f.app.v.Height()
		if n, err := f.app.v.RegistrySize(h); err == nil && n > 0 {
			minH := uint64(1)
			if t := f.app.g.P().PresenceTimeoutBlocks; h+1 > t {
				minH = h + 1 - t
			}
			out.PeerPresent, out.PresenceHeight = g.union(nil, n, minH), h
		}
	}
	return out
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
