package devnet

import (
	"math/rand/v2"
	"time"

	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/internal/devkeys"
)

// jobGen is the devnets' job generator: perBlock jobs per new block, of
// kinds 0 … 5 from 8 submitters (devkeys.Submitter), multiPerMille of
// them with M = verification.runners 2 or 3 and the rest M = 1, nonces
// counting from 1. The draws come from rng in a fixed order, so that a
// devnet seed repeats its job stream.
type jobGen struct {
	rng           *rand.Rand
	perBlock      int
	multiPerMille int
	timeout       uint64
	work          time.Duration
	nonce         uint64
}

// block is the next block's jobs.
func (g *jobGen) block() []*node.JobSpec {
	out := make([]*node.JobSpec, 0, g.perBlock)
	for range g.perBlock {
		g.nonce++
		m := uint32(1)
		if g.rng.IntN(1000) < g.multiPerMille {
			m = 2 + uint32(g.rng.IntN(2))
		}
		out = append(out, &node.JobSpec{Submitter: devkeys.Submitter(g.rng.IntN(8)), Kind: uint8(g.rng.IntN(6)), Runners: m,
			TimeoutBlocks: g.timeout, WorkMillis: uint32(g.work.Milliseconds()), Nonce: g.nonce})
	}
	return out
}
