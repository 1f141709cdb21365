package node

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/seed"
)

// ValidatorConfig configures a Validator.
type ValidatorConfig struct {
	Genesis *Genesis
	Keys    *ValidatorKeys
	// DataDir holds the Pebble state (state/), the block log (blocks.jsonl)
	// and its block times (blocks.times), the accepted job submissions (jobs.jsonl) and the archive of ended
	// jobs (jobs/). Empty: a fresh temporary directory, removed by Close.
	DataDir string
	// KeyFile, if set, is where Keys came from: a member of an in-band
	// epoch whose share Keys lacks reads it there when the epoch enters
	// the schedule (a process network's devnet dealer writes it into the
	// file, SPEC-NOTES C11; ScheduleConfig.KeyFile).
	KeyFile string
	// Listen is the QUIC UDP address (default: the genesis validator.quic).
	Listen string
	// BlockTime is the block interval of Run (1 s).
	BlockTime time.Duration
	// SkipPerMille nullifies that many views per thousand (§9.2 seed rules),
	// 0 … 1000.
	SkipPerMille uint32
	// PushWindow paces each block's pushes at that many unanswered
	// assignments (quic.ServerConfig.PushWindow): 0 decides by the UDP
	// receive buffer the socket got, < 0 sends all at once.
	PushWindow int
	// NoSync turns fsync off for the block log, the job file and Pebble.
	NoSync bool
	// RetainBlocks keeps ended jobs in memory that many blocks before they
	// move to the on-disk archive (chain.DefaultRetainBlocks).
	RetainBlocks uint64
	// Seed seeds the skip draws.
	Seed   uint64
	Logger *slog.Logger
	// Metrics, if set, receives the validator's own Prometheus series
	// (PrometheusMetrics). One Metrics may serve successive validators.
	Metrics *Metrics
	// Registerer, if set, receives the validator's collector, read at
	// scrape time: the transport's series (quic.NewCollector), the queue
	// drops and the state store's (metrics.go); Close unregisters it.
	Registerer prometheus.Registerer
	// Producer overrides block production (default: Solo from the keys).
	Producer Producer
	// Broadcaster, if set, is an external consensus engine (adapters/cometbft,
	// D29) that drives the core through the step API (ProposeBlock,
	// CheckBlock, FinalizeBlock, CommitBlock); Run then produces no block
	// itself and Producer is unused. The engine's mempool is the only
	// mempool: submissions (SubmitTx, SubmitJob) go to it, its admission
	// check is AdmitTx and AdmitJob on every validator (journaled and
	// tracked, pooled nowhere else), and proposals are built from the
	// transactions it hands ProposeBlock (D33).
	Broadcaster Broadcaster
	// RetainHeight, if set, is the block retention policy CommitBlock
	// reports (an engine's RetainHeight): given the committed height, the
	// lowest height whose block must be kept. Nil or 0: keep everything.
	RetainHeight func(committed uint64) uint64
	// SnapshotInterval: every that many blocks the validator writes a
	// snapshot of its state (snapshots/HEIGHT; docs/storage.md
	// "Snapshots (node)"), which peers restore from by state sync (0: none).
	SnapshotInterval uint64
	// SnapshotKeep is how many snapshots it keeps (DefaultSnapshotKeep).
	SnapshotKeep int
	// SnapshotChunkSize is a snapshot chunk's size in bytes
	// (DefaultSnapshotChunkSize; at most MaxSnapshotChunkSize).
	SnapshotChunkSize int
	// KeepBlocks: retention (docs/storage.md "Retention"). The validator
	// keeps at least the last KeepBlocks blocks: at each commit the block
	// log, its times and the job archive are pruned behind the base of the
	// newest snapshot at least KeepBlocks below the height, and the engine
	// is told to keep blocks from there (CommitBlock's retain height).
	// 0 keeps everything; otherwise SnapshotInterval must be set and at
	// most KeepBlocks, and KeepBlocks at least MinKeepBlocks.
	KeepBlocks uint64
	// Now is the wall clock for latencies and event times (time.Now).
	Now func() time.Time
	// OnPushes, if set, is told each committed block's pushes as they are
	// handed to the transport, after the catch-up gate (SetCatchUp), on
	// the loop: it must not call the validator.
	OnPushes func(h uint64, pushes []chain.Assignment)
	// StallBlocks is the health rule's threshold (health.go): the
	// validator reports itself stalled when its height has not moved for
	// that many nominal block intervals (0: DefaultStallBlocks).
	StallBlocks int
}

// Validate reports the first invalid field, wrapping ErrNilConfig or
// ErrBadRequest.
func (c *ValidatorConfig) Validate() error {
	switch {
	case c.Genesis == nil:
		return fmt.Errorf("%w: Genesis", ErrNilConfig)
	case c.Keys == nil || c.Keys.Peer == nil:
		return fmt.Errorf("%w: Keys", ErrNilConfig)
	case c.BlockTime < 0:
		return fmt.Errorf("%w: BlockTime %v is negative", ErrBadRequest, c.BlockTime)
	case c.SkipPerMille > 1000:
		return fmt.Errorf("%w: SkipPerMille %d (0 … 1000)", ErrBadRequest, c.SkipPerMille)
	case c.StallBlocks < 0:
		return fmt.Errorf("%w: StallBlocks %d is negative", ErrBadRequest, c.StallBlocks)
	case c.SnapshotKeep < 0 || c.SnapshotChunkSize < 0 || c.SnapshotChunkSize > MaxSnapshotChunkSize:
		return fmt.Errorf("%w: SnapshotKeep %d or SnapshotChunkSize %d (at most %d)", ErrBadRequest, c.SnapshotKeep, c.SnapshotChunkSize, MaxSnapshotChunkSize)
	case c.KeepBlocks > 0 && (c.SnapshotInterval == 0 || c.SnapshotInterval > c.KeepBlocks || c.KeepBlocks < MinKeepBlocks):
		return fmt.Errorf("%w: KeepBlocks %d needs a SnapshotInterval (%d) of at most KeepBlocks, and at least %d blocks",
			ErrBadRequest, c.KeepBlocks, c.SnapshotInterval, MinKeepBlocks)
	}
	if err := c.Genesis.Validate(); err != nil {
		return err
	}
	if cip11.Hash(c.Keys.Peer.PubKey().Raw()) != c.Genesis.Validator.PeerPubKey {
		return fmt.Errorf("%w: the validator key is not the genesis validator's", ErrKeyFile)
	}
	if g := c.Genesis; g.Network() {
		for _, e := range g.EpochSets() {
			i := IndexIn(e.Set, g.Validator.PeerPubKey)
			if i < 0 {
				continue
			}
			sk, ok := c.Keys.Share(e.Epoch)
			if !ok || sk.PublicKey() != [96]byte(e.Set[i].ThresholdPubKey) {
				return fmt.Errorf("%w: the BLS key of epoch %d is not this validator's public share in its validator_set", ErrKeyFile, e.Epoch)
			}
		}
		if c.Broadcaster == nil {
			return fmt.Errorf("%w: Broadcaster (a network genesis runs on external consensus, D29)", ErrNilConfig)
		}
		return nil
	}
	if c.Keys.Threshold.PublicKey() != [96]byte(c.Genesis.Validator.ThresholdPubKey) {
		return fmt.Errorf("%w: the BLS key is not the genesis threshold key", ErrKeyFile)
	}
	return nil
}

// defaults fills the zero fields.
func (c *ValidatorConfig) defaults() {
	if c.SnapshotKeep == 0 {
		c.SnapshotKeep = DefaultSnapshotKeep
	}
	if c.SnapshotChunkSize == 0 {
		c.SnapshotChunkSize = DefaultSnapshotChunkSize
	}
	if c.BlockTime == 0 {
		c.BlockTime = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.StallBlocks == 0 {
		c.StallBlocks = DefaultStallBlocks
	}
	if c.Listen == "" {
		c.Listen = c.Genesis.Validator.QUIC
	}
	if c.Producer == nil {
		g := c.Genesis
		c.Producer = &Solo{Key: c.Keys.Threshold, Namespace: g.Namespace, SkipPerMille: c.SkipPerMille,
			Rand:     rand.New(rand.NewPCG(c.Seed, 0x5eed)),
			Schedule: seed.FixedSchedule{ViewsPerEpoch: uint64(g.Schedule.ViewsPerEpoch), FirstView: uint64(g.Schedule.FirstView), LastKnownEpoch: uint64(g.Schedule.LastKnownEpoch)}}
	}
}
