package node

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/adapters/node/httpapi"
	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/wire"
)

// dashHistoryBlocks is how many blocks the dashboard's block history holds
// (rebuilt from the block log on start, then extended by ProduceBlock).
const dashHistoryBlocks = 60

// maxRefusalEvents caps the refusal events kept for the failures panel.
const maxRefusalEvents = httpapi.MaxDashboardFailures

// dashState is the dashboard's own record of what the job tracker does not
// keep: the start, the block history recovered from the log, and refused
// handshakes. Its mutex guards it; it is never held with v.mu.
type dashState struct {
	mu        sync.Mutex
	started   time.Time
	recovered uint64             // height recovered from the block log at start (0: a new chain)
	history   []job.BlockSummary // the log's last blocks at start, oldest first
	refused   map[string]int64   // refused handshakes by §12.5 reason
	refusals  []httpapi.Failure  // the last refusals, oldest first
}

// start records the start, the height recovered from the block log and the
// log's last blocks (§8.1): the block history the page draws survives a
// restart.
func (d *dashState) start(now time.Time, recovered uint64, history []job.BlockSummary) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.started = now
	d.recovered = recovered
	d.history = slices.Clone(history[max(0, len(history)-dashHistoryBlocks):])
}

// refuse counts a refused handshake (§12.5).
func (d *dashState) refuse(r wire.GoodbyeReason, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.refused == nil {
		d.refused = map[string]int64{}
	}
	d.refused[r.String()]++
	d.refusals = append(d.refusals, httpapi.Failure{Time: now, Kind: httpapi.FailureRefused, Detail: r.String()})
	if len(d.refusals) > maxRefusalEvents {
		d.refusals = slices.Delete(d.refusals, 0, len(d.refusals)-maxRefusalEvents)
	}
}

// newestFailures keeps the n newest failures, newest first: by time
// (events rebuilt from the block log carry none and predate every timed
// one), then by height; among equals the first added stays ahead.
type newestFailures struct {
	n    int
	list []httpapi.Failure
}

// newer orders failure a before b.
func newer(at time.Time, ah uint64, bt time.Time, bh uint64) bool {
	if c := at.Compare(bt); c != 0 {
		return c > 0
	}
	return ah > bh
}

// wants reports whether a failure at (t, h) would be kept.
func (f *newestFailures) wants(t time.Time, h uint64) bool {
	if len(f.list) < f.n {
		return true
	}
	last := f.list[len(f.list)-1]
	return newer(t, h, last.Time, last.Height)
}

func (f *newestFailures) add(x httpapi.Failure) {
	if !f.wants(x.Time, x.Height) {
		return
	}
	i, _ := slices.BinarySearchFunc(f.list, x, func(e, x httpapi.Failure) int {
		if newer(x.Time, x.Height, e.Time, e.Height) {
			return 1 // x goes before e
		}
		return -1
	})
	f.list = slices.Insert(f.list, i, x)
	if len(f.list) > f.n {
		f.list = f.list[:f.n]
	}
}

// dashboard is the data behind GET /dashboard.json. The QUIC server is read
// outside the loop, the core on it (do), the dashboard record under its own
// lock; no lock is held across another.
func (v *Validator) dashboard() httpapi.Dashboard {
	d, _ := v.dashboardCtx(context.Background())
	return d
}

// dashboardCtx is dashboard for a caller with a context (the HTTP API):
// ErrBusy when the loop does not take a read before ctx ends.
func (v *Validator) dashboardCtx(ctx context.Context) (httpapi.Dashboard, error) {
	st, err := v.status(ctx)
	if err != nil {
		return httpapi.Dashboard{}, err
	}
	srv := v.srv // nil in PhaseOff (§14: no transport)
	present, conn := []cip11.Address{}, []cip11.Address{}
	var sst cquic.ServerStats
	if srv != nil {
		present, conn, sst = srv.Present(), srv.ConnectedRunners(), srv.Stats()
	}
	slices.SortFunc(present, func(a, b cip11.Address) int { return bytes.Compare(a[:], b[:]) })

	var (
		now      time.Time
		recent   []job.BlockSummary
		lat      []float64
		counts   map[job.State]int
		tot      httpapi.Totals
		known    []cip11.Address
		inFlight map[cip11.Address]int
		last     map[cip11.Address]chain.LastOutcome
		cfails   []chain.Failure
		modeA    *httpapi.ModeAStatus
	)
	if err := v.doCtx(ctx, func(c *chain.Core) {
		now = v.now()
		recent = c.RecentBlocks()
		slices.Reverse(recent) // oldest first here
		lat, counts = c.PushLatencies(), c.Counts()
		s := c.Stats()
		tot = httpapi.Totals{Accepted: s.Accepted, Submitted: s.Submitted, Assigned: s.Assigned, Pushed: s.Pushed,
			PushFailed: s.PushFailed, Acked: s.Acked, Completed: s.Completed, Expired: s.Expired, Reselections: s.Reselections,
			SoftFailures: s.SoftFailures, HardFailures: s.HardFailures, Blocks: c.Height(), PingsOK: sst.PingsOK, PingsRejected: sst.PingsRejected}
		known = c.Runners()
		inFlight, last = c.RunnerActivity()
		cfails = c.Failures()
		if v.p.PresenceHardExcludeEnabled {
			ma := &httpapi.ModeAStatus{Accepted: s.CertificatesAccepted, Rejected: s.CertificatesRejected}
			if proven, reg, err := c.ModeACoverage(); err == nil {
				ma.Proven, ma.Registered = proven, reg
			}
			if snap := v.activeSnapshot(c.Height() + 1); snap != nil {
				ma.Effective = snap.ModeAEffective(v.p)
			}
			modeA = ma
		}
	}); errors.Is(err, ErrBusy) {
		return httpapi.Dashboard{}, err
	}
	fails := newestFailures{n: httpapi.MaxDashboardFailures}
	for _, f := range cfails {
		j := f.Job
		fails.add(httpapi.Failure{Time: f.Time, Height: f.Height, Kind: httpapi.FailureKind(f.Kind), Job: &j, Runner: f.Runner, Detail: f.Detail})
	}

	d := &v.dash
	d.mu.Lock()
	started, recovered := d.started, d.recovered
	history := slices.Clone(d.history)
	tot.Refused = make(map[string]int64, len(d.refused))
	for k, n := range d.refused {
		tot.Refused[k] = n
	}
	for _, f := range d.refusals {
		fails.add(f)
	}
	d.mu.Unlock()
	if recovered > 0 {
		tot.Restarts = 1
		fails.add(httpapi.Failure{Time: started, Height: recovered, Kind: httpapi.FailureRestart,
			Detail: "validator started over an existing chain (history rebuilt from the block log)"})
	}

	// block history: the log's blocks before this process's first, then its own
	if len(recent) > 0 {
		first := recent[0].Height
		history = slices.DeleteFunc(history, func(b job.BlockSummary) bool { return b.Height >= first })
	}
	blocks := append(history, recent...)
	blocks = blocks[max(0, len(blocks)-dashHistoryBlocks):]
	slices.Reverse(blocks)

	seen := make(map[cip11.Address]bool, len(known)+len(conn))
	addrs := make([]cip11.Address, 0, len(known)+len(conn))
	for _, set := range [][]cip11.Address{known, conn, present} {
		for _, a := range set {
			if !seen[a] {
				seen[a] = true
				addrs = append(addrs, a)
			}
		}
	}
	slices.SortFunc(addrs, func(a, b cip11.Address) int { return bytes.Compare(a[:], b[:]) })
	addrs = addrs[:min(len(addrs), httpapi.MaxDashboardRunners)]
	sortedConn := slices.Clone(conn)
	slices.SortFunc(sortedConn, func(a, b cip11.Address) int { return bytes.Compare(a[:], b[:]) })
	rows := make([]httpapi.RunnerRow, 0, len(addrs))
	for _, a := range addrs {
		_, c := slices.BinarySearchFunc(sortedConn, a, func(x, y cip11.Address) int { return bytes.Compare(x[:], y[:]) })
		_, p := slices.BinarySearchFunc(present, a, func(x, y cip11.Address) int { return bytes.Compare(x[:], y[:]) })
		var ping uint64
		if srv != nil {
			ping, _ = srv.LastPing(a)
		}
		o := last[a]
		rows = append(rows, httpapi.RunnerRow{Address: a, Connected: c, Present: p, LastPingHeight: ping, InFlight: inFlight[a],
			LastOutcome: o.Kind, LastOutcomeHeight: o.Height})
	}
	v.peerPresent(rows) // health.go
	return httpapi.Dashboard{Status: st, RecentBlocks: blocks, Jobs: counts, PushLatencyMillis: lat,
		ConnectedRunners: conn[:min(len(conn), httpapi.MaxDashboardRunners)],
		PresentRunners:   present[:min(len(present), httpapi.MaxDashboardRunners)],
		Now:              now, StartedAt: started, Totals: tot, Failures: fails.list, Runners: rows, ModeA: modeA}, nil
}
