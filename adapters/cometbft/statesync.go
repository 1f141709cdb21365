package cometbft

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	cmtcfg "github.com/cometbft/cometbft/config"
	rpchttp "github.com/cometbft/cometbft/rpc/client/http"

	"github.com/cip11/cip11/adapters/node"
)

// State sync (ABCI++ snapshot calls) over the validator's snapshots
// (node.Validator.Snapshots; docs/storage.md "Snapshots"). CometBFT calls
// them on its snapshot connection, one at a time: ListSnapshots and
// LoadSnapshotChunk serve a peer, OfferSnapshot and ApplySnapshotChunk
// restore an empty validator. CometBFT's light client has verified the
// AppHash it offers a snapshot under; the validator checks the chunks
// against the snapshot's metadata and, once installed, the restored
// state's digest against that AppHash.

// ListSnapshots lists the validator's snapshots, newest first.
func (a *App) ListSnapshots(context.Context, *abci.ListSnapshotsRequest) (*abci.ListSnapshotsResponse, error) {
	res := &abci.ListSnapshotsResponse{}
	for _, s := range a.v.Snapshots() {
		res.Snapshots = append(res.Snapshots, &abci.Snapshot{Height: s.Height, Format: s.Format, Chunks: s.Chunks,
			Hash: s.Hash, Metadata: s.Metadata})
	}
	res.Snapshots = a.byzSnapshots(res.Snapshots)
	return res, nil
}

// LoadSnapshotChunk serves one chunk (none: the snapshot is gone).
func (a *App) LoadSnapshotChunk(_ context.Context, req *abci.LoadSnapshotChunkRequest) (*abci.LoadSnapshotChunkResponse, error) {
	c := a.v.SnapshotChunk(req.Height, req.Format, req.Chunk)
	return &abci.LoadSnapshotChunkResponse{Chunk: a.byzChunk(req.Height, req.Chunk, c)}, nil
}

// OfferSnapshot accepts a snapshot whose metadata holds and names the
// trusted AppHash; REJECT_FORMAT for another format, REJECT for anything
// else wrong with it, ABORT when this validator already holds blocks.
func (a *App) OfferSnapshot(_ context.Context, req *abci.OfferSnapshotRequest) (*abci.OfferSnapshotResponse, error) {
	reply := func(r abci.OfferSnapshotResult) (*abci.OfferSnapshotResponse, error) {
		return &abci.OfferSnapshotResponse{Result: r}, nil
	}
	s := req.Snapshot
	if s == nil {
		return reply(abci.OFFER_SNAPSHOT_RESULT_REJECT)
	}
	a.ssMu.Lock()
	defer a.ssMu.Unlock()
	if a.restore != nil {
		a.restore.Discard()
		a.restore = nil
	}
	if !node.SnapshotFormatKnown(s.Format) {
		a.log.Info("state sync: snapshot of another format refused", "height", s.Height, "format", s.Format)
		return reply(abci.OFFER_SNAPSHOT_RESULT_REJECT_FORMAT)
	}
	r, err := a.v.OfferSnapshot(node.SnapshotInfo{Height: s.Height, Format: s.Format, Chunks: s.Chunks, Hash: s.Hash, Metadata: s.Metadata}, req.AppHash)
	switch {
	case err == nil:
		a.restore = r
		a.log.Info("state sync: snapshot accepted", "height", s.Height, "chunks", s.Chunks)
		return reply(abci.OFFER_SNAPSHOT_RESULT_ACCEPT)
	case errors.Is(err, node.ErrSnapshotState):
		a.log.Error("state sync: this validator already holds blocks", "err", err)
		return reply(abci.OFFER_SNAPSHOT_RESULT_ABORT)
	default:
		a.log.Warn("state sync: snapshot refused", "height", s.Height, "err", err)
		return reply(abci.OFFER_SNAPSHOT_RESULT_REJECT)
	}
}

// ApplySnapshotChunk takes one chunk: a chunk that does not hash to the
// metadata is fetched again from another sender (RETRY, its sender
// rejected); the last one installs the snapshot, and a snapshot whose
// state does not restore to the trusted AppHash is refused
// (REJECT_SNAPSHOT: CometBFT tries another).
func (a *App) ApplySnapshotChunk(_ context.Context, req *abci.ApplySnapshotChunkRequest) (*abci.ApplySnapshotChunkResponse, error) {
	reply := func(r abci.ApplySnapshotChunkResult) (*abci.ApplySnapshotChunkResponse, error) {
		return &abci.ApplySnapshotChunkResponse{Result: r}, nil
	}
	a.ssMu.Lock()
	defer a.ssMu.Unlock()
	r := a.restore
	if r == nil {
		return reply(abci.APPLY_SNAPSHOT_CHUNK_RESULT_REJECT_SNAPSHOT)
	}
	done, err := r.Apply(req.Index, req.Chunk)
	switch {
	case errors.Is(err, node.ErrSnapshotChunk):
		a.rej.chunks.Add(1)
		a.log.Warn("state sync: chunk refused; fetching it again from another peer", "height", r.Height(), "chunk", req.Index,
			"sender", req.Sender, "err", err)
		res := &abci.ApplySnapshotChunkResponse{Result: abci.APPLY_SNAPSHOT_CHUNK_RESULT_RETRY, RefetchChunks: []uint32{req.Index}}
		if req.Sender != "" {
			res.RejectSenders = []string{req.Sender}
		}
		return res, nil
	case err != nil:
		a.log.Error("state sync: cannot keep a chunk", "err", err)
		return reply(abci.APPLY_SNAPSHOT_CHUNK_RESULT_ABORT)
	case !done:
		return reply(abci.APPLY_SNAPSHOT_CHUNK_RESULT_ACCEPT)
	}
	a.restore = nil
	start := time.Now()
	if err := a.v.InstallSnapshot(r); err != nil {
		r.Discard()
		if errors.Is(err, node.ErrSnapshot) {
			a.rej.snapshots.Add(1)
			a.log.Warn("state sync: snapshot refused after its install", "height", r.Height(), "err", err)
			return reply(abci.APPLY_SNAPSHOT_CHUNK_RESULT_REJECT_SNAPSHOT)
		}
		a.log.Error("state sync: install failed", "height", r.Height(), "err", err)
		return reply(abci.APPLY_SNAPSHOT_CHUNK_RESULT_ABORT)
	}
	a.log.Info("state sync: snapshot installed", "height", r.Height(), "took", time.Since(start))
	return reply(abci.APPLY_SNAPSHOT_CHUNK_RESULT_ACCEPT)
}

// StateSyncOptions configure a validator that starts empty to restore
// from a peer's snapshot (NodeConfig.StateSync).
type StateSyncOptions struct {
	// RPCServers are CometBFT RPC addresses (host:port or URLs) of
	// validators whose light blocks CometBFT's light client verifies the
	// snapshot's AppHash with (at least one; CometBFT wants two, so one is
	// named twice). Their homes must serve RPC (NetworkOptions.RPC).
	RPCServers []string
	// TrustHeight and TrustHash anchor the light client. Zero: the latest
	// block the first RPC server reports is trusted — trusting that
	// server, which an operator should only do for a server they run.
	TrustHeight int64
	TrustHash   string
	// TrustPeriod (default 168h), DiscoveryTime (CometBFT's minimum, 5 s:
	// the wait for peers' snapshots before choosing one).
	TrustPeriod   time.Duration
	DiscoveryTime time.Duration
}

// ErrStateSync: state sync cannot be configured (no RPC server, or the
// trust anchor cannot be read).
var ErrStateSync = errors.New("cometbft: state sync")

func rpcURL(s string) string {
	if strings.Contains(s, "://") {
		return s
	}
	return "http://" + s
}

// configureStateSync turns state sync on in c (fetching the trust anchor
// when o names none).
func configureStateSync(ctx context.Context, c *cmtcfg.Config, o StateSyncOptions) error {
	if len(o.RPCServers) == 0 {
		return fmt.Errorf("%w: no RPC server", ErrStateSync)
	}
	servers := make([]string, 0, 2)
	for _, s := range o.RPCServers {
		servers = append(servers, rpcURL(s))
	}
	if len(servers) == 1 {
		servers = append(servers, servers[0])
	}
	if o.TrustHeight == 0 {
		cl, err := rpchttp.New(servers[0])
		if err != nil {
			return fmt.Errorf("%w: %w", ErrStateSync, err)
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		b, err := cl.Block(cctx, nil)
		if err != nil {
			return fmt.Errorf("%w: reading the trust anchor from %s: %w", ErrStateSync, servers[0], err)
		}
		o.TrustHeight, o.TrustHash = b.Block.Height, b.BlockID.Hash.String()
	}
	if o.TrustPeriod == 0 {
		o.TrustPeriod = 168 * time.Hour
	}
	if o.DiscoveryTime == 0 {
		o.DiscoveryTime = 5 * time.Second
	}
	ss := c.StateSync
	ss.Enable, ss.RPCServers, ss.TrustHeight, ss.TrustHash = true, servers, o.TrustHeight, o.TrustHash
	ss.TrustPeriod, ss.DiscoveryTime = o.TrustPeriod, o.DiscoveryTime
	if ss.ChunkRequestTimeout == 0 {
		ss.ChunkRequestTimeout = 10 * time.Second
	}
	if ss.ChunkFetchers == 0 {
		ss.ChunkFetchers = 4
	}
	if err := ss.ValidateBasic(); err != nil {
		return fmt.Errorf("%w: %w", ErrStateSync, err)
	}
	return nil
}
