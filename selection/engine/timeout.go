package engine

import (
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/selection"
)

// TimeoutPolicy is timeout re-selection (§11.2). The rule is CIP-2 §6's,
// whose text this project does not have (DECISIONS D26), so the engine
// takes it as an injected policy and executes its decision.
type TimeoutPolicy interface {
	// Timeout is called at the start of block h for every assigned job
	// whose DeadlineBlock is below h, in ascending (DeadlineBlock, job_id)
	// order. It must be a deterministic function of its arguments.
	Timeout(h uint64, r JobRecord) TimeoutDecision
}

// TimeoutDecision is what happens to a timed-out job.
type TimeoutDecision struct {
	// Expire ends the job as expired; the other fields are then ignored.
	Expire bool
	// Keep are the committee members that stay, in committee order.
	Keep []cip11.Address
	// Exclude are runners that must not be drawn (in addition to Keep);
	// they are recorded as the job's TimedOut set.
	Exclude []cip11.Address
	// Seats is how many runners to draw, continuing the job's global draw
	// counter with its original v3 seed.
	Seats uint32
	// Deadline is the new deadline_block (§10.1 retry rule: the
	// re-selection block + timeout_blocks).
	Deadline uint64
}

// MaxReselections is the number of re-selections [DefaultTimeout] allows
// before a job expires (D26).
const MaxReselections = 3

// DefaultTimeout is this project's documented, non-normative default (D26):
// at block deadline_block + 1 a job without its included result re-draws
// the seats of the committee runners that did not deliver, excluding every
// runner that ever timed out on the job, with deadline h + timeout_blocks;
// after [MaxReselections] re-selections it expires.
type DefaultTimeout struct{}

// Timeout implements [TimeoutPolicy].
func (DefaultTimeout) Timeout(h uint64, r JobRecord) TimeoutDecision {
	if r.Reselections >= MaxReselections {
		return TimeoutDecision{Expire: true}
	}
	d := TimeoutDecision{Exclude: slices.Clone(r.TimedOut), Deadline: DeadlineBlock(h, r.TimeoutBlocks)}
	for _, a := range r.Committee {
		if r.delivered(a) {
			d.Keep = append(d.Keep, a)
		} else if !slices.Contains(d.Exclude, a) {
			d.Exclude = append(d.Exclude, a)
		}
	}
	d.Seats = r.CommitteeSize - uint32(min(len(d.Keep), int(r.CommitteeSize)))
	return d
}

// timeoutPass runs the policy over every job whose deadline has passed
// (§11.2: "at the next block"), after the pending pass and before the
// block's transactions.
func (c *blockCtx) timeoutPass() error {
	ids, err := c.e.cfg.Jobs.DueBefore(c.b.Height)
	if err != nil {
		return err
	}
	for _, id := range ids {
		rec, ok, err := c.e.cfg.Jobs.Job(id)
		if err != nil {
			return err
		}
		if !ok {
			return ErrUnknownJob
		}
		if err := c.timeout(rec); err != nil {
			return err
		}
	}
	return nil
}

func (c *blockCtx) timeout(rec JobRecord) error {
	d := c.e.timeout.Timeout(c.b.Height, rec.clone())
	if d.Expire {
		rec.Status = StatusExpired
		c.out.Expired = append(c.out.Expired, rec.JobID)
		return c.e.cfg.Jobs.Update(rec)
	}
	snap, err := c.snapshot(rec.SubmittedAt, rec.Job)
	if err != nil {
		return err
	}
	skip := append(slices.Clone(d.Keep), d.Exclude...)
	eligible := slices.DeleteFunc(snap.Eligible(c.live), func(e selection.Eligible) bool {
		return slices.Contains(skip, e.Address)
	})
	a := Assignment{
		JobID: rec.JobID, SubmittedAt: rec.SubmittedAt, AssignmentHeight: c.b.Height,
		DeadlineBlock: d.Deadline, Mode: rec.Mode, Branch: c.branch(rec.Job), Seed: rec.Seed,
		Reselection: rec.Reselections + 1,
	}
	drawn := selection.NewPools(a.Branch, eligible).DrawFrom(rec.Seed, rec.NextDraw, d.Seats)
	a.Committee = append(slices.Clone(d.Keep), drawn...)
	rec.TimedOut = d.Exclude
	rec.assign(a, len(drawn))
	c.out.Assignments = append(c.out.Assignments, a)
	return c.e.cfg.Jobs.Update(rec)
}
