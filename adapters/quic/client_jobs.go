package quic

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	qgo "github.com/quic-go/quic-go"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

// job is an accepted assignment (§10.1: at most one per job_id), pushed or
// delivered (polled, [Client.Deliver]).
type job struct {
	a      *wire.JobAssignment
	sess   *wire.Session
	fs     *frameStream // the Accepted stream: the only one results go on (§10.3); nil for a delivered job
	ctx    context.Context
	cancel context.CancelFunc
	// guarded by Client.mu
	running     bool
	cancelled   bool
	commitSent  bool
	reveal      []byte
	revealOpens uint64
	revealSent  bool
	retained    []retainedTx
}

// retainedTx is a result-phase transaction kept for §10.3 rebroadcast.
type retainedTx struct {
	tx    []byte
	retry *local.ResultTxRetry
}

// acceptJobs serves the validator-initiated job streams of one connection.
func (l *link) acceptJobs(qc *qgo.Conn, sess *wire.Session, snap *validators.Snapshot) {
	for {
		st, err := qc.AcceptStream(l.c.ctx)
		if err != nil {
			return
		}
		if !l.c.track() {
			st.CancelRead(streamDone)
			st.CancelWrite(streamDone)
			return
		}
		go func() {
			defer l.c.wg.Done()
			l.c.serveJob(st, sess, snap, l)
		}()
	}
}

// serveJob answers one push: check (§10.1), ack (§10.2), and for the
// accepted stream execute and listen for JobCancel (§10.5).
func (c *Client) serveJob(st *qgo.Stream, sess *wire.Session, snap *validators.Snapshot, l *link) {
	fs := newFrameStream(st, c.cfg.Params.MaxFrameBytes, c.cfg.Params.MaxFrameBytes)
	fr, err := fs.readBy(time.Now().Add(c.cfg.HandshakeTimeout))
	if err != nil {
		fs.abort(streamDone)
		return
	}
	a, ok := fr.(*wire.JobAssignment)
	if !ok {
		fs.abort(streamDone)
		return
	}
	read := time.Now()
	inSnap := func(raw [32]byte) bool { return snap.Contains(validators.PeerKey(raw)) }
	fin := c.attested(l, sess, inSnap, a)
	if fin != 0 {
		c.stats.pushesAttested.Add(1)
	} else if c.Height() < a.AssignmentHeight {
		c.stats.pushesWaited.Add(1)
		t0 := time.Now()
		if f := c.cfg.Behind; f != nil {
			f(l.peer, a.AssignmentHeight)
		}
		c.awaitHeight(a.AssignmentHeight, t0.Add(assignmentWait))
		c.stats.pushWaitMicros.Add(time.Since(t0).Microseconds())
	}
	status, reason, j := c.checkAssigned(sess, snap, a, fin)
	if reason == nil {
		status, reason, j = c.admitJob(sess, inSnap, fs, a, fin)
	}
	ack := &wire.JobAck{JobID: a.JobID, AssignmentHash: a.AssignmentHash, Status: status, Reason: reason}
	if err := ack.Sign(sess, c.cfg.Key); err != nil || fs.write(ack) != nil {
		fs.abort(streamDone)
		if j != nil {
			c.release(j)
		}
		return
	}
	c.stats.acks.Add(1)
	served := uint64(time.Since(read).Microseconds())
	c.serveLat.mu.Lock()
	c.serveLat.h.Add(served)
	c.serveLat.mu.Unlock()
	c.logAck(l.peer, a, status, reason)
	if j == nil {
		fs.finish()
		return
	}
	if !c.track() {
		c.release(j)
		fs.abort(streamDone)
		return
	}
	go func() {
		defer c.wg.Done()
		c.execute(j)
	}()
	for {
		fr, err := fs.read()
		if err != nil {
			return
		}
		if jc, ok := fr.(*wire.JobCancel); ok {
			c.onCancel(j, jc)
		}
	}
}

// checkAssigned is the §10.1 still-assigned check: a first valid push of a
// job_id is asked of the runner's chain view (ClientConfig.Assigned), and
// Reject(UnverifiableAssignment) with a reason when the runner is not
// assigned to the job at assignment_height or the view cannot tell. A nil
// reason lets admitJob decide: no hook, a job_id already accepted
// (Duplicate or a conflicting push) or a push the other §10.1 checks
// refuse with their own reason. The hook is called without the client
// lock (it may do I/O).
func (c *Client) checkAssigned(sess *wire.Session, snap *validators.Snapshot, a *wire.JobAssignment, attested uint64) (wire.AckStatus, *string, *job) {
	if c.cfg.Assigned == nil {
		return wire.AckStatus{}, nil, nil
	}
	c.mu.Lock()
	_, known := c.jobs[a.JobID]
	fin := max(c.height, attested)
	c.mu.Unlock()
	if known {
		return wire.AckStatus{}, nil, nil
	}
	if attested == 0 { // an attested push passed this very check (Client.attested)
		st, err := wire.CheckAssignment(&wire.AssignmentContext{
			Session: sess, Finalized: fin, Specs: c.cfg.Specs,
			InSnapshot: func(raw [32]byte) bool { return snap.Contains(validators.PeerKey(raw)) },
		}, a)
		if err != nil || st.Kind != wire.AckAccepted {
			return wire.AckStatus{}, nil, nil
		}
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.HandshakeTimeout)
	defer cancel()
	ok, err := c.cfg.Assigned(ctx, a.JobID, c.cfg.Key.Address(), a.AssignmentHeight)
	if err == nil && ok {
		return wire.AckStatus{}, nil, nil
	}
	if err == nil {
		err = fmt.Errorf("%w: job %s, height %d", ErrNotAssigned, a.JobID, a.AssignmentHeight)
	} else {
		err = fmt.Errorf("chain view cannot confirm the assignment at height %d: %w", a.AssignmentHeight, err)
	}
	r := shortText(err.Error())
	return wire.Reject(wire.RejectUnverifiableAssignment), &r, nil
}

// admitJob runs wire.CheckAssignment against the job already accepted for
// this job_id, if any, under the client lock, so two validators' pushes of
// one job — or a push and a poll answer (Deliver) — can never both be
// Accepted (§10.1). It returns the job only when this assignment is the
// accepted one.
func (c *Client) admitJob(sess *wire.Session, inSnapshot func([32]byte) bool, fs *frameStream, a *wire.JobAssignment, attested uint64) (wire.AckStatus, *string, *job) {
	st, j, err := c.admit(sess, inSnapshot, fs, a, attested)
	if err != nil {
		r := shortText(err.Error())
		return st, &r, nil
	}
	return st, nil, j
}

// admit is admitJob with the check's error (ErrAtCapacity at capacity).
// attested is a height the pushing validator attested (Client.attested),
// 0 for none: the check takes the greater of it and the runner's height as
// finalized in its view.
func (c *Client) admit(sess *wire.Session, inSnapshot func([32]byte) bool, fs *frameStream, a *wire.JobAssignment, attested uint64) (wire.AckStatus, *job, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var prev *wire.JobAssignment
	if j := c.jobs[a.JobID]; j != nil {
		prev = j.a
	}
	st, err := wire.CheckAssignment(&wire.AssignmentContext{
		Session: sess, Finalized: max(c.height, attested), Specs: c.cfg.Specs, Accepted: prev, InSnapshot: inSnapshot,
	}, a)
	if err != nil {
		return st, nil, err
	}
	if st.Kind != wire.AckAccepted {
		return st, nil, nil
	}
	if c.active >= c.cfg.MaxConcurrent {
		return wire.Reject(wire.RejectAtCapacity), nil, ErrAtCapacity
	}
	ctx, cancel := context.WithCancel(c.ctx)
	j := &job{a: a, sess: sess, fs: fs, ctx: ctx, cancel: cancel, running: true}
	c.jobs[a.JobID] = j
	c.active++
	if c.active >= c.cfg.MaxConcurrent && !c.full {
		c.full = true
		c.wakeBackpressure()
	}
	return st, j, nil
}

// Errors of [Client.Deliver] besides the wire sentinels of
// wire.CheckAssignment (§10.1).
var (
	// ErrDuplicateJob: the job_id is already accepted, pushed or delivered,
	// with the same assignment (§10.1 "accept at most one"); it is not
	// executed again. Not a failure.
	ErrDuplicateJob = errors.New("quic: job already accepted")
	// ErrAtCapacity: MaxConcurrent jobs are running (§6.4); a later poll
	// may deliver it again.
	ErrAtCapacity = errors.New("quic: at capacity")
)

// Deliver runs an assignment the runner obtained without a push — the
// §14 poll answer (GET /runner/{addr}/jobs) — through the same path as a
// pushed one, minus the stream: the §10.1 checks (job_spec_hash and
// job_spec decoding, assignment_hash and validator_signed, the validator
// in the active snapshot at the runner's height, runner_pubkey its own,
// assignment_height finalized in its own view), deduplication by job_id
// across pushes and deliveries (a job accepted either way is accepted
// once and executed once), the capacity limit, and the §10.3 retention:
// the result transactions are self-submitted through the Submitter at
// once and rebroadcast on its schedule like a pushed job's. It returns
// nil when the job was accepted (its execution runs on the client,
// bounded by Close), ErrDuplicateJob when it already was, ErrAtCapacity,
// or the check's error (wrapping the wire sentinel, e.g.
// wire.ErrAssignmentNotFinal: the caller delivers it again after a later
// Tick). It never waits for a height (a caller that Ticks the client
// would wait on itself). ctx only stops a Deliver that has not started.
func (c *Client) Deliver(ctx context.Context, a *wire.JobAssignment) error {
	switch {
	case a == nil:
		return fmt.Errorf("%w: nil assignment", ErrNilDependency)
	case c.cfg.Submitter == nil:
		return fmt.Errorf("%w: Submitter (a delivered job's results are self-submitted, §10.3)", ErrNilDependency)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The session below takes the validator from the assignment itself, so
	// its scheme is checked here, before the snapshot lookup (§10.1).
	if err := a.ValidatorPubKey.CheckRole(wire.RoleValidator); err != nil {
		return fmt.Errorf("job %s: validator_pubkey: %w", a.JobID, err)
	}
	c.mu.Lock()
	h, closed := c.height, c.closed
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	ep, err := c.cfg.Validators.EpochsAt(h)
	if err != nil {
		return err
	}
	inSnapshot := func(raw [32]byte) bool {
		for _, s := range []*validators.Snapshot{ep.Current, ep.Previous} {
			if s != nil && s.Contains(validators.PeerKey(raw)) {
				return true
			}
		}
		return false
	}
	// No connection: the assignment's own validator_pubkey is the peer,
	// so the snapshot check is what authenticates it.
	sess := &wire.Session{Conn: wire.Conn{ChainID: c.cfg.ChainID, RunnerPubKey: c.self, ValidatorPubKey: a.ValidatorPubKey}}
	st, j, err := c.admit(sess, inSnapshot, nil, a, 0)
	switch {
	case err != nil:
		return fmt.Errorf("job %s: %w", a.JobID, err)
	case st.Kind == wire.AckDuplicate:
		return fmt.Errorf("job %s: %w", a.JobID, ErrDuplicateJob)
	case j == nil:
		return fmt.Errorf("job %s: %w: %v", a.JobID, wire.ErrAssignmentConflict, st)
	}
	if !c.track() {
		c.release(j)
		return ErrClosed
	}
	c.stats.delivered.Add(1)
	c.log.Info("quic: job accepted", "job", a.JobID.String(), "via", "poll", "validator", hex.EncodeToString(a.ValidatorPubKey.Bytes()), "assignment_height", a.AssignmentHeight)
	go func() {
		defer c.wg.Done()
		c.execute(j)
	}()
	return nil
}

// release returns j's execution slot; lifting backpressure if it was on.
func (c *Client) release(j *job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !j.running {
		return
	}
	j.running = false
	j.cancel()
	c.active--
	if c.full && c.active < c.cfg.MaxConcurrent {
		c.full = false
		c.wakeBackpressure()
	}
}

// wakeBackpressure asks the backpressure sender to send the current
// state; it never blocks (a pending wake already covers this one).
func (c *Client) wakeBackpressure() {
	select {
	case c.bpWake <- struct{}{}:
	default:
	}
}

// backpressureLoop is the one path §6.4 BackpressureSignals take: each
// wake sends the state as it is then, to every connected validator, so a
// "full" can never overtake the "not full" after it (both are read, in
// order, by this goroutine alone). It runs until the client closes.
func (c *Client) backpressureLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.bpWake:
		case <-c.ctx.Done():
			return
		}
		c.mu.Lock()
		h, active, accepting := c.height, c.active, !c.full
		c.mu.Unlock()
		for _, l := range c.linkList() {
			_ = l.control(func(s *wire.Session) (wire.Frame, error) {
				return c.backpressureFrame(s, h, active, accepting)
			})
		}
	}
}

func (c *Client) backpressureFrame(s *wire.Session, h uint64, active int, accepting bool) (wire.Frame, error) {
	f := &wire.BackpressureSignal{BlockHeight: h, ActiveJobs: uint32(active), MaxConcurrent: uint32(c.cfg.MaxConcurrent), AcceptingNew: accepting}
	if !accepting {
		r := "at capacity"
		f.Reason = &r
	}
	return f, f.Sign(s, c.cfg.Key)
}

// execute runs the job and sends JobResultCommit before JobResult when the
// executor produced a commitment (verification.runners > 1), both only on
// the accepted stream (§10.3).
func (c *Client) execute(j *job) {
	c.stats.executions.Add(1)
	progress := func(fraction uint8, detail string) {
		p := &wire.JobProgress{JobID: j.a.JobID, Fraction: min(fraction, wire.MaxProgressFraction)}
		if detail != "" {
			d := shortText(detail)
			p.Detail = &d
		}
		c.mu.Lock()
		stop := j.cancelled
		c.mu.Unlock()
		if !stop && j.fs != nil {
			_ = j.fs.write(p)
		}
	}
	res, err := c.cfg.Executor.Execute(j.ctx, &Job{Assignment: j.a, Progress: progress})
	c.mu.Lock()
	drop := err != nil || j.cancelled
	if !drop {
		j.commitSent = res.Commit != nil
		j.reveal, j.revealOpens = res.Reveal, res.RevealOpens
	}
	h := c.height
	c.mu.Unlock()
	c.release(j)
	switch {
	case err != nil:
		c.log.Warn("quic: job failed", "job", j.a.JobID.String(), "err", err)
	case drop:
		c.log.Info("quic: job cancelled", "job", j.a.JobID.String())
	default:
		c.log.Info("quic: job completed", "job", j.a.JobID.String(), "commit", res.Commit != nil)
	}
	if drop {
		j.finish() // §10.5: no result frames after a cancel without commitment
		return
	}
	if res.Commit != nil {
		c.sendResult(j, &wire.JobResultCommit{JobID: j.a.JobID, TxBytes: res.Commit}, res.Commit)
		c.retain(j, res.Commit, h, 0)
	}
	c.maybeReveal(j, h)
}

// sendResult sends a result frame on the accepted stream (§10.3); a
// delivered job has none, so its transaction is self-submitted at once
// (the poll path's admission, §10.3 "self-submit").
func (c *Client) sendResult(j *job, f wire.Frame, tx []byte) {
	if j.fs != nil {
		_ = j.fs.write(f)
		return
	}
	if c.cfg.Submitter != nil {
		_ = c.cfg.Submitter.Submit(tx)
	}
}

// finish ends the accepted stream, if the job has one.
func (j *job) finish() {
	if j.fs != nil {
		j.fs.finish()
	}
}

// maybeReveal sends the reveal once its window is open (§10.3). After a
// cancel it is still sent if the commitment was (§10.5).
func (c *Client) maybeReveal(j *job, h uint64) {
	c.mu.Lock()
	if j.revealSent || j.reveal == nil || h < j.revealOpens || (j.cancelled && !j.commitSent) {
		c.mu.Unlock()
		return
	}
	j.revealSent = true
	tx, opens := j.reveal, j.revealOpens
	c.mu.Unlock()
	c.sendResult(j, &wire.JobResult{JobID: j.a.JobID, TxBytes: tx}, tx)
	c.retain(j, tx, h, opens)
	j.finish()
}

func (c *Client) retain(j *job, tx []byte, sent, opens uint64) {
	c.mu.Lock()
	j.retained = append(j.retained, retainedTx{tx: tx, retry: local.NewResultTxRetry(sent, opens, c.cfg.Params)})
	c.mu.Unlock()
}

// onCancel applies a verified JobCancel for the accepted assignment (§10.5).
func (c *Client) onCancel(j *job, jc *wire.JobCancel) {
	err := wire.CheckCancel(j.sess, jc, func(id cip11.Hash) (cip11.Hash, bool) {
		return j.a.AssignmentHash, id == j.a.JobID
	})
	if err != nil {
		return
	}
	c.mu.Lock()
	j.cancelled = true
	finish := !j.commitSent && !j.running
	c.mu.Unlock()
	j.cancel()
	if finish {
		j.finish()
	}
}

// jobsTick sends due reveals, rebroadcasts retained transactions through
// the submitter (§10.3) and forgets jobs past their deadline_block.
func (c *Client) jobsTick(h uint64) {
	type due struct {
		id cip11.Hash
		tx []byte
		r  *local.ResultTxRetry
	}
	var reveal []*job
	var rebroadcast []due
	c.mu.Lock()
	for id, j := range c.jobs {
		if !j.revealSent && j.reveal != nil {
			reveal = append(reveal, j)
		}
		for _, r := range j.retained {
			if r.retry.Due(h) {
				rebroadcast = append(rebroadcast, due{id, r.tx, r.retry})
			}
		}
		if h > j.a.DeadlineBlock && !j.running && (j.revealSent || j.reveal == nil) {
			delete(c.jobs, id)
		}
	}
	c.mu.Unlock()
	for _, j := range reveal {
		c.maybeReveal(j, h)
	}
	if c.cfg.Submitter == nil {
		return
	}
	for _, d := range rebroadcast {
		if c.cfg.Submitter.Settled(d.id, d.tx) {
			c.mu.Lock()
			d.r.Stop()
			c.mu.Unlock()
			continue
		}
		_ = c.cfg.Submitter.Submit(d.tx)
		c.mu.Lock()
		d.r.Rebroadcast(h)
		c.mu.Unlock()
	}
}

// assignmentWait bounds how long a push whose assignment_height is above
// the runner's finalized height waits for the runner's own chain view to
// reach it before it is checked (§10.1: the runner verifies the height is
// finalized in its own view; the validator pushes right after applying
// the block, usually before the runner has seen it).
const assignmentWait = 2 * time.Second

// awaitHeight waits until Tick has reported h, the deadline passes or the
// client closes: it sleeps on the client's per-height tick channel.
func (c *Client) awaitHeight(h uint64, deadline time.Time) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		c.mu.Lock()
		cur, tick := c.height, c.tick
		c.mu.Unlock()
		if cur >= h {
			return
		}
		select {
		case <-tick:
		case <-t.C:
			return
		case <-c.ctx.Done():
			return
		}
	}
}

// attested returns a's assignment_height when the push itself settles
// that the height is applied in the runner's view, else 0 (SPEC-NOTES N1).
// A validator pushes only after it has applied assignment_height (§10.1),
// and the push is signed under the same peer key, on the same
// authenticated session, as the HeartbeatPongs whose block_height already
// moves the runner's view (§6.3, onPong): a push that passes every other
// §10.1 check is that validator's signed word for the height, as a pong
// is. It is taken for at most one height above the greater of the
// validator's last verified pong on this link and the runner's own view —
// the block the validator committed since — so a push moves the view one
// height at most, as a pong could (further, even); a push further ahead
// waits for the view as before (Behind, awaitHeight). The runner's view
// counts too: a validator a little slower than the one the view follows
// answered the last ping one height short, and its push of the next
// height waited (issue 28: 26 of 211 accepted pushes in a process run,
// 3.6–7.5 ms each on average). The height then ticks the client, as a
// pong's would. Without this the push waited a round trip (the runner
// asking a validator busy applying that very block) before its ack
// (issue 28: the process-level push latency).
func (c *Client) attested(l *link, sess *wire.Session, inSnap func([32]byte) bool, a *wire.JobAssignment) uint64 {
	h := a.AssignmentHeight
	cur := c.Height()
	if h <= cur {
		return 0
	}
	l.mu.Lock()
	ph := l.pongHeight
	l.mu.Unlock()
	if ph == 0 || h > max(ph, cur)+1 {
		return 0
	}
	st, err := wire.CheckAssignment(&wire.AssignmentContext{Session: sess, Finalized: h, Specs: c.cfg.Specs, InSnapshot: inSnap}, a)
	if err != nil || st.Kind != wire.AckAccepted {
		return 0
	}
	if c.track() {
		go func() {
			defer c.wg.Done()
			c.Tick(h)
		}()
	}
	return h
}

// logAck logs the runner's answer to a push (§10.2): Accepted and every
// Reject with its reason and detail at Info, Duplicate (the other
// validators of Sub(R) pushing a job already accepted) at Debug.
func (c *Client) logAck(v validators.PeerKey, a *wire.JobAssignment, st wire.AckStatus, reason *string) {
	args := []any{"job", a.JobID.String(), "validator", hex.EncodeToString(v[:]), "assignment_height", a.AssignmentHeight}
	switch st.Kind {
	case wire.AckAccepted:
		c.log.Info("quic: job accepted", append(args, "via", "push")...)
	case wire.AckDuplicate:
		c.log.Debug("quic: job push duplicate", args...)
	default:
		detail := ""
		if reason != nil {
			detail = *reason
		}
		c.log.Info("quic: job rejected", append(args, "status", st.String(), "detail", detail)...)
	}
}
