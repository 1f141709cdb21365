package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/adapters/pebble"
	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
	"github.com/cip11/cip11/wire"
)

// Opening a validator's storage (state store, block log, journal, event
// log, archive) and recovering the chain core from it (§8.1).

// removeCreated removes what a failed first start created, so that a
// failed start leaves no new files behind.
func (v *Validator) removeCreated(created []string) {
	if v.tmp {
		os.RemoveAll(v.dir)
		return
	}
	for i := len(created) - 1; i >= 0; i-- {
		os.RemoveAll(created[i])
	}
}

func (v *Validator) closeStorage() {
	if v.x != nil {
		v.x.Close()
		v.x = nil
	}
	if v.blog != nil {
		v.blog.close()
		v.blog = nil
	}
	if v.jrnl != nil {
		v.jrnl.close()
		v.jrnl = nil
	}
	if v.archive != nil {
		v.archive.close()
		v.archive = nil
	}
	if v.events != nil {
		v.events.close()
		v.events = nil
	}
}

// openStorage builds the storage and the core and recovers (§8.1 crash
// recovery); it returns the paths it created.
func (v *Validator) openStorage() (created []string, err error) {
	mk := func(p string) string {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			created = append(created, p)
		}
		return p
	}
	if _, err := os.Stat(v.dir); errors.Is(err, os.ErrNotExist) {
		created = append(created, v.dir)
	}
	if err := os.MkdirAll(v.dir, 0o755); err != nil {
		return created, err
	}
	sync := !v.cfg.NoSync
	mode := pebble.SyncAlways
	if !sync {
		mode = pebble.SyncNever
	}
	statePath, blocksPath, jobsPath, archPath := mk(filepath.Join(v.dir, "state")), mk(filepath.Join(v.dir, "blocks.jsonl")),
		mk(filepath.Join(v.dir, "jobs.jsonl")), mk(filepath.Join(v.dir, "jobs"))
	mk(filepath.Join(v.dir, "events.jsonl"))
	mk(filepath.Join(v.dir, "blocks.times"))
	x, err := blockexec.New(v.hdr, blockexec.Options{SnapshotCache: 8, OpenStore: func(h chainlog.Header) (store.Store, error) {
		ps, err := pebble.Open(statePath, pebble.Options{Sync: mode, Logger: v.log, ReputationConfig: &state.ReputationConfig{
			Normalizer: uint64(h.Reputation.Normalizer), WMinFloorX1e6: uint64(h.Reputation.WMinFloorX1e6)}})
		if err == nil {
			v.pstore = ps
		}
		return ps, err
	}})
	if err != nil {
		return created, err
	}
	v.x = x
	if v.archive, err = openArchive(archPath, v.log); err != nil {
		return created, err
	}
	specs, err := readJournal(jobsPath)
	if err != nil {
		return created, err
	}
	if err := v.recover(blocksPath, specs, sync); err != nil {
		return created, err
	}
	v.reg.Store(&registryRef{v.x.Store().Registry()})
	v.ps.Store(v.pstore)
	v.earliest.Store(v.blog.base.Height + 1)
	v.loadSnapshots()
	return created, nil
}

// open builds the storage and the core and recovers (§8.1 crash recovery),
// then starts the transport; it returns the paths it created, for removal
// if the start fails.
func (v *Validator) open() (created []string, err error) {
	if created, err = v.openStorage(); err != nil {
		return created, err
	}
	if v.phase, err = PhaseOf(v.p); err != nil {
		return created, err
	}
	if !v.phase.Transport() { // §14: transport off, no listener; poll only
		v.log.Info("CIP11_TRANSPORT_ENABLED is off: no QUIC listener, runners poll", "phase", v.phase)
		v.cfg.Metrics.SetHeight(v.core.Height())
		return created, nil
	}
	srv, err := cquic.NewServer(context.Background(), cquic.ServerConfig{
		Key: v.cfg.Keys.Peer, ChainID: uint64(v.g.ChainID), Params: v.p,
		Registry: committedRegistry{v}, Validators: v.sched,
		TxDecoder: chain.TxCodec{ChainID: uint64(v.g.ChainID)}, TxValidator: chain.TxCodec{ChainID: uint64(v.g.ChainID)}, Mempool: (*validatorMempool)(v),
		OnOutcome: v.onOutcome, OnAck: v.onAck, OnRefuse: func(r wire.GoodbyeReason) { v.dash.refuse(r, v.now()) },
		OnPushError: v.onPushError, OnPushed: v.onPushed, PushWindow: v.cfg.PushWindow, Logger: v.log,
		Listen: v.cfg.Listen, RevealOpen: v.revealOpen(),
	}, v.core.Height())
	if err != nil {
		return created, err
	}
	v.srv = srv
	if v.cfg.Registerer != nil {
		v.collector = newValidatorCollector(v, srv)
		if err := v.cfg.Registerer.Register(v.collector); err != nil {
			srv.Close()
			v.collector = nil
			return created, fmt.Errorf("transport metrics: %w", err)
		}
	}
	v.cfg.Metrics.SetHeight(v.core.Height())
	return created, nil
}

// revealOpen is the server's reveal-window test (§10.3). With external consensus
// the window of a push opens only when a committed block includes its
// commitment (ReleaseReveal from FinalizeBlock): never on its own, and not
// by the server's default, the block after the commitment was forwarded,
// which a block without it can be. Without one the default stands (the
// commitment's admission releases at once, AdmitTx).
func (v *Validator) revealOpen() func(cip11.Hash, uint64) bool {
	if v.cfg.Broadcaster == nil {
		return nil
	}
	return func(cip11.Hash, uint64) bool { return false }
}

// recover builds the core and brings it level with the block log and the
// journal: journaled jobs first, then every logged block streamed through
// the core (Restore), the log's last block re-executed if the store is one
// behind (RecoverTail), and the journal compacted to the jobs still open.
func (v *Validator) recover(blocksPath string, specs []*chain.JobSpec, sync bool) error {
	core, err := chain.New(chain.Config{Params: v.p, ChainID: uint64(v.g.ChainID), Runners: v.g.chainRunners(),
		Key: v.cfg.Keys.Peer, Exec: v.x, Log: blogPort{v}, Journal: journalPort{v}, Archive: v.archive,
		RetainBlocks: v.cfg.RetainBlocks, Logger: v.log, History: historyPort{v}, ModeA: v.p.PresenceHardExcludeEnabled,
		Admin: v.g.ReconfigAdmin, ExternalMempool: v.cfg.Broadcaster != nil, RetainHeight: v.cfg.RetainHeight})
	if err != nil {
		return err
	}
	v.core = core
	for _, s := range specs {
		core.LoadJob(s)
	}
	sh, ok := v.x.LastCommitted()
	if !ok {
		sh = 0
	}
	var tail *chainlog.Block
	var tailAt time.Time
	var history []job.BlockSummary // the log's last blocks, for the dashboard
	// the genesis's epochs, then the reconfigurations the block log holds
	if v.sched == nil { // kept across a snapshot install: the transport and the engine hold it
		if v.sched, err = NewSchedules(ScheduleConfig{Genesis: v.g, Keys: v.cfg.Keys, KeyFile: v.cfg.KeyFile, Logger: v.log}); err != nil {
			return err
		}
	} else if err := v.sched.reset(); err != nil {
		return err
	}
	restore := func(b *chainlog.Block, at time.Time) error {
		h := uint64(b.Height)
		if _, err := v.noteEpochs(b); err != nil {
			return err
		}
		v.sched.noteBeacon(b.ParentBeacon)
		history = append(history, job.BlockSummary{Height: h, Time: at, Txs: len(b.Txs), Assignments: len(b.Out.Assignments)})
		if len(history) > 2*dashHistoryBlocks {
			history = append(history[:0], history[len(history)-dashHistoryBlocks:]...)
		}
		switch {
		case tail != nil:
			return fmt.Errorf("%w: the store is at height %d, the block log at %d or more", ErrBlockLog, sh, h)
		case h <= sh:
			return core.Restore(b, at)
		case h == sh+1 && v.cfg.Broadcaster != nil:
			// Under an engine the block is the engine's to replay: CometBFT
			// saves a block's FinalizeBlock responses after FinalizeBlock
			// returns (which appended it here) and calls Commit after that,
			// so a crash in between leaves no responses for h. Re-executed
			// here, the app would report h in Info, and CometBFT's handshake
			// would stop on "expected last ABCI responses at height h"; cut
			// off, the app reports sh and CometBFT replays h to it.
			v.log.Info("dropping the block log's last block: the store did not commit it, the engine replays it", "height", h)
			return errDropTail
		case h == sh+1:
			c := *b
			tail, tailAt = &c, at
			return nil
		}
		return fmt.Errorf("%w: the store is at height %d, the block log at %d", ErrBlockLog, sh, h)
	}
	onBase := func(b logBase) error { // a pruned log: the core resumes at its base
		if err := core.Resume(b.Height); err != nil {
			return err
		}
		for i := range b.Reconfigurations {
			r := &b.Reconfigurations[i]
			if err := v.x.RestoreReconfiguration(r); err != nil {
				return fmt.Errorf("%w: base reconfiguration %d: %w", ErrBlockLog, i, err)
			}
			if err := v.noteReconf(b.Height, r); err != nil {
				return err
			}
		}
		v.log.Info("the block log is pruned: the chain core resumes at its base", "base", b.Height,
			"reconfigurations", len(b.Reconfigurations))
		return nil
	}
	blog, err := openBlockLog(blocksPath, v.hdr, sync, v.now, onBase, restore)
	if err != nil {
		return err
	}
	v.blog = blog
	if tail != nil {
		if err := core.RecoverTail(tail, tailAt); err != nil {
			return err
		}
		v.log.Info("recovered the last block from the block log", "height", tail.Height)
	}
	if core.Height() != sh && tail == nil {
		return fmt.Errorf("%w: the store is at height %d, the block log at %d", ErrBlockLog, sh, core.Height())
	}
	v.dash.start(v.now(), core.Height(), history)
	ev, err := openEventLog(filepath.Join(v.dir, "events.jsonl"), v.log, core.RestoreHistory, core.RestoreOutput)
	if err != nil {
		return err
	}
	v.events = ev
	keep := core.FinishRecovery()
	if v.jrnl, err = writeJournal(filepath.Join(v.dir, "jobs.jsonl"), keep, sync); err != nil {
		return err
	}
	v.height.Store(core.Height())
	if core.Height() > 0 || len(specs) > 0 {
		v.log.Info("recovered", "height", core.Height(), "journal", len(specs), "open_jobs", len(keep),
			"jobs_in_memory", core.InMemory())
	}
	return nil
}

// blogPort and journalPort hand the core the block log and journal that
// open creates after the core (recovery reads them through the core).
type blogPort struct{ v *Validator }

func (p blogPort) Append(b *chainlog.Block) error { return p.v.blog.Append(b) }

type journalPort struct{ v *Validator }

func (p journalPort) Append(spec []byte) error {
	if p.v.jrnl == nil {
		return fmt.Errorf("%w: the journal is not open", ErrClosed)
	}
	return p.v.jrnl.Append(spec)
}
