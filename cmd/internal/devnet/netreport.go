package devnet

import (
	"maps"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/replay"
)

// OverlapTimeline is one epoch change seen from the runners (§5.3): the
// activation height and cutoff (activation + OVERLAP_BLOCKS); over the
// runners that held a link under the new pair, the earliest and latest
// height one first did; and the last height any runner held a link under
// the old pair (0: none did).
type OverlapTimeline struct {
	Epoch          uint64 `json:"epoch"`
	Activation     uint64 `json:"activation_height"`
	Cutoff         uint64 `json:"cutoff_height"`
	Runners        int    `json:"runners_with_new_pair"`
	NewPairFirstUp uint64 `json:"new_pair_first_up_min"`
	NewPairLastUp  uint64 `json:"new_pair_first_up_max"`
	OldPairLastUp  uint64 `json:"old_pair_last_up"`
}

// NetworkReport is the network devnet's summary (-json).
type NetworkReport struct {
	Validators int    `json:"validators"`
	Runners    int    `json:"runners"`
	Blocks     uint64 `json:"blocks"` // validator 0's height; interrupted: the highest a validator reached
	Submitted  int64  `json:"jobs_submitted"`
	Completed  int64  `json:"jobs_completed"`
	Expired    int64  `json:"jobs_expired"`
	Lost       int    `json:"jobs_lost"`
	// Interrupted: the run was stopped (SIGINT) before it ended and this
	// is the report so far (no catch-up or replay check ran); Open jobs
	// had not ended (not counted lost).
	Interrupted     bool    `json:"interrupted,omitempty"`
	Open            int     `json:"jobs_open,omitempty"`
	Assignments     int64   `json:"assignments"`
	Seats           int64   `json:"committee_seats"`
	Pushes          int64   `json:"pushes"`
	PushesPerAssign float64 `json:"pushes_per_seat"`
	DuplicateAcks   int64   `json:"duplicate_acks"`
	NotHeld         int64   `json:"not_held"`
	PushP50Millis   float64 `json:"push_latency_p50_ms"`
	PushP99Millis   float64 `json:"push_latency_p99_ms"`
	// PushMicros is the push-latency histogram behind the two figures
	// above (harnesses pool it across runs).
	PushMicros    job.Histogram `json:"-"`
	SentP50Millis float64       `json:"push_sent_p50_ms"`
	SentP99Millis float64       `json:"push_sent_p99_ms"`
	// SentMicros (block committed → JobAssignment written on the pushing
	// validator) and ServeMicros (JobAssignment read → JobAck written on
	// the runner) are the parts of PushMicros the harnesses break down.
	SentMicros  job.Histogram `json:"-"`
	ServeMicros job.Histogram `json:"-"`
	// RunnerChainChecks counts the §10.1 still-assigned checks the
	// runners' chain views answered (a push below the runner's view).
	RunnerChainChecks int64   `json:"runner_chain_checks"`
	BlockP50Millis    float64 `json:"block_interval_p50_ms"`
	BlockP99Millis    float64 `json:"block_interval_p99_ms"`
	AppHashesAgree    bool    `json:"app_hashes_agree"`
	Gossip            bool    `json:"presence_gossip"`
	// PresenceCoverage: |PresenceInput(h)| / the runners connected to at
	// least one validator when h−1 committed (when the proposer built
	// PresenceInput(h)), over the blocks from 4 on with any then, capped at
	// 1 (a runner may connect between the commit and the proposal): median,
	// minimum, and the share of blocks at 1.
	CoverageP50      float64 `json:"presence_coverage_p50"`
	CoverageMin      float64 `json:"presence_coverage_min"`
	CoverageFullPct  float64 `json:"presence_coverage_full_pct"`
	CoverageBlocks   int     `json:"presence_coverage_blocks"`
	JobsPerRunnerMax int64   `json:"jobs_per_runner_max"`
	JobsPerRunnerAvg float64 `json:"jobs_per_runner_mean"`
	GossipBytes      uint64  `json:"gossip_bytes_sent"`
	HeightsCompared  uint64  `json:"heights_compared"`
	// Reconfiguration (-reconfigure): the epochs the chain went through,
	// the runners connected at the end only to validators of their final
	// Sub(R) (re-homed) and those still connected elsewhere, and the
	// connections the removed validator admitted after its cutoff.
	Epochs               int   `json:"epochs,omitempty"`
	RunnersRehomed       int   `json:"runners_rehomed,omitempty"`
	RunnersStray         int   `json:"runners_connected_outside_subset,omitempty"`
	RemovedAdmittedAfter int64 `json:"removed_validator_admissions_after_cutoff,omitempty"`
	// Goodbyes sent by the validators and by the runners, by §12.5 reason.
	GoodbyesByValidators map[string]int64 `json:"goodbyes_sent_by_validators,omitempty"`
	GoodbyesByRunners    map[string]int64 `json:"goodbyes_sent_by_runners,omitempty"`
	// Overlap is the per-transition timeline over the runners (sampled
	// every height): when each runner first held a link under the new
	// epoch's pair, and the last height any runner held one under the old
	// epoch's pair (§5.3: before the cutoff).
	Overlap           []OverlapTimeline `json:"overlap_timeline,omitempty"`
	ValidatorKills    int               `json:"validator_kills"`
	CaughtUp          bool              `json:"restarted_caught_up"`
	CatchUpMaxSeconds float64           `json:"catch_up_max_s"`
	// ReplayAgrees is whether the block logs replayed (a restarted
	// validator's with -chaos, the leaver's and the joiner's with
	// -reconfigure); nil, and absent from the JSON, when no replay ran.
	ReplayAgrees *bool `json:"replay_agrees,omitempty"`
	// StalePushes are the pushes any validator handed to its transport
	// whose deadline_block was at or below the network's greatest
	// finalized height then (issue 28: a catching-up validator pushes
	// nothing for the past). PushesSkipped are the pushes the validators
	// skipped while catching up, by reason (node.SkipReasons).
	StalePushes   int64             `json:"stale_pushes"`
	PushesSkipped map[string]uint64 `json:"pushes_skipped,omitempty"`
	// -pause: the paused validator's pushes handed over after the pause
	// (at the head), and the heights it was behind when it resumed.
	PausedPushesAfter int64  `json:"paused_pushes_after"`
	PausedBehind      uint64 `json:"paused_behind_blocks"`
	// ModeA is the §8.3 report (-mode-a).
	ModeA *ModeAReport `json:"mode_a,omitempty"`
	// GoMaxProcs is the Go runtime's GOMAXPROCS during the run (every
	// validator, CometBFT node and runner shares this one process).
	GoMaxProcs int     `json:"gomaxprocs"`
	Dir        string  `json:"dir,omitempty"`
	Elapsed    float64 `json:"elapsed_s"`
}

// sampleCoverage records presence_coverage for the newest block of
// validator 0: its PresenceInput's size over the runners connected to at
// least one running validator now.
func (n *netDevnet) sampleCoverage() {
	v, err := n.live(0)
	if err != nil {
		return
	}
	b := v.LastBlock()
	if b == nil || uint64(b.Height) == n.covH {
		return
	}
	n.covH = uint64(b.Height)
	n.mu.Lock()
	conn := map[cip11.Address]bool{}
	for _, nd := range n.nodes {
		if nd != nil {
			for _, a := range nd.V.ConnectedRunners() {
				conn[a] = true
			}
		}
	}
	h := uint64(b.Height)
	if n.connAt == nil {
		n.connAt = map[uint64]int{}
	}
	n.connAt[h] = len(conn)
	delete(n.connAt, h-2)
	// PresenceInput(h) was built as h−1 committed: it is measured against
	// the runners connected then. Blocks 2 and 3 are not counted: their
	// PresenceInput was built while the runners, registered in block 1,
	// were still being admitted, and the devnet's first samples come later
	// than those commits.
	prev, ok := n.connAt[h-1]
	n.mu.Unlock()
	if b.Presence == nil || !ok || prev == 0 || h < 4 {
		return
	}
	size, err := v.RegistrySize(h - 1)
	if err != nil {
		return
	}
	set, err := presence.Decode(*b.Presence, size)
	if err != nil {
		return
	}
	n.mu.Lock()
	n.coverage = append(n.coverage, min(1, float64(set.Len())/float64(prev)))
	n.mu.Unlock()
}

func (n *netDevnet) report(rep *NetworkReport, v *node.Validator, open int, catchUp []uint64, elapsed time.Duration) (*NetworkReport, error) {
	s := v.Stats()
	rep.Blocks = v.Height()
	rep.Submitted, rep.Completed, rep.Expired, rep.Assignments = s.Submitted, s.Completed, s.Expired, s.Assigned
	rep.Lost = open
	n.mu.Lock()
	pushed, dup, notHeld, lat, sent := n.pushed, n.dup, n.notHeld, n.ackLat, n.sentLat
	for _, nd := range n.nodes {
		if nd != nil {
			st := nd.V.Stats()
			pushed += st.Pushed
			dup += int64(nd.V.DuplicateAcks())
			notHeld += int64(nd.V.NotHeld())
			lat.Merge(&st.AckMicros)
			sent.Merge(&st.SentMicros)
		}
	}
	rep.Pushes, rep.DuplicateAcks, rep.NotHeld = pushed, dup, notHeld
	stopped := n.skipped
	n.skipped = maps.Clone(stopped)
	for _, nd := range n.nodes {
		if nd != nil {
			n.addSkipped(nd)
		}
	}
	rep.PushesSkipped, n.skipped = n.skipped, stopped
	rep.StalePushes, rep.PausedPushesAfter = n.stale.Load(), n.pausedAfter.Load()
	rep.Gossip = !n.cfg.NoGossip
	gb := n.gossipBytes
	for _, nd := range n.nodes {
		if nd != nil {
			gb += nd.Gossip().BytesSent
		}
	}
	rep.GossipBytes = gb
	if cv := slices.Clone(n.coverage); len(cv) > 0 {
		slices.Sort(cv)
		rep.CoverageBlocks, rep.CoverageP50, rep.CoverageMin = len(cv), cv[len(cv)/2], cv[0]
		full := 0
		for _, c := range cv {
			if c >= 1 {
				full++
			}
		}
		rep.CoverageFullPct = float64(full*10000/len(cv)) / 100
	}
	rep.Seats = int64(v.Seats()) // validator 0 is never killed: every seat
	if rep.Seats > 0 {
		rep.PushesPerAssign = float64(pushed*100/rep.Seats) / 100
	}
	if lat.Count() > 0 {
		rep.PushP50Millis, rep.PushP99Millis = float64(lat.Quantile(500))/1000, float64(lat.Quantile(990))/1000
		rep.PushMicros = lat
	}
	if sent.Count() > 0 {
		rep.SentP50Millis, rep.SentP99Millis = float64(sent.Quantile(500))/1000, float64(sent.Quantile(990))/1000
		rep.SentMicros = sent
	}
	// block intervals: between consecutive first finalizations
	var iv []time.Duration
	rec := func(h uint64) (heightRecord, bool) {
		if h < uint64(len(n.heights)) && n.heights[h].seen != 0 {
			return n.heights[h], true
		}
		return heightRecord{}, false
	}
	for h := uint64(2); h <= rep.Blocks; h++ {
		a, ok1 := rec(h - 1)
		b, ok2 := rec(h)
		if ok1 && ok2 {
			iv = append(iv, time.Duration(b.first-a.first))
		}
	}
	slices.Sort(iv)
	if len(iv) > 0 {
		rep.BlockP50Millis = float64(iv[len(iv)*50/100].Microseconds()) / 1000
		rep.BlockP99Millis = float64(iv[min(len(iv)-1, len(iv)*99/100)].Microseconds()) / 1000
	}
	rep.AppHashesAgree = !n.disagree
	for h := uint64(1); h <= rep.Blocks; h++ {
		if r, ok := rec(h); ok && bits.OnesCount64(r.seen) == len(n.nodes) {
			rep.HeightsCompared++
		}
	}
	n.mu.Unlock()
	rep.Elapsed = elapsed.Seconds()
	if rep.Interrupted {
		return rep, nil
	}
	if n.cfg.Chaos {
		rep.CaughtUp = true
		victim := len(n.nodes) - 1
		n.mu.Lock()
		nd := n.nodes[victim]
		n.mu.Unlock()
		if nd == nil || len(catchUp) == 0 || nd.V.Height() < catchUp[len(catchUp)-1] {
			rep.CaughtUp = false
		}
		ok, err := n.replays(victim) // the restarted validator's block log
		if err != nil {
			return nil, err
		}
		rep.ReplayAgrees = &ok
	}
	if n.cfg.Reconfigure { // the leaver's and the joiner's block logs
		agree := true
		for _, i := range []int{0, len(n.nodes) - 1} {
			ok, err := n.replays(i)
			if err != nil {
				return nil, err
			}
			agree = agree && ok
		}
		rep.ReplayAgrees = &agree
	}
	return rep, nil
}

// blockLog is validator i's block log.
func (n *netDevnet) blockLog(i int) string { return filepath.Join(n.homes[i], "node", "blocks.jsonl") }

// replays stops validator i and reports whether its block log replays
// against a fresh store (§17); err is a failure to stop it or open the log.
func (n *netDevnet) replays(i int) (bool, error) {
	if err := n.stop(i); err != nil {
		return false, err
	}
	f, err := os.Open(n.blockLog(i))
	if err != nil {
		return false, err
	}
	defer f.Close()
	sum, err := replay.Run(f, replay.Config{})
	if err != nil {
		n.cfg.Logger.Error("devnet: a block log does not replay", "validator", i, "err", err)
	}
	return err == nil && sum.Blocks > 0, nil
}

// Replayed reports whether a replay ran and agreed (false when none ran:
// ask ReplayAgrees == nil for that).
func (r *NetworkReport) Replayed() bool { return r.ReplayAgrees != nil && *r.ReplayAgrees }
