package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/selection"
)

// Job is what a JobSubmit fixes for selection (§9.2): job_id, the
// submitter and job_kind (the §9.4 MRU key), M = verification.runners and
// timeout_blocks (the §10.1 deadline rule).
type Job struct {
	JobID         [32]byte
	Submitter     cip11.Address
	Kind          mru.JobKind // §9.4 job_kind byte
	CommitteeSize uint32
	TimeoutBlocks uint64
}

// Status is where a job is in its lifecycle.
type Status uint8

const (
	// StatusPending: an M > 1 job waiting for its seed (§9.2).
	StatusPending Status = iota + 1
	// StatusAssigned: a committee is written; the job waits for its result
	// until DeadlineBlock (§11.2).
	StatusAssigned
	// StatusCompleted: a verified result was included (§9.4).
	StatusCompleted
	// StatusExpired: the timeout policy gave up on the job (D26).
	StatusExpired
)

// String returns the status name used in chain logs and APIs.
func (s Status) String() string {
	switch s {
	case StatusPending:
		return "pending"
	case StatusAssigned:
		return "assigned"
	case StatusCompleted:
		return "completed"
	case StatusExpired:
		return "expired"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// JobRecord is the engine's consensus state of one job: what the submit
// fixed, and its current assignment. The dispatcher stores committee order
// with the job record (§9.4) because the MRU winner is the first matching
// runner in that order.
type JobRecord struct {
	Job
	SubmittedAt      uint64 // S
	Status           Status
	Mode             seed.Mode
	Branch           selection.Branch
	Seed             cip11.Hash      // the job's v3 selection seed; zero while pending
	AssignmentHeight uint64          // H of the current assignment
	DeadlineBlock    uint64          // §10.1 timeout-index block of the current assignment
	Committee        []cip11.Address // current committee, in selection order
	Delivered        []cip11.Address // committee members whose JobResultSubmit is included, in inclusion order
	TimedOut         []cip11.Address // every runner that timed out on this job (D26 exclusions)
	Reselections     uint32          // timeout re-selections so far
	NextDraw         uint64          // next global draw iteration i (D26 continues the counter)
}

// clone returns r with its slices copied, so stores never share them.
func (r JobRecord) clone() JobRecord {
	r.Committee = slices.Clone(r.Committee)
	r.Delivered = slices.Clone(r.Delivered)
	r.TimedOut = slices.Clone(r.TimedOut)
	return r
}

func (r *JobRecord) delivered(a cip11.Address) bool { return slices.Contains(r.Delivered, a) }

// jobRecordVersion is the first byte of an encoded JobRecord.
const jobRecordVersion = 1

// Encode returns the stored form of r (docs/chainlog.md "Job records"):
//
//	version_u8 ‖ job_id_32 ‖ submitter_20 ‖ job_kind_u8 ‖ committee_size_be4 ‖
//	timeout_blocks_be8 ‖ submitted_at_be8 ‖ status_u8 ‖ mode_u8 ‖ branch_u8 ‖
//	seed_32 ‖ assignment_height_be8 ‖ deadline_block_be8 ‖ reselections_be4 ‖
//	next_draw_be8 ‖ (count_be4 ‖ address_20 × count) for committee, delivered
//	and timed_out in that order.
func (r JobRecord) Encode() []byte {
	b := make([]byte, 0, 160+20*(len(r.Committee)+len(r.Delivered)+len(r.TimedOut)))
	b = append(b, jobRecordVersion)
	b = append(b, r.JobID[:]...)
	b = append(b, r.Submitter[:]...)
	b = append(b, byte(r.Kind))
	b = binary.BigEndian.AppendUint32(b, r.CommitteeSize)
	b = binary.BigEndian.AppendUint64(b, r.TimeoutBlocks)
	b = binary.BigEndian.AppendUint64(b, r.SubmittedAt)
	b = append(b, byte(r.Status), byte(r.Mode), byte(r.Branch))
	b = append(b, r.Seed[:]...)
	b = binary.BigEndian.AppendUint64(b, r.AssignmentHeight)
	b = binary.BigEndian.AppendUint64(b, r.DeadlineBlock)
	b = binary.BigEndian.AppendUint32(b, r.Reselections)
	b = binary.BigEndian.AppendUint64(b, r.NextDraw)
	for _, list := range [][]cip11.Address{r.Committee, r.Delivered, r.TimedOut} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(list)))
		for _, a := range list {
			b = append(b, a[:]...)
		}
	}
	return b
}

// DecodeJobRecord strictly decodes the output of [JobRecord.Encode]: a
// wrong version, a truncated or over-long input, an unknown status, mode,
// kind or branch wraps [ErrJobRecord].
func DecodeJobRecord(b []byte) (JobRecord, error) {
	d := decoder{b: b}
	var r JobRecord
	if v := d.u8(); v != jobRecordVersion {
		return JobRecord{}, fmt.Errorf("%w: version %d", ErrJobRecord, v)
	}
	d.read(r.JobID[:])
	d.read(r.Submitter[:])
	r.Kind = mru.JobKind(d.u8())
	r.CommitteeSize = d.u32()
	r.TimeoutBlocks = d.u64()
	r.SubmittedAt = d.u64()
	r.Status, r.Mode, r.Branch = Status(d.u8()), seed.Mode(d.u8()), selection.Branch(d.u8())
	d.read(r.Seed[:])
	r.AssignmentHeight = d.u64()
	r.DeadlineBlock = d.u64()
	r.Reselections = d.u32()
	r.NextDraw = d.u64()
	r.Committee, r.Delivered, r.TimedOut = d.addrs(), d.addrs(), d.addrs()
	switch {
	case d.bad || len(d.b) != 0:
		return JobRecord{}, fmt.Errorf("%w: length", ErrJobRecord)
	case r.Status < StatusPending || r.Status > StatusExpired:
		return JobRecord{}, fmt.Errorf("%w: status %d", ErrJobRecord, r.Status)
	case r.Mode > seed.ModeDelayed || r.Branch > selection.BranchModeA || !r.Kind.Valid():
		return JobRecord{}, fmt.Errorf("%w: mode, branch or job_kind", ErrJobRecord)
	}
	return r, nil
}

// decoder reads fixed-width fields; any short read sets bad.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) read(dst []byte) {
	if len(d.b) < len(dst) {
		d.bad, d.b = true, nil
		return
	}
	copy(dst, d.b)
	d.b = d.b[len(dst):]
}

func (d *decoder) u8() uint8 {
	var v [1]byte
	d.read(v[:])
	return v[0]
}

func (d *decoder) u32() uint32 {
	var v [4]byte
	d.read(v[:])
	return binary.BigEndian.Uint32(v[:])
}

func (d *decoder) u64() uint64 {
	var v [8]byte
	d.read(v[:])
	return binary.BigEndian.Uint64(v[:])
}

func (d *decoder) addrs() []cip11.Address {
	n := d.u32()
	if uint64(n)*20 > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return nil
	}
	out := make([]cip11.Address, n)
	for i := range out {
		d.read(out[i][:])
	}
	return out
}

// JobStore keeps job records (§9.2, §9.4, §11.2). Implementations return
// records the caller may modify freely (no shared slices).
type JobStore interface {
	// Job returns the record of job_id.
	Job(id [32]byte) (JobRecord, bool, error)
	// Insert adds a new record; an existing job_id wraps ErrDuplicateJob.
	Insert(r JobRecord) error
	// Update replaces an existing record (ErrUnknownJob if absent) and
	// keeps the deadline index in step with its status and DeadlineBlock.
	Update(r JobRecord) error
	// DueBefore returns the ids of assigned jobs whose DeadlineBlock is
	// below h, ascending by (DeadlineBlock, job_id).
	DueBefore(h uint64) ([][32]byte, error)
}

// MemJobStore is the in-memory [JobStore]: records by job_id and a sorted
// deadline index of assigned jobs.
type MemJobStore struct {
	jobs      map[[32]byte]JobRecord
	deadlines []deadlineKey       // sorted
	live      [][32]byte          // ids of pending or assigned jobs, sorted
	enc       map[[32]byte][]byte // Encode of every record, kept for digests
}

type deadlineKey struct {
	deadline uint64
	id       [32]byte
}

func cmpDeadline(a, b deadlineKey) int {
	if a.deadline != b.deadline {
		return cmpU64(a.deadline, b.deadline)
	}
	return bytes.Compare(a.id[:], b.id[:])
}

// NewMemJobStore returns an empty store.
func NewMemJobStore() *MemJobStore {
	return &MemJobStore{jobs: make(map[[32]byte]JobRecord), enc: make(map[[32]byte][]byte)}
}

// Job implements [JobStore].
func (m *MemJobStore) Job(id [32]byte) (JobRecord, bool, error) {
	r, ok := m.jobs[id]
	return r.clone(), ok, nil
}

// Insert implements [JobStore].
func (m *MemJobStore) Insert(r JobRecord) error {
	if _, ok := m.jobs[r.JobID]; ok {
		return fmt.Errorf("%w: %x", ErrDuplicateJob, r.JobID)
	}
	m.jobs[r.JobID] = r.clone()
	m.enc[r.JobID] = r.Encode()
	m.index(r, true)
	m.setLive(r)
	return nil
}

// Update implements [JobStore].
func (m *MemJobStore) Update(r JobRecord) error {
	old, ok := m.jobs[r.JobID]
	if !ok {
		return fmt.Errorf("%w: %x", ErrUnknownJob, r.JobID)
	}
	m.index(old, false)
	m.jobs[r.JobID] = r.clone()
	m.enc[r.JobID] = r.Encode()
	m.index(r, true)
	m.setLive(r)
	return nil
}

// Encoded returns the stored form ([JobRecord.Encode]) of job id, or nil.
// The slice is the store's: do not modify it.
func (m *MemJobStore) Encoded(id [32]byte) []byte { return m.enc[id] }

// index adds or removes r's deadline entry; only assigned jobs are indexed.
func (m *MemJobStore) index(r JobRecord, add bool) {
	if r.Status != StatusAssigned {
		return
	}
	k := deadlineKey{r.DeadlineBlock, r.JobID}
	i, found := slices.BinarySearchFunc(m.deadlines, k, cmpDeadline)
	switch {
	case add && !found:
		m.deadlines = slices.Insert(m.deadlines, i, k)
	case !add && found:
		m.deadlines = slices.Delete(m.deadlines, i, i+1)
	}
}

// DueBefore implements [JobStore].
func (m *MemJobStore) DueBefore(h uint64) ([][32]byte, error) {
	var out [][32]byte
	for _, k := range m.deadlines {
		if k.deadline >= h {
			break
		}
		out = append(out, k.id)
	}
	return out, nil
}

// setLive keeps r's id in the live list iff r is pending or assigned.
func (m *MemJobStore) setLive(r JobRecord) {
	i, found := slices.BinarySearchFunc(m.live, r.JobID, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	live := r.Status == StatusPending || r.Status == StatusAssigned
	switch {
	case live && !found:
		m.live = slices.Insert(m.live, i, r.JobID)
	case !live && found:
		m.live = slices.Delete(m.live, i, i+1)
	}
}

// Live returns the ids of every pending or assigned job, ascending (for
// state digests). The slice is the store's: do not modify it.
func (m *MemJobStore) Live() [][32]byte { return m.live }

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
