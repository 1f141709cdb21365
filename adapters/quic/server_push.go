package quic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/wire"
)

// Assignment is one runner seat the node's block assigned (§10.1), handed
// to [Server.Push] after the block is finalized and applied.
type Assignment struct {
	JobID   cip11.Hash
	JobSpec []byte // the cowboy-protocol-codec bytes P, carried verbatim (D16)
	// AssignmentHeight is the assignment block; DeadlineBlock the
	// chain-derived timeout-index block (§10.1, D21). Neither is chosen here.
	AssignmentHeight uint64
	DeadlineBlock    uint64
	Runner           cip11.Address
	// MultiRunner is verification.runners > 1: JobResultCommit must precede
	// JobResult, and an early reveal is held or refused (§10.3).
	MultiRunner bool
	// Capabilities and Entitlements the job needs, for the §6.5 routing veto.
	Capabilities []string
	Entitlements []cip11.Hash
}

type pushState uint8

const (
	awaitingAck pushState = iota
	accepted
	finished
)

type pushKey struct {
	job  cip11.Hash
	conn local.ConnID
}

// push is one JobAssignment sent on one job stream (§10.1, §10.2).
type push struct {
	a      Assignment
	frame  *wire.JobAssignment
	sc     *sconn
	fs     *frameStream
	sentAt uint64
	// guarded by Server.mu
	state      pushState
	commitAt   uint64
	commitSeen bool
	included   bool // the node saw the job's commitment included (ReleaseReveal)
	held       *heldTx
	releasing  bool
	ack        *wire.AckStatus // the verified JobAck status, once read
	// answered, if set, is closed at the first framed answer, a stream
	// failure or the ack timeout: it frees the push's PushWith slot.
	answered   chan struct{}
	answerOnce sync.Once
}

// answer frees a paced Push's slot: the push got its first framed answer,
// failed, or timed out. Safe to call more than once.
func (p *push) answer() {
	if p.answered != nil {
		p.answerOnce.Do(func() { close(p.answered) })
	}
}

type heldTx struct {
	raw []byte
	tx  wire.Transaction
}

// Tick is the node telling the server that h is its newest finalized and
// applied height (raft's Tick): pushes with no framed answer within
// ACK_TIMEOUT_BLOCKS become HardFailure and their streams are closed
// (§10.6, §11.1), held reveals whose window opened are forwarded (§10.3),
// and held reveals still unreleased past the job's deadline_block are
// dropped as SoftFailure (ErrRevealNotReleased, §11.2). Heights never go
// back; an older h is ignored.
//
// Every call, a repeated h included, also re-reads the §5.3 validator-set
// view at the height (call it again after ValidatorSetActivated) and
// closes each admitted connection whose epoch pair is no longer valid —
// epoch E's at and after activation_height(E+1) + OVERLAP_BLOCKS — with
// a signed Goodbye{OverlapExpired} (§5.3 point 4). A runner still
// connected under E+1 stays in local presence across the switch (the
// closed connection's entry is handed over to its next ping); one that is
// not leaves it, as on any connection loss. The pushes in flight on it are
// abandoned: each is reported once, a SoftFailure with ErrPushAbandoned,
// except one whose reveal is held, which is forwarded or dropped by the
// §10.3 rules as before (the runner drains the rest, §11.5).
func (s *Server) Tick(h uint64) {
	type release struct {
		p *push
		t *heldTx
	}
	hv := max(h, s.currentHeight())
	valid := s.validPairs(hv) // the view may do I/O: not under s.mu
	var timedOut, expired, abandoned []*push
	var reveal []release
	s.mu.Lock()
	if h > s.height {
		if h/64 != s.height/64 {
			s.pres.Forget()
		}
		s.height = h
	}
	var gone map[*sconn]bool
	if valid != nil && s.height == hv {
		gone = s.expireLocked(valid)
	}
	for k, p := range s.pushes {
		switch {
		case gone[p.sc] && p.held == nil:
			abandoned = append(abandoned, p)
		case p.state == awaitingAck && local.AckTimedOut(p.sentAt, s.height, s.cfg.Params):
			_ = s.pres.Dispatch(s.height, p.a.Runner, local.HardFailure)
			p.state = finished
			delete(s.pushes, k)
			timedOut = append(timedOut, p)
		case p.held != nil && !p.releasing && s.revealOpen(p, s.height):
			p.releasing = true // held stays set until finishPush: the stream's EOF must not look like "no result"
			reveal = append(reveal, release{p, p.held})
		case p.held != nil && !p.releasing && s.height > p.a.DeadlineBlock:
			p.releasing = true
			expired = append(expired, p)
		}
	}
	h = s.height
	s.mu.Unlock()
	for sc := range gone {
		s.expire(sc, h)
	}
	s.abandon(abandoned)
	for _, p := range expired { // §11.2: the job timed out; the reveal can no longer count
		s.finishPush(p, local.SoftFailure, ErrRevealNotReleased)
	}
	for _, p := range timedOut {
		p.answer()
		p.fs.abort(streamTimeout)
		s.report(Outcome{JobID: p.a.JobID, Runner: p.a.Runner, Outcome: local.HardFailure, Height: h})
	}
	for _, r := range reveal {
		s.forwardReveal(r.p, r.t)
	}
}

// validPairs is the epoch pairs valid at h, Current first (§5.3), or nil
// when the view cannot be read.
func (s *Server) validPairs(h uint64) []wire.EpochPair {
	ep, err := s.cfg.Validators.EpochsAt(h)
	if err != nil {
		return nil
	}
	if pairs := ep.Pairs(h, s.cfg.Params); pairs != nil {
		return pairs
	}
	return []wire.EpochPair{}
}

// expireLocked records valid and forgets every admitted connection whose
// pair it no longer holds (§5.3 point 4), returning them. Connections
// are only admitted under a pair in s.valid, so nothing can expire while
// it is unchanged. s.mu held.
func (s *Server) expireLocked(valid []wire.EpochPair) map[*sconn]bool {
	if slices.Equal(valid, s.valid) {
		return nil
	}
	s.valid = valid
	gone := map[*sconn]bool{}
	for _, sc := range s.conns {
		if !slices.Contains(valid, sc.pair) {
			gone[sc] = true
		}
	}
	for sc := range gone {
		s.retireLocked(sc)
	}
	return gone
}

// expire closes a connection whose epoch pair expired at h with a signed
// Goodbye{OverlapExpired} (§5.3 point 4, §12.5), on its own goroutine:
// Tick never waits for the network.
func (s *Server) expire(sc *sconn, h uint64) {
	s.log.Info("quic: epoch pair expired", "runner", sc.runner, "subset_epoch", sc.pair.SubsetEpoch, "height", h)
	if !s.track() {
		_ = sc.qc.CloseWithError(codeShutdown, "")
		return
	}
	go func() {
		defer s.wg.Done()
		detail := fmt.Sprintf("subset_epoch %d expired at height %d", sc.pair.SubsetEpoch, h)
		s.say(sc.qc, sc.ctl, goodbye(sc.sess, s.cfg.Key, wire.GoodbyeOverlapExpired, detail, nil))
	}()
}

// pushesOn lists the unfinished pushes on sc without a held reveal.
func (s *Server) pushesOn(sc *sconn) []*push {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*push
	for _, p := range s.pushes {
		if p.sc == sc && p.held == nil {
			out = append(out, p)
		}
	}
	return out
}

// abandon finishes pushes whose connection's epoch pair expired (§5.3
// point 4, §11.5): a SoftFailure with ErrPushAbandoned, once each.
func (s *Server) abandon(ps []*push) {
	for _, p := range ps {
		p.answer()
		if s.finishPush(p, local.SoftFailure, ErrPushAbandoned) {
			s.stats.abandoned.Add(1)
		}
	}
}

// Height is the newest height given to Tick.
func (s *Server) Height() uint64 { return s.currentHeight() }

// Applied is Tick(h) followed by Push(as): the node's call once block h is
// finalized and applied (§10.1: never speculative).
func (s *Server) Applied(h uint64, as []Assignment) []error {
	s.Tick(h)
	return s.Push(as)
}

// Push sends each assignment to its runner if the runner is in local
// presence and not vetoed by a capability delta (§7.4 (a), §10.1): a new
// validator-initiated stream and a signed JobAssignment. It does no
// network I/O itself: it returns one routing error per assignment at
// once (nil: handed to the sender; ErrNotPresent: not routed here;
// ErrClosed) and the server's own goroutines send, reporting each send
// to ServerConfig.OnPushed or OnPushError. Outcomes arrive later through
// ServerConfig.OnOutcome. It is PushWith(as, PushOptions{}).
func (s *Server) Push(as []Assignment) []error {
	return s.PushWith(as, PushOptions{})
}

// DefaultPushSlotTimeout is [PushOptions.SlotTimeout]'s default.
const DefaultPushSlotTimeout = time.Second

// PushOptions paces one [Server.PushWith]. A block that assigns thousands
// of runners at once makes thousands of runners answer at once, and on
// one host the answers can overflow the validator's UDP receive buffer;
// QUIC recovers the loss, but only after a retransmission timeout.
type PushOptions struct {
	// MaxInFlight bounds the assignments sent and not yet answered: a new
	// JobAssignment goes out when an earlier one's first framed answer
	// (normally the JobAck) arrived, its stream failed, or it held its
	// slot for SlotTimeout. 0 takes [Server.PushWindow]; a negative value
	// sends all at once.
	MaxInFlight int
	// SlotTimeout bounds how long one unanswered assignment holds its slot
	// (DefaultPushSlotTimeout). It paces only: the §10.6 ack timeout is
	// still ACK_TIMEOUT_BLOCKS.
	SlotTimeout time.Duration
}

// PushWith is [Server.Push] with pacing. It never waits for the network
// (§10.1 dispatch must not stall block production behind one runner whose
// stream credit is exhausted): it routes every assignment at once
// (ErrNotPresent is returned now) and tracked goroutines send the routed
// ones: all at once, one goroutine each (a push's path from the block to
// the wire crosses no coordinator), or, paced, one goroutine sends the
// first MaxInFlight and the rest in order as slots free up. Each send is
// reported to ServerConfig.OnPushed or OnPushError.
func (s *Server) PushWith(as []Assignment, o PushOptions) []error {
	errs := make([]error, len(as))
	queued := make([]Assignment, 0, len(as))
	for i := range as {
		if _, _, errs[i] = s.route(&as[i]); errs[i] == nil {
			queued = append(queued, as[i])
		}
	}
	limit := o.MaxInFlight
	if limit == 0 {
		limit = s.PushWindow()
	}
	if limit >= len(queued) {
		limit = -1
	}
	if len(queued) == 0 {
		return errs
	}
	if limit <= 0 { // all at once: one goroutine per push, no coordinator between
		for _, a := range queued {
			if !s.track() {
				break
			}
			go func() {
				defer s.wg.Done()
				s.sendOne(a, false, 0)
			}()
		}
		return errs
	}
	if !s.track() {
		return errs
	}
	go func() {
		defer s.wg.Done()
		s.paced(queued, limit, orDefault(o.SlotTimeout, DefaultPushSlotTimeout))
	}()
	return errs
}

// track adds one goroutine to the server's wait group unless the server
// is closed (Shutdown waits for them): no wg.Add once Shutdown began.
func (s *Server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// paced sends as in order with at most limit (> 0) unanswered at a time
// (PushWith sends an unpaced batch itself).
func (s *Server) paced(as []Assignment, limit int, slotTimeout time.Duration) {
	slots := make(chan struct{}, limit)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, a := range as {
		select {
		case slots <- struct{}{}:
		case <-s.ctx.Done():
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			s.sendOne(a, true, slotTimeout)
		}()
	}
}

// sendOne pushes a, reports the send, and, when paced, holds its slot
// until the push is answered, slotTimeout passes or the server closes.
func (s *Server) sendOne(a Assignment, paced bool, slotTimeout time.Duration) {
	p, err := s.pushOne(a, make(chan struct{}))
	if err != nil {
		s.log.Debug("quic: push not sent", "job", a.JobID, "runner", a.Runner, "err", err)
		if s.cfg.OnPushError != nil {
			s.cfg.OnPushError(a, err)
		}
		return
	}
	if s.cfg.OnPushed != nil {
		s.cfg.OnPushed(a)
	}
	if !paced {
		return
	}
	t := time.NewTimer(slotTimeout)
	defer t.Stop()
	select {
	case <-p.answered:
	case <-t.C:
	case <-s.ctx.Done():
	}
}

func (s *Server) route(a *Assignment) (*sconn, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0, ErrClosed
	}
	list := s.byRunner[a.Runner]
	if len(list) == 0 || !s.pres.Pushes(a.Runner, s.height, a.Capabilities, a.Entitlements) {
		return nil, 0, ErrNotPresent
	}
	sc := s.preferred(list)
	if sc == nil {
		return nil, 0, ErrNotPresent
	}
	return sc, s.height, nil
}

// preferred is the connection of list to push on (§5.3 point 3): only one
// whose epoch pair is valid at the current height, the current epoch's
// before the previous one's. With no view read yet, the newest. s.mu held.
func (s *Server) preferred(list []*sconn) *sconn {
	if s.valid == nil {
		return list[len(list)-1]
	}
	for _, pair := range s.valid {
		for _, sc := range list {
			if sc.pair == pair {
				return sc
			}
		}
	}
	return nil
}

// pushOne sends one assignment; answered, if not nil, is closed when the
// push is answered (see push.answered). It returns the push once sent.
func (s *Server) pushOne(a Assignment, answered chan struct{}) (*push, error) {
	sc, _, err := s.route(&a)
	if err != nil {
		return nil, err
	}
	f := &wire.JobAssignment{
		JobID: a.JobID, JobSpec: a.JobSpec, JobSpecHash: wire.JobSpecHash(a.JobSpec),
		AssignmentHeight: a.AssignmentHeight, DeadlineBlock: a.DeadlineBlock, RunnerPubKey: sc.sess.RunnerPubKey,
	}
	if err := f.Sign(sc.sess.ChainID, s.cfg.Key); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(sc.qc.Context(), s.cfg.HandshakeTimeout)
	st, err := sc.qc.OpenStreamSync(ctx)
	cancel()
	if err != nil {
		return nil, err
	}
	p := &push{a: a, frame: f, sc: sc, fs: newFrameStream(st, s.cfg.Params.MaxFrameBytes, s.cfg.Params.MaxFrameBytes), answered: answered}
	s.mu.Lock()
	p.sentAt = s.height
	k := pushKey{a.JobID, sc.id}
	if old := s.pushes[k]; old != nil {
		s.mu.Unlock()
		p.fs.abort(streamDone)
		return nil, fmt.Errorf("quic: job %s already pushed on this connection", a.JobID)
	}
	s.pushes[k] = p
	s.mu.Unlock()
	if err := p.fs.write(f); err != nil {
		return nil, err // no framed answer will come: HardFailure after ACK_TIMEOUT_BLOCKS
	}
	if !s.track() {
		p.fs.abort(streamDone)
		return nil, ErrClosed
	}
	go func() {
		defer s.wg.Done()
		s.jobStream(p)
	}()
	return p, nil
}

// jobStream reads the runner's frames on one job stream.
func (s *Server) jobStream(p *push) {
	defer p.answer()
	for {
		fr, err := p.fs.read()
		if err != nil {
			if !errors.Is(err, io.EOF) && !isClosed(err) {
				// §12.1: a defective frame is a protocol error for the connection.
				s.closeWith(p.sc, err)
			}
			s.mu.Lock()
			gone := p.state == accepted && p.held == nil
			s.mu.Unlock()
			if gone { // acked, then gone without its results (§10.6: runner alive)
				s.finishPush(p, local.SoftFailure, fmt.Errorf("%w: stream ended before the results", ErrUnexpectedFrame))
			}
			return // awaiting the ack: ACK_TIMEOUT_BLOCKS decides (§10.6)
		}
		if s.onJobFrame(p, fr) {
			return
		}
	}
}

// onJobFrame classifies one frame (§10.2, §10.3, §10.6); it reports
// whether the stream is finished.
func (s *Server) onJobFrame(p *push, fr wire.Frame) bool {
	s.mu.Lock()
	st := p.state
	s.mu.Unlock()
	if st == awaitingAck {
		return s.onAck(p, fr)
	}
	switch fr := fr.(type) {
	case *wire.JobProgress:
		if s.cfg.OnProgress != nil {
			s.cfg.OnProgress(p.a.Runner, fr)
		}
		return false
	case *wire.JobResultCommit, *wire.JobResult:
		return s.onResult(p, fr)
	}
	s.closeWith(p.sc, fmt.Errorf("%w: %s on a job stream", ErrUnexpectedFrame, fr.Type()))
	return true
}

// onAck matches the JobAck to the assignment sent on this connection and
// classifies it; any other first frame is a SoftFailure (§10.6 "other
// framed response").
func (s *Server) onAck(p *push, fr wire.Frame) bool {
	defer p.answer()
	ack, ok := fr.(*wire.JobAck)
	var err error
	if !ok {
		err = fmt.Errorf("%w: %s before JobAck", ErrUnexpectedFrame, fr.Type())
	} else {
		err = wire.CheckAck(p.sc.sess, ack, func(id cip11.Hash) (cip11.Hash, bool) {
			return p.frame.AssignmentHash, id == p.frame.JobID
		})
	}
	o := local.SoftFailure
	if ok && err == nil {
		p.ack = &ack.Status
		if s.cfg.OnAck != nil {
			s.cfg.OnAck(p.a.JobID, p.a.Runner, ack.Status)
		}
	}
	switch {
	case err != nil:
	case ack.Status.Kind == wire.AckAccepted:
		s.mu.Lock()
		live := p.state == awaitingAck
		if live {
			p.state = accepted
		}
		s.mu.Unlock()
		return !live
	case ack.Status.Kind == wire.AckDuplicate:
		o = local.Duplicate
	case ack.Status.Kind == wire.AckReject:
		err = ackRejected(ack)
	}
	s.finishPush(p, o, err)
	return true
}

// ackRejected is the Outcome.Err of a verified Reject ack: the §12.6
// reason and, when the runner gave one, its reason text.
func ackRejected(ack *wire.JobAck) error {
	if ack.Reason != nil && *ack.Reason != "" {
		return fmt.Errorf("%w: %s: %q", ErrAckRejected, ack.Status, *ack.Reason)
	}
	return fmt.Errorf("%w: %s", ErrAckRejected, ack.Status)
}

// finishPush records the outcome once, closes the stream and reports. It
// reports whether this call finished the push.
func (s *Server) finishPush(p *push, o local.Outcome, err error) bool {
	s.mu.Lock()
	if p.state == finished {
		s.mu.Unlock()
		return false
	}
	p.state = finished
	delete(s.pushes, pushKey{p.a.JobID, p.sc.id})
	if p.held != nil {
		if s.heldBy[p.a.Runner]--; s.heldBy[p.a.Runner] <= 0 {
			delete(s.heldBy, p.a.Runner)
		}
	}
	_ = s.pres.Dispatch(s.height, p.a.Runner, o)
	h := s.height
	s.mu.Unlock()
	p.fs.finish()
	s.report(Outcome{JobID: p.a.JobID, Runner: p.a.Runner, Outcome: o, Height: h, Err: err, Ack: p.ack})
	return true
}

func (s *Server) report(o Outcome) {
	if o.Outcome != local.Success {
		s.log.Debug("quic: push outcome", "job", o.JobID, "runner", o.Runner, "outcome", outcomeLabels[min(int(o.Outcome), NumOutcomes-1)], "height", o.Height, "err", o.Err)
	}
	if int(o.Outcome) < NumOutcomes {
		s.stats.outcomes[o.Outcome].Add(1)
	}
	if s.cfg.OnOutcome != nil {
		s.cfg.OnOutcome(o)
	}
}

// Cancel sends a signed JobCancel with reason on every in-flight push of
// jobID to runner (§10.5). The stream stays open: a runner that already
// committed still reveals on it.
func (s *Server) Cancel(jobID cip11.Hash, runner cip11.Address, reason wire.CancelReason) error {
	s.mu.Lock()
	var ps []*push
	for k, p := range s.pushes {
		if k.job == jobID && p.a.Runner == runner {
			ps = append(ps, p)
		}
	}
	s.mu.Unlock()
	if len(ps) == 0 {
		return ErrNoSuchJob
	}
	var first error
	for _, p := range ps {
		c := &wire.JobCancel{JobID: jobID, AssignmentHash: p.frame.AssignmentHash, Reason: reason}
		c.Sign(p.sc.sess, s.cfg.Key)
		if err := p.fs.write(c); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// pendingFor is for tests: whether a push of jobID to runner is in flight.
func (s *Server) pendingFor(jobID cip11.Hash) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.pushes {
		if k.job == jobID {
			n++
		}
	}
	return n
}
