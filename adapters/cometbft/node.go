package cometbft

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	dbm "github.com/cometbft/cometbft-db"
	cmtcfg "github.com/cometbft/cometbft/config"
	cmtcrypto "github.com/cometbft/cometbft/crypto"
	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"
	cmtjson "github.com/cometbft/cometbft/libs/json"
	cmtlog "github.com/cometbft/cometbft/libs/log"
	"github.com/cometbft/cometbft/mempool"
	cmtnode "github.com/cometbft/cometbft/node"
	"github.com/cometbft/cometbft/p2p"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/proxy"
	cmttypes "github.com/cometbft/cometbft/types"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/viper"

	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/seed"
)

// Node is one validator of a network: the CIP-11 validator (QUIC server,
// core, stores) driven by an in-process CometBFT node through [App].
type Node struct {
	V   *node.Validator
	App *App
	cmt *cmtnode.Node
	eng *mempoolEngine
	dbs *lateDBs
	// reg and metrics: CometBFT's series and gossip on
	// NodeConfig.Registerer (nil without one); Close unregisters them.
	reg     prometheus.Registerer
	metrics *cometMetrics
	gossipC prometheus.Collector
	// home and keys: the home directory and the keys read from it
	// (AddEpochShare).
	home string
	keys *node.ValidatorKeys
	// fatal is closed on CometBFT's first fatal error (fatalLogger),
	// whose error fatalErr then holds.
	fatal     chan struct{}
	fatalErr  atomic.Pointer[error]
	fatalOnce sync.Once
}

// mempoolEngine is the validator's Broadcaster: CometBFT's mempool, whose
// CheckTx is App.CheckTx on every validator (D33).
type mempoolEngine struct {
	n     atomic.Pointer[cmtnode.Node]
	facts *consensusFacts // set before n (health.go)
}

func (e *mempoolEngine) BroadcastTx(raw []byte) error { return e.broadcast(raw) }

// Size is the number of transactions in CometBFT's mempool
// (node.MempoolSizer); 0 while the engine is not running.
func (e *mempoolEngine) Size() int {
	if n := e.n.Load(); n != nil {
		return n.Mempool().Size()
	}
	return 0
}

func (e *mempoolEngine) BroadcastJob(spec []byte) error { return e.broadcast(spec) }

func (e *mempoolEngine) broadcast(tx []byte) error {
	n := e.n.Load()
	if n == nil {
		return fmt.Errorf("%w: the consensus engine is not running", node.ErrClosed)
	}
	rr, err := n.Mempool().CheckTx(tx, "")
	switch {
	case errors.Is(err, mempool.ErrTxInCache):
		return fmt.Errorf("%w: in the consensus mempool", node.ErrDuplicate)
	case errors.As(err, new(mempool.ErrMempoolIsFull)):
		return fmt.Errorf("%w: %w", chainMempoolFull, err)
	case err != nil:
		return fmt.Errorf("%w: %w", node.ErrBadRequest, err)
	}
	rr.Wait()
	res := rr.Response.GetCheckTx()
	if res == nil {
		return fmt.Errorf("%w: no CheckTx response", node.ErrClosed)
	}
	return errOf(res.Code, res.Log)
}

// ReadHome loads a home's CIP-11 genesis, keys and CometBFT configuration.
func ReadHome(dir string) (*Home, error) {
	g, err := node.LoadGenesis(filepath.Join(dir, "cip11.json"))
	if err != nil {
		return nil, err
	}
	if !g.Network() {
		return nil, fmt.Errorf("%w: %s has no validator_set", node.ErrGenesis, filepath.Join(dir, "cip11.json"))
	}
	keys, err := node.LoadValidatorKeys(filepath.Join(dir, "validator.key"))
	if err != nil {
		return nil, err
	}
	v := viper.New()
	v.SetConfigFile(filepath.Join(dir, "config", "config.toml"))
	if err := v.ReadInConfig(); err != nil {
		return nil, fmt.Errorf("cometbft: %w", err)
	}
	c := cmtcfg.DefaultConfig()
	if err := v.Unmarshal(c); err != nil {
		return nil, fmt.Errorf("cometbft: config.toml: %w", err)
	}
	c.SetRoot(dir)
	if err := c.ValidateBasic(); err != nil {
		return nil, fmt.Errorf("cometbft: config.toml: %w", err)
	}
	gd, err := cmttypes.GenesisDocFromFile(c.GenesisFile())
	if err != nil {
		return nil, fmt.Errorf("cometbft: %w", err)
	}
	nk, err := p2p.LoadNodeKey(c.NodeKeyFile())
	if err != nil {
		return nil, fmt.Errorf("cometbft: %w", err)
	}
	if !bytes.Equal(nk.PubKey().Bytes(), cmtPub(keys).Bytes()) {
		return nil, fmt.Errorf("%w: node_key.json is not the validator's peer key (D29)", node.ErrKeyFile)
	}
	return &Home{Dir: dir, Genesis: g, Keys: keys, Config: c, GenDoc: gd, NodeKey: nk, Index: g.SelfIndex()}, nil
}

// voteAddrs orders the genesis validators' addresses by share index: the
// CometBFT genesis names validator i "cip11-v<i>".
func voteAddrs(gd *cmttypes.GenesisDoc, n int) ([][]byte, error) {
	if len(gd.Validators) != n {
		return nil, fmt.Errorf("%w: CometBFT genesis has %d validators, validator_set %d", node.ErrGenesis, len(gd.Validators), n)
	}
	out := make([][]byte, n)
	for _, v := range gd.Validators {
		var i int
		if _, err := fmt.Sscanf(v.Name, "cip11-v%d", &i); err != nil || i < 0 || i >= n || out[i] != nil {
			return nil, fmt.Errorf("%w: CometBFT genesis validator name %q (want cip11-v0 … cip11-v%d, once each)", node.ErrGenesis, v.Name, n-1)
		}
		out[i] = v.Address
	}
	return out, nil
}

// StartNode opens a validator home and starts the validator and its
// CometBFT node. CometBFT's handshake replays the blocks the validator's
// store is missing (Info reports its committed height).
func StartNode(ctx context.Context, cfg NodeConfig) (*Node, error) {
	h, err := ReadHome(cfg.Home)
	if err != nil {
		return nil, err
	}
	addrs, err := voteAddrs(h.GenDoc, len(h.Genesis.Set))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(h.Config.PrivValidatorKeyFile()); err != nil {
		return nil, fmt.Errorf("%w: %w", node.ErrKeyFile, err)
	}
	pv, err := loadFilePV(h.Config)
	if err != nil {
		return nil, err
	}
	eng := &mempoolEngine{}
	v, err := node.NewValidator(node.ValidatorConfig{Genesis: h.Genesis, Keys: h.Keys, KeyFile: filepath.Join(cfg.Home, "validator.key"), DataDir: filepath.Join(cfg.Home, "node"),
		NoSync: cfg.NoSync, RetainBlocks: cfg.RetainBlocks, Logger: cfg.Logger, Metrics: cfg.Metrics, Registerer: cfg.Registerer,
		Broadcaster: eng, OnPushes: cfg.OnPushes, StallBlocks: cfg.StallBlocks, RetainHeight: cfg.RetainHeight,
		SnapshotInterval: cfg.SnapshotInterval, SnapshotKeep: cfg.SnapshotKeep, SnapshotChunkSize: cfg.SnapshotChunkSize, KeepBlocks: cfg.KeepBlocks})
	if err != nil {
		return nil, err
	}
	if cfg.StateSync != nil && v.Height() == 0 { // CometBFT state-syncs only an empty node
		if err := configureStateSync(ctx, h.Config, *cfg.StateSync); err != nil {
			v.Close()
			return nil, err
		}
	}
	app, err := NewApp(AppConfig{Validator: v, Share: seed.Share{Index: uint32(h.Index + 1), Key: h.Keys.Threshold},
		VoteAddrs: addrs, Logger: cfg.Logger, OnFinalized: cfg.OnFinalized})
	if err != nil {
		v.Close()
		return nil, err
	}
	v.SetCatchUp(app.catchUp) // catching up from here: CometBFT's handshake replays first
	eng.facts = &consensusFacts{app: app}
	dbs := &lateDBs{log: cfg.Logger}
	if cfg.CometLogger == nil {
		cfg.CometLogger = cmtlog.NewNopLogger()
	}
	nd := &Node{V: v, App: app, eng: eng, dbs: dbs, home: cfg.Home, keys: h.Keys, fatal: make(chan struct{}), reg: cfg.Registerer}
	logger := fatalLogger{next: cfg.CometLogger, onFatal: nd.fail}
	// Peers pass App.Query's filter (peerFilter), which refuses every
	// peer once Close has begun.
	h.Config.FilterPeers = true
	if cfg.KeepBlocks > 0 { // retention: CometBFT's stores give the pruned space back
		h.Config.Storage.Compact = true
		// every 100 pruned heights (default 1000: up to 1000 blocks of
		// deleted data stay on disk between compactions)
		h.Config.Storage.CompactionInterval = 100
		// CometBFT keeps every height's FinalizeBlock response in its
		// state store and prunes them only for a data companion (v1.0.1
		// pruner.go): about 1.3 KB a block forever. Discarded, it keeps
		// the last (a crash's replay needs it); /block_results answers
		// only for the last height.
		h.Config.Storage.DiscardABCIResponses = true
		app.walDir = filepath.Dir(h.Config.Consensus.WalFile())
	}
	var opts []cmtnode.Option
	if !cfg.NoGossip {
		app.gossip = newPresenceReactor(app.log, app.gossipValidators, v.Height)
		opts = append(opts, cmtnode.CustomReactors(map[string]p2p.Reactor{"CIP11PRESENCE": app.gossip}))
	}
	metricsProvider := cmtnode.DefaultMetricsProvider(h.Config.Instrumentation)
	if cfg.Registerer != nil {
		nd.metrics = newCometMetrics(cfg.Registerer)
		metricsProvider = nd.metrics.provider()
	}
	cn, err := cmtnode.NewNode(ctx, h.Config, pv, h.NodeKey, proxy.NewLocalClientCreator(app),
		cmtnode.DefaultGenesisDocProviderFunc(h.Config), dbs.provide,
		metricsProvider, logger, opts...)
	if err != nil {
		nd.unregister()
		v.Close()
		return nil, errors.Join(fmt.Errorf("cometbft: %w", err), dbs.closeAll())
	}
	if nd.metrics != nil {
		if err := nd.metrics.err(); err != nil {
			app.log.Warn("some CometBFT series are not exported", "err", err)
		}
		if app.gossip != nil {
			nd.gossipC = newGossipCollector(app.gossip)
			if err := cfg.Registerer.Register(nd.gossipC); err != nil {
				nd.gossipC = nil
				app.log.Warn("the presence gossip's series are not exported", "err", err)
			}
		}
	}
	eng.n.Store(cn)
	if cfg.KeepBlocks > 0 { // retention: Commit deletes the extended commits below the base (ecprune.go)
		app.blockDB = dbs.byID("blockstore")
	}
	app.cmt.Store(cn)
	if err := cn.Start(); err != nil {
		nd.unregister()
		eng.n.Store(nil)
		v.Close()
		return nil, errors.Join(fmt.Errorf("cometbft: start: %w", err), dbs.closeAll())
	}
	nd.cmt = cn
	for _, spec := range v.RecoveredJobs() { // CometBFT's mempool, the only one, lost them with the restart
		if err := eng.BroadcastJob(spec); err != nil {
			app.log.Warn("a recovered job could not re-enter the consensus mempool", "err", err)
		}
	}
	return nd, nil
}

// fail records CometBFT's first fatal error (fatalLogger's onFatal).
func (n *Node) fail(err error) {
	n.fatalOnce.Do(func() {
		n.fatalErr.Store(&err)
		n.App.log.Error("CometBFT consensus failed; the validator stops", "err", err)
		close(n.fatal)
	})
}

// Err is the node's fatal failure: CometBFT's consensus failure
// (ErrConsensusFailure) or the validator's own (node.Validator.Err, a
// failed block-log append, state commit or journal write, wrapping
// node.ErrFailed); nil while it runs.
func (n *Node) Err() error {
	if p := n.fatalErr.Load(); p != nil {
		return *p
	}
	return n.V.Err()
}

// Run watches the node until ctx ends (nil) or it fails: CometBFT's
// consensus failure, the validator's core failure or its store's
// background failure (node.Validator.Run). The error names the cause; a
// process should exit non-zero on it, since a validator whose consensus
// halted decides nothing more while it looks alive.
func (n *Node) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- n.V.Run(ctx) }()
	select {
	case err := <-done:
		return err
	case <-n.fatal:
		cancel()
		<-done
		return n.Err()
	}
}

// AddEpochShare hands the node its threshold share of epoch e (DEVNET:
// the devnet dealer of an in-band reconfiguration, D31, SPEC-NOTES C11)
// and stores it in the home's validator.key, so that a restart keeps it.
func (n *Node) AddEpochShare(e uint64, secret [32]byte) error {
	if err := n.keys.AddEpochShare(e, secret); err != nil {
		return err
	}
	return n.keys.Write(filepath.Join(n.home, "validator.key"))
}

// ErrSignStateMissing: the home has a vote key but no last-sign state
// (data/priv_validator_state.json), the file that keeps the validator
// from signing twice at a height it already voted on. StartNode refuses
// to start rather than begin again from an empty one.
var ErrSignStateMissing = fmt.Errorf("%w: the vote key's last-sign state is missing", node.ErrKeyFile)

// SignStateRemedy is what a refused start (ErrSignStateMissing) tells the
// operator to do (docs/network.md, "Wiped homes").
const SignStateRemedy = "restore the file from a backup of this home; if it is lost, run `cip11 reset -home HOME -signed-height H` " +
	"with H at least the network's current height (GET /status of a live validator), so that it never signs at or below H " +
	"(docs/network.md, \"Wiped homes\")"

// checkSignState refuses a home whose vote key has no last-sign state, or
// a last-sign state that does not decode (CometBFT would exit the process
// on either).
func checkSignState(c *cmtcfg.Config) error {
	path := c.PrivValidatorStateFile()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s does not exist. It records the last height, round and step this validator signed; "+
			"starting without it could sign a second, conflicting vote at a height it already voted on (double signing, "+
			"equivocation evidence against this validator). To continue: %s", ErrSignStateMissing, path, SignStateRemedy)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", node.ErrKeyFile, err)
	}
	var st privval.FilePVLastSignState
	if err := cmtjson.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("%w: %s does not decode (%v); %s", node.ErrKeyFile, path, err, SignStateRemedy)
	}
	return nil
}

// loadFilePV loads the vote key and its last-sign state, turning the
// library's exit on a bad file into an error.
func loadFilePV(c *cmtcfg.Config) (pv *privval.FilePV, err error) {
	if err := checkSignState(c); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: vote key: %v", node.ErrKeyFile, r)
		}
	}()
	return privval.LoadOrGenFilePV(c.PrivValidatorKeyFile(), c.PrivValidatorStateFile(), nil)
}

// Gossip is the presence gossip's counters (zero with NoGossip).
func (n *Node) Gossip() GossipStats {
	if n.App.gossip == nil {
		return GossipStats{}
	}
	return n.App.gossip.stats()
}

// ID is the node's p2p ID (from its peer key, D29).
func (n *Node) ID() string { return string(n.cmt.NodeInfo().ID()) }

// DropPeer disconnects the peer with p2p ID id, if connected. An
// in-process restart needs it: CometBFT v1.0.1's reconnect routines of a
// stopped node can still complete a dial after Stop, leaving its peers a
// connection nobody serves under the node's ID until the pong timeout,
// and they refuse the restarted node's connections as a duplicate ID
// meanwhile. A killed process leaves no such connection.
func (n *Node) DropPeer(id string) {
	sw := n.cmt.Switch()
	if p := sw.Peers().Get(p2p.ID(id)); p != nil {
		sw.StopPeerForError(p, "the peer restarted")
	}
}

// Height is CometBFT's last committed block height.
func (n *Node) Height() int64 { return n.cmt.BlockStore().Height() }

// Peers is the number of connected CometBFT peers.
func (n *Node) Peers() int { return n.cmt.Switch().Peers().Size() }

// Close stops CometBFT, then the validator, then closes CometBFT's stores
// once the reads in flight have returned (lateDB), and takes the node's
// series off the registry.
func (n *Node) Close() error {
	var errs []error
	n.App.closing.Store(true) // peerFilter: no peer joins a stopping switch
	if n.cmt.IsRunning() {
		if err := n.cmt.Stop(); err != nil {
			errs = append(errs, err)
		}
		n.cmt.Wait()
	}
	n.eng.n.Store(nil)
	n.unregister()
	errs = append(errs, n.V.Close())
	errs = append(errs, n.dbs.closeAll()) // lateDB: waits for the reads in flight

	return errors.Join(errs...)
}

// unregister removes CometBFT's and the gossip's series from the
// registry (a no-op without one).
func (n *Node) unregister() {
	if n.metrics != nil {
		n.metrics.unregister()
	}
	if n.gossipC != nil {
		n.reg.Unregister(n.gossipC)
		n.gossipC = nil
	}
}

var chainMempoolFull = chain.ErrMempoolFull

// cmtPub is the validator's peer key as a CometBFT key.
func cmtPub(k *node.ValidatorKeys) cmtcrypto.PubKey {
	s := k.Ed25519Seed()
	return cmted25519.PrivKey(ed25519.NewKeyFromSeed(s[:])).PubKey()
}

// ErrStoreClosed: a write to one of CometBFT's stores after Node.Close
// closed it (lateDB).
var ErrStoreClosed = errors.New("cometbft: store closed")

// lateDB is one of CometBFT's stores whose real Close is Node.Close's.
// v1.0.1 closes its block and state stores in Node.OnStop while consensus
// reactor goroutines that nothing tracks (queryMaj23Routine sleeps up to
// three times 2 s between its running check and a read) may still read
// them, and a read of a closed Pebble store panics the process. Rather
// than sleep past them, Node.Close waits for the operations in flight (the
// write lock), then closes the store; from then on a read finds nothing
// (a commit, block or part not found, which those routines skip), an
// iterator is empty and a write fails with ErrStoreClosed.
type lateDB struct {
	id     string // the DBContext's ("blockstore", "state", …)
	db     dbm.DB
	mu     sync.RWMutex
	closed bool
}

// open runs fn under the read lock unless the store is closed.
func (d *lateDB) open(fn func()) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return false
	}
	fn()
	return true
}

func (d *lateDB) Get(k []byte) (v []byte, err error) {
	d.open(func() { v, err = d.db.Get(k) })
	return v, err
}

func (d *lateDB) Has(k []byte) (ok bool, err error) {
	d.open(func() { ok, err = d.db.Has(k) })
	return ok, err
}

func (d *lateDB) write(fn func() error) error {
	err := ErrStoreClosed
	d.open(func() { err = fn() })
	return err
}

func (d *lateDB) Set(k, v []byte) error { return d.write(func() error { return d.db.Set(k, v) }) }
func (d *lateDB) SetSync(k, v []byte) error {
	return d.write(func() error { return d.db.SetSync(k, v) })
}
func (d *lateDB) Delete(k []byte) error { return d.write(func() error { return d.db.Delete(k) }) }
func (d *lateDB) DeleteSync(k []byte) error {
	return d.write(func() error { return d.db.DeleteSync(k) })
}

func (d *lateDB) Iterator(start, end []byte) (it dbm.Iterator, err error) {
	it = lateIter{d: d, start: start, end: end}
	d.open(func() {
		var x dbm.Iterator
		if x, err = d.db.Iterator(start, end); err == nil {
			it = lateIter{d: d, it: x, start: start, end: end}
		}
	})
	return it, err
}

func (d *lateDB) ReverseIterator(start, end []byte) (it dbm.Iterator, err error) {
	it = lateIter{d: d, start: start, end: end}
	d.open(func() {
		var x dbm.Iterator
		if x, err = d.db.ReverseIterator(start, end); err == nil {
			it = lateIter{d: d, it: x, start: start, end: end}
		}
	})
	return it, err
}

// Close implements dbm.DB: the real close is Node.Close's (closeNow).
func (d *lateDB) Close() error { return nil }

func (d *lateDB) NewBatch() dbm.Batch {
	var b dbm.Batch
	d.open(func() { b = d.db.NewBatch() })
	return lateBatch{d: d, b: b}
}

func (d *lateDB) Print() error { return d.write(d.db.Print) }

func (d *lateDB) Stats() (st map[string]string) {
	d.open(func() { st = d.db.Stats() })
	return st
}

func (d *lateDB) Compact(start, end []byte) error {
	return d.write(func() error { return d.db.Compact(start, end) })
}

// closeNow waits for the operations in flight and closes the store.
func (d *lateDB) closeNow() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	return d.db.Close()
}

// lateIter is an iterator of a lateDB: empty once the store is closed
// (it is nil when the store was closed before it was made).
type lateIter struct {
	d          *lateDB
	it         dbm.Iterator
	start, end []byte
}

func (i lateIter) Domain() ([]byte, []byte) { return i.start, i.end }

func (i lateIter) Valid() (ok bool) {
	i.d.open(func() { ok = i.it != nil && i.it.Valid() })
	return ok
}

func (i lateIter) Next() {
	i.d.open(func() {
		if i.it != nil {
			i.it.Next()
		}
	})
}

func (i lateIter) Key() (k []byte) {
	i.d.open(func() {
		if i.it != nil {
			k = i.it.Key()
		}
	})
	return k
}

func (i lateIter) Value() (v []byte) {
	i.d.open(func() {
		if i.it != nil {
			v = i.it.Value()
		}
	})
	return v
}

func (i lateIter) Error() (err error) {
	i.d.open(func() {
		if i.it != nil {
			err = i.it.Error()
		}
	})
	return err
}

func (i lateIter) Close() (err error) {
	i.d.open(func() {
		if i.it != nil {
			err = i.it.Close()
		}
	})
	return err
}

// lateBatch is a batch of a lateDB: its writes fail with ErrStoreClosed
// once the store is closed.
type lateBatch struct {
	d *lateDB
	b dbm.Batch // nil when the store was closed before it was made
}

func (b lateBatch) op(fn func(dbm.Batch) error) error {
	return b.d.write(func() error {
		if b.b == nil {
			return ErrStoreClosed
		}
		return fn(b.b)
	})
}

func (b lateBatch) Set(k, v []byte) error {
	return b.op(func(x dbm.Batch) error { return x.Set(k, v) })
}
func (b lateBatch) Delete(k []byte) error {
	return b.op(func(x dbm.Batch) error { return x.Delete(k) })
}
func (b lateBatch) Write() error     { return b.op(dbm.Batch.Write) }
func (b lateBatch) WriteSync() error { return b.op(dbm.Batch.WriteSync) }

func (b lateBatch) Close() error {
	if err := b.op(dbm.Batch.Close); !errors.Is(err, ErrStoreClosed) {
		return err
	}
	return nil
}

// lateDBs opens CometBFT's stores through the default provider, keeping
// them for a late close.
type lateDBs struct {
	mu  sync.Mutex
	dbs []*lateDB
	log *slog.Logger // pebble's own lines (openDB); nil: slog's default
}

func (l *lateDBs) provide(ctx *cmtcfg.DBContext) (dbm.DB, error) {
	db, err := openDB(ctx, l.log)
	if err != nil {
		return nil, err
	}
	d := &lateDB{id: ctx.ID, db: db}
	l.mu.Lock()
	l.dbs = append(l.dbs, d)
	l.mu.Unlock()
	return d, nil
}

// byID is the store opened for DBContext id; nil if none.
func (l *lateDBs) byID(id string) dbm.DB {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range l.dbs {
		if d.id == id {
			return d
		}
	}
	return nil
}

// closeAll closes the real stores, each once its operations in flight
// have returned.
func (l *lateDBs) closeAll() error {
	l.mu.Lock()
	dbs := l.dbs
	l.dbs = nil
	l.mu.Unlock()
	var errs []error
	for _, d := range dbs {
		errs = append(errs, d.closeNow())
	}
	return errors.Join(errs...)
}

// cmtAddr is the CometBFT address of an Ed25519 consensus public key.
func cmtAddr(pub []byte) []byte { return cmted25519.PubKey(pub).Address() }
