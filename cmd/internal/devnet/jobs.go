package devnet

import (
	"log/slog"
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

// load is the job load both devnets' configs share: the runners, how long
// jobs are generated, the generator's settings and the logger.
type load struct {
	runners       *int
	duration      *time.Duration
	perBlock      *int
	multiPerMille *int
	timeout       *uint64
	work          *time.Duration
	logger        **slog.Logger
}

// defaults fills the zero settings: 50 runners, 20 s, 2 jobs per block,
// 400 per mille with M > 1 (negative: none), 12 blocks' timeout, 30 ms of
// work, a discarding logger.
func (l load) defaults() {
	if *l.runners == 0 {
		*l.runners = 50
	}
	if *l.duration == 0 {
		*l.duration = 20 * time.Second
	}
	if *l.perBlock == 0 {
		*l.perBlock = 2
	}
	if *l.multiPerMille == 0 {
		*l.multiPerMille = 400
	}
	if *l.multiPerMille < 0 { // none
		*l.multiPerMille = 0
	}
	if *l.timeout == 0 {
		*l.timeout = 12
	}
	if *l.work == 0 {
		*l.work = 30 * time.Millisecond
	}
	if *l.logger == nil {
		*l.logger = slog.New(slog.DiscardHandler)
	}
}

// generator is the load's job generator drawing from rng.
func (l load) generator(rng *rand.Rand) *jobGen {
	return &jobGen{rng: rng, perBlock: *l.perBlock, multiPerMille: *l.multiPerMille, timeout: *l.timeout, work: *l.work}
}
