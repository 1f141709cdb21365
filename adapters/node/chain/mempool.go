package chain

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/job"
)

// dedupeRotate is how many blocks one generation of the transaction dedupe
// set lives: a duplicate older than two generations is re-admitted, which
// changes nothing (a commit or reveal already recorded is kept once).
const dedupeRotate = 1024

// mempool holds what the next proposal draws from: accepted job submits in
// arrival order, registrations and heartbeats (§7.1). The result verifier's
// commits and reveals live on the jobs themselves.
type mempool struct {
	submits []cip11.Hash        // accepted jobs no block has included, in arrival order
	known   map[cip11.Hash]bool // tx hashes seen (dedupe), this generation
	old     map[cip11.Hash]bool // and the previous one
	regs    []*Tx
	beats   map[cip11.Address]*Tx // each runner's waiting heartbeat transaction of the highest nonce
	// certs holds each runner's newest waiting SubmitPresenceCertificate
	// (§8.3): a newer one replaces it, since only the strictly newest
	// anchor can be accepted.
	certs map[cip11.Address]*chainlog.Certificate
	// certRaw is each waiting certificate's signed transaction: a network
	// block carries it beside the body (blocklayout: runner_signed).
	certRaw map[cip11.Address][]byte
	// reconf is the waiting devnet admin reconfiguration (one at a time,
	// SPEC-NOTES C11).
	reconf *Tx
}

func newMempool() mempool {
	return mempool{known: map[cip11.Hash]bool{}, beats: map[cip11.Address]*Tx{}, certs: map[cip11.Address]*chainlog.Certificate{}, certRaw: map[cip11.Address][]byte{}}
}

// Len is the number of waiting entries (submits, registrations,
// heartbeats, certificates).
func (m *mempool) Len() int {
	n := len(m.submits) + len(m.regs) + len(m.beats) + len(m.certs)
	if m.reconf != nil {
		n++
	}
	return n
}

// committed advances the mempool past committed block h: the dedupe set's
// generation, and what the block drew.
func (m *mempool) committed(h uint64) {
	if h%dedupeRotate == 0 {
		m.old, m.known = m.known, map[cip11.Hash]bool{}
	}
	// registrations and heartbeats: Core.pruneMempool
	if len(m.known) > dedupeMax { // a flood of distinct transactions rotates early
		m.old, m.known = m.known, map[cip11.Hash]bool{}
	}
}

// dedupeMax bounds one dedupe generation.
const dedupeMax = 1 << 20

// SubmitJob accepts a job: the spec is checked, journaled (durable before
// this returns) and queued for the next proposal. A journal failure leaves
// the job unaccepted and puts the core into the failed state: a node that
// cannot record what it accepts must not accept more.
func (c *Core) SubmitJob(spec *JobSpec, now time.Time) (cip11.Hash, error) {
	if err := c.check(); err != nil {
		return cip11.Hash{}, err
	}
	if err := spec.Check(); err != nil {
		return cip11.Hash{}, err
	}
	p := spec.Encode() // encoded and hashed once
	id := cip11.Keccak256([]byte(JobIDDomain), p)
	if n := c.registered(); int64(spec.Runners) > int64(n) {
		// refused now rather than seated short: a committee of M needs M
		// registered runners (issue 18 item 17, docs/http-api.md)
		return id, fmt.Errorf("%w: the job asks for %d runners and %d are registered", ErrBadRequest, spec.Runners, n)
	}
	if t := c.jobs[id]; t != nil {
		if t.reoffer && t.state == job.StateSubmitted {
			t.reoffer = false // journaled and tracked already: back in the engine's mempool
			return id, nil
		}
		return id, fmt.Errorf("%w: job %s", ErrDuplicate, id)
	}
	if n := c.mem.Len(); n >= c.cfg.MaxMempool {
		return id, fmt.Errorf("%w: %d entries wait for a block (max %d)", ErrMempoolFull, n, c.cfg.MaxMempool)
	}
	if v, ok, _ := c.cfg.Archive.Get(id); ok && v.ID == id {
		return id, fmt.Errorf("%w: job %s (ended)", ErrDuplicate, id)
	}
	if err := c.cfg.Journal.Append(p); err != nil {
		c.err = failed("job journal append", err)
		return id, c.err
	}
	c.trackEncoded(spec, id, p)
	if !c.cfg.ExternalMempool { // else the engine's mempool holds it
		c.mem.submits = append(c.mem.submits, id)
	}
	return id, nil
}

// registered is the number of runners registered on chain (before block
// 1: the genesis runners block 1 registers).
func (c *Core) registered() int {
	if c.Height() == 0 {
		return len(c.cfg.Runners)
	}
	return len(c.runnerIdx)
}

// LoadJob re-admits a journaled submission at recovery (before the block
// log is restored); a job the block log includes moves on from there.
func (c *Core) LoadJob(spec *JobSpec) {
	id := spec.ID()
	if c.jobs[id] != nil {
		return
	}
	t := c.track(spec)
	if !c.cfg.ExternalMempool {
		c.mem.submits = append(c.mem.submits, id)
	}
	t.reoffer = c.cfg.ExternalMempool
}

// Recovered are the specs of the journaled jobs no block has included
// yet, in submission order, under an engine's mempool
// (Config.ExternalMempool): it lost them with the restart, so the driver
// hands them to it again, and SubmitJob takes each back once without
// journaling it twice. Nil with the core's own pool, which keeps them.
func (c *Core) Recovered() [][]byte {
	var out [][]byte
	for _, id := range c.live {
		if t := c.jobs[id]; t.reoffer && t.state == job.StateSubmitted {
			out = append(out, t.p)
		}
	}
	return out
}

// FinishRecovery ends recovery: journaled jobs the block log included leave
// the mempool. It returns the specs of every job not yet terminal, in
// submission order: what a compacted journal must keep.
//
// A journaled job the block log does not include but the store holds was
// included in a block a pruned log no longer holds (Resume), and ended
// there: it is forgotten, not proposed again.
func (c *Core) FinishRecovery() [][]byte {
	c.live = slices.DeleteFunc(c.live, func(id cip11.Hash) bool {
		t := c.jobs[id]
		if t == nil || t.state != job.StateSubmitted {
			return false
		}
		if _, ok, err := c.x.Store().Jobs().Job(id); err != nil || !ok {
			return false
		}
		c.counts[stateIndex(t.state)]--
		c.stats.Accepted--
		delete(c.jobs, id)
		return true
	})
	c.dropIncluded()
	var keep [][]byte
	for _, id := range c.live {
		if t := c.jobs[id]; t != nil && t.p != nil {
			keep = append(keep, t.p)
		}
	}
	return keep
}

// OpenSpecs are the specs of every job not yet terminal, in submission
// order: what a compacted journal keeps (FinishRecovery's answer, taken
// while the validator runs).
func (c *Core) OpenSpecs() [][]byte {
	var keep [][]byte
	for _, id := range c.live {
		if t := c.jobs[id]; t != nil && t.p != nil && !t.state.Terminal() {
			keep = append(keep, t.p)
		}
	}
	return keep
}

func (c *Core) dropIncluded() {
	c.mem.submits = slices.DeleteFunc(c.mem.submits, func(id cip11.Hash) bool {
		t := c.jobs[id]
		return t == nil || t.state != job.StateSubmitted
	})
}

// SubmitTx is transaction admission (POST /submit and the QUIC result path,
// §10.3; an engine's CheckTx): decode and verify, then hand to the mempool
// (registrations, heartbeats, certificates, a reconfiguration; with
// Config.ExternalMempool only checked: the engine's mempool holds them) or
// the result verifier (CIP-2 commits and reveals).
func (c *Core) SubmitTx(raw []byte, now time.Time) (*Tx, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	tx, err := DecodeTx(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if tx.ChainID != c.cfg.ChainID {
		return tx, fmt.Errorf("%w: %w: signed for chain %d, this is chain %d", ErrBadRequest, ErrWrongChain, tx.ChainID, c.cfg.ChainID)
	}
	hash := tx.Hash()
	if c.mem.known[hash] || c.mem.old[hash] {
		return tx, fmt.Errorf("%w: transaction %s was already admitted", ErrDuplicate, hash)
	}
	if h := c.Height(); tx.Kind == TxHeartbeat && max(tx.Nonce, h)-min(tx.Nonce, h) > HeartbeatWindow {
		return tx, fmt.Errorf("%w: %w: heartbeat signed at height %d, the chain is at %d (window %d)", ErrBadRequest, ErrStaleTx,
			tx.Nonce, h, HeartbeatWindow)
	}
	if (tx.Kind == TxHeartbeat || tx.Kind == TxRegister || tx.Kind == TxCertificate) && c.mem.Len() >= c.cfg.MaxMempool {
		return tx, fmt.Errorf("%w: %d entries wait for a block (max %d)", ErrMempoolFull, c.mem.Len(), c.cfg.MaxMempool)
	}
	m := &c.mem
	if c.cfg.ExternalMempool {
		m = nil
	}
	if err := c.pool(m, tx, now, true); err != nil {
		return tx, err
	}
	c.mem.known[hash] = true
	c.learnKey(tx)
	return tx, nil
}

// pool checks node transaction tx and enters it into m (nil: checks
// only). results: a commit or reveal goes to the result verifier
// (admission); otherwise it is skipped (a proposal's pool: the tracker
// already holds what admission verified).
func (c *Core) pool(m *mempool, tx *Tx, now time.Time, results bool) error {
	switch tx.Kind {
	case TxHeartbeat:
		if last, ok := c.lastHeartbeats()(tx.From); ok && tx.Nonce <= last {
			return fmt.Errorf("%w: %w: signed at %d, last_heartbeat %d (§7.1: a heartbeat counts once)", ErrBadRequest, ErrHeartbeatSpent, tx.Nonce, last)
		}
		if m == nil {
			return nil
		}
		if w := m.beats[tx.From]; w == nil || tx.Nonce > w.Nonce {
			m.beats[tx.From] = tx
		}
	case TxRegister:
		if m != nil {
			m.regs = append(m.regs, tx)
		}
	case TxCommit, TxReveal:
		if !results {
			return nil
		}
		if err := c.verifyResult(tx, now); err != nil {
			return err
		}
		c.stats.ResultsForwarded++
	case TxCertificate:
		return c.admitCertificate(m, tx)
	case TxReconfigure:
		return c.admitReconfigure(m, tx)
	}
	return nil
}

// poolFrom is the pool a proposal draws from when an engine's mempool is
// the only one (Config.ExternalMempool): txs, in the engine's order, each
// through admission's checks again (the chain moved since CheckTx), job
// specs only of jobs the core tracks as submitted and not yet included.
// extra are the transactions the block should carry although the pool
// does not hold them (Proposal.Extra): results, and what no longer passes
// (stale: a block carrying it drains the engine's mempool). A transaction
// that does not decode for this chain is in neither (a block carrying it
// would be invalid). It changes no state of the core.
func (c *Core) poolFrom(txs [][]byte) (m *mempool, extra [][]byte) {
	p := newMempool()
	m = &p
	seen := map[cip11.Hash]bool{}
	h := c.Height()
	for _, raw := range txs {
		if bytes.HasPrefix(raw, []byte("C11J")) {
			spec, err := DecodeJobSpec(raw)
			if err != nil {
				continue
			}
			id := spec.ID()
			switch t := c.jobs[id]; {
			case seen[id]:
			case t == nil || t.state != job.StateSubmitted:
				extra = append(extra, raw)
			default:
				m.submits = append(m.submits, id)
			}
			seen[id] = true
			continue
		}
		tx, err := DecodeTx(raw)
		if err != nil || tx.ChainID != c.cfg.ChainID || seen[tx.Hash()] {
			continue
		}
		seen[tx.Hash()] = true
		_, registered := c.runnerIdx[tx.From]
		switch {
		case tx.Kind == TxCommit || tx.Kind == TxReveal:
			extra = append(extra, raw)
		case tx.Kind == TxHeartbeat && max(tx.Nonce, h)-min(tx.Nonce, h) > HeartbeatWindow,
			tx.Kind == TxRegister && registered:
			extra = append(extra, raw)
		default:
			if c.pool(m, tx, time.Time{}, false) != nil {
				extra = append(extra, raw)
			}
		}
	}
	return m, extra
}

// learnKey keeps a runner's public key for the poll fallback (§14). Only
// registered runners' keys are kept (the set is bounded by the registry),
// and a registration's until it is included.
func (c *Core) learnKey(tx *Tx) {
	if _, ok := c.runnerIdx[tx.From]; ok || tx.Kind == TxRegister {
		c.pubkeys[tx.From] = tx.PubKey
	}
}

// verifyResult applies a runner's CIP-2 commit or reveal to its job.
func (c *Core) verifyResult(tx *Tx, now time.Time) error {
	t := c.jobs[tx.JobID]
	if t == nil {
		return fmt.Errorf("%w: unknown job %s", ErrBadRequest, tx.JobID)
	}
	if t.state.Terminal() {
		return fmt.Errorf("%w: job %s has ended (%s)", ErrBadRequest, tx.JobID, t.state)
	}
	if !slices.Contains(t.committee, tx.From) {
		return fmt.Errorf("%w: %s is not on job %s's committee", ErrBadRequest, tx.From, tx.JobID)
	}
	h := c.Height()
	if tx.Kind == TxCommit {
		if _, ok := t.commits[tx.From]; ok {
			return fmt.Errorf("%w: %s already committed to job %s", ErrDuplicate, tx.From, tx.JobID)
		}
		t.commits[tx.From] = cip11.Hash(tx.Payload)
		t.commitTx[tx.From] = tx.Bytes()
		f := tx.From
		t.event(h, job.EventCommit, &f, "", now)
		return nil
	}
	res, salt, output, ok := SplitReveal(tx.Payload)
	if !ok { // DecodeTx refused it already; a Tx built by hand
		return fmt.Errorf("%w: %w", ErrBadRequest, CheckReveal(tx.Payload))
	}
	if t.runners > 1 {
		cm, ok := t.commits[tx.From]
		if !ok || Commitment(res, salt) != cm {
			return fmt.Errorf("%w: reveal without a matching commitment (CIP-2 commit-reveal)", ErrBadRequest)
		}
	}
	if _, ok := t.reveals[tx.From]; ok {
		// one result per committee member (a second execution, e.g. through
		// the poll fallback, changes nothing)
		return fmt.Errorf("%w: %s already revealed for job %s", ErrDuplicate, tx.From, tx.JobID)
	}
	t.reveals[tx.From] = res
	t.revealTx[tx.From] = tx.Bytes()
	if output != nil {
		t.outputs[tx.From] = output
	}
	f := tx.From
	t.event(h, job.EventRevealed, &f, "", now)
	return nil
}

// txs adds the block's transactions in order (D23): new submits, then the
// verifier's output: each revealed result of a current committee member
// (ResultSubmit), then Verified for jobs whose whole committee revealed,
// placed only while the job's deadline has not passed so that the timeout
// pass cannot have moved it (§11.2, D26), then the waiting reconfiguration
// and the certificates. It reports whether any were added. It changes
// nothing (a proposal that is not decided leaves the tracker as it was)
// except dropping a waiting reconfiguration that no block can carry any
// more: its epoch was taken or its lead has run out, neither of which
// comes back.
func (c *Core) txs(h uint64, b *chainlog.Block, m *mempool) bool {
	for _, id := range m.submits[:min(len(m.submits), c.cfg.MaxBlockSubmits)] {
		t := c.jobs[id]
		b.Txs = append(b.Txs, chainlog.Tx{Submit: &chainlog.Submit{JobID: id, Submitter: t.submitter, JobKind: t.kind,
			CommitteeSize: t.runners, TimeoutBlocks: chainlog.U64(t.timeout)}})
	}
	for _, id := range c.live {
		t := c.jobs[id]
		if t.state != job.StateAssigned || t.verified || h > t.deadline || len(t.committee) == 0 {
			continue
		}
		all := true
		for _, r := range t.committee {
			// Verified needs every member's reveal in hand: a network block
			// carries them all (SPEC-NOTES C7).
			all = all && t.revealTx[r] != nil
			if t.delivered[r] {
				continue
			}
			if _, ok := t.reveals[r]; ok {
				b.Txs = append(b.Txs, chainlog.Tx{ResultSubmit: &chainlog.ResultSubmit{JobID: id, Runner: r}})
			}
		}
		if !all {
			continue
		}
		vr := &chainlog.Verified{JobID: id, Matching: []cip11.Address{}, RunnersToSlash: []cip11.Address{}, RunnersUnrewarded: []cip11.Address{}}
		maj := majority(t.committee, t.reveals)
		for _, r := range t.committee {
			if t.reveals[r] == maj {
				vr.Matching = append(vr.Matching, r)
			}
		}
		b.Txs = append(b.Txs, chainlog.Tx{Verified: vr})
	}
	if t := m.reconf; t != nil {
		if err := c.x.CheckReconfigure(h, t.Reconfigure()); err != nil {
			c.log.Warn("dropping the waiting reconfiguration: block can no longer carry it", "height", h, "epoch", t.Nonce, "err", err)
			m.reconf = nil
		} else {
			b.Txs = append(b.Txs, chainlog.Tx{Reconfigure: t.Reconfigure()})
		}
	}
	if len(m.certs) > 0 {
		runners := slices.SortedFunc(maps.Keys(m.certs), func(a, b cip11.Address) int { return bytes.Compare(a[:], b[:]) })
		for _, r := range runners[:min(len(runners), MaxBlockCertificates)] {
			b.Txs = append(b.Txs, chainlog.Tx{Certificate: m.certs[r]})
		}
	}
	return len(b.Txs) > 0
}

// MaxBlockCertificates bounds the SubmitPresenceCertificate transactions
// one proposal includes (§8.3); the rest wait, by runner address.
const MaxBlockCertificates = 256

// majority is the result most committee members revealed (ties: the one
// the earliest committee member revealed).
func majority(committee []cip11.Address, reveals map[cip11.Address]cip11.Hash) cip11.Hash {
	var best cip11.Hash
	n := 0
	for _, r := range committee {
		res, ok := reveals[r]
		if !ok {
			continue
		}
		k := 0
		for _, q := range committee {
			if x, ok := reveals[q]; ok && x == res {
				k++
			}
		}
		if k > n {
			best, n = res, k
		}
	}
	return best
}

// admitCertificate queues a SubmitPresenceCertificate (§8.3) in m (nil:
// checks only) for the next proposal after the checks that need no
// signature verification: Mode A is configured, the signer is a
// registered runner, and the certificate height is not above the next
// block. The §8.3 receipt checks run at execution, where a failing
// certificate is recorded as rejected.
func (c *Core) admitCertificate(m *mempool, tx *Tx) error {
	if !c.cfg.ModeA {
		return fmt.Errorf("%w: this chain has no Mode-A certificates (§8.3)", ErrBadRequest)
	}
	if _, ok := c.runnerIdx[tx.From]; !ok {
		return fmt.Errorf("%w: certificate of %s, not a registered runner", ErrBadRequest, tx.From)
	}
	cert, err := tx.Certificate()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if h := c.Height() + 1; uint64(cert.Height) > h {
		return fmt.Errorf("%w: certificate height %d is above the next block %d", ErrBadRequest, cert.Height, h)
	}
	if m == &c.mem || m == nil {
		c.stats.CertificatesAdmitted++ // admission, not a proposal's pool
	}
	if m == nil {
		return nil
	}
	if old := m.certs[tx.From]; old == nil || old.Height <= cert.Height {
		m.certs[tx.From], m.certRaw[tx.From] = cert, tx.Bytes()
	}
	return nil
}

// pooled is the pool the open proposal drew from, or the core's own.
func (c *Core) pooled() *mempool {
	if c.drawn != nil {
		return c.drawn
	}
	return &c.mem
}

// CertificateTx is the signed transaction of the certificate the pool
// holds for runner (nil: none): a proposal carries it with the block
// (§8.3 runner_signed).
func (c *Core) CertificateTx(runner cip11.Address) []byte { return c.pooled().certRaw[runner] }

// admitReconfigure queues the devnet admin's reconfiguration in m (nil:
// checks only; SPEC-NOTES C11): the chain names an admin, the signer is
// it, no other waits, and the next block could carry it
// (blockexec.Executor.CheckReconfigure).
func (c *Core) admitReconfigure(m *mempool, tx *Tx) error {
	if c.cfg.Admin == nil {
		return fmt.Errorf("%w: this chain has no devnet admin: reconfigurations are refused (SPEC-NOTES C11)", ErrBadRequest)
	}
	if tx.From != *c.cfg.Admin {
		return fmt.Errorf("%w: reconfiguration signed by %s, not the devnet admin %s", ErrBadRequest, tx.From, *c.cfg.Admin)
	}
	if m != nil && m.reconf != nil {
		return fmt.Errorf("%w: the reconfiguration of epoch %d waits for a block: one at a time", ErrBadRequest, m.reconf.Nonce)
	}
	if err := c.x.CheckReconfigure(c.Height()+1, tx.Reconfigure()); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if m == nil {
		return nil
	}
	m.reconf = tx
	if m == &c.mem {
		r := tx.Reconfigure()
		c.log.Info("devnet admin reconfiguration admitted", "epoch", r.Epoch, "activation_height", r.Activation, "validators", len(r.Set))
	}
	return nil
}
