package quic

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/wire"
)

// Issue 17 §5: NewCollector reads Server.Stats at scrape time. One
// admitted runner pings twice (§6.3), is pushed one job and answers with
// a JobResult whose tx_bytes is not signed by it (§10.3 check (1) fails:
// SoftFailure, §10.6); another runner is refused for the wrong chain
// (§12.5 WrongChain: the one Goodbye sent); a third connection closes
// before its Hello. The expected exposition is written out by hand.
func TestCollectorExposition(t *testing.T) {
	rk, other, third := runnerKey(t, 1), runnerKey(t, 2), runnerKey(t, 3)
	f := newFixture(t, 1, rk, other, third)
	s := f.startServer(0, nil)
	tr := rawTransport(t)
	r := rawDial(t, tr, s, rk)
	r.handshake(f.snap.Pair())
	if r.ping(1, startHeight) == nil {
		t.Fatal("no pong to the second ping")
	}
	id, spec := testJob("metrics")
	if err := s.Push([]Assignment{assignment(id, spec, rk.Address())})[0]; err != nil {
		t.Fatal(err)
	}
	fs, a := r.acceptJob()
	r.ack(fs, a, wire.Accepted())
	if err := fs.write(&wire.JobResult{JobID: id, TxBytes: memTx(other, wire.InstructionJobResultSubmit, id)}); err != nil {
		t.Fatal(err)
	}
	if o := f.waitOutcome(id); o.Outcome != local.SoftFailure {
		t.Fatalf("outcome %v", o.Outcome)
	}
	wrong := rawDial(t, tr, s, other)
	h := helloFor(other, f.snap.Pair())
	h.ChainID++
	if g, err := wrong.sendHello(h); err != nil || isGoodbye(g, wire.GoodbyeWrongChain) != nil {
		t.Fatalf("wrong chain: %v %+v", err, g)
	}
	silent := rawDial(t, tr, s, third)
	_ = silent.qc.CloseWithError(0, "")
	eventually(t, "the pre-Hello close counted", func() bool { return s.Stats().PreHelloCloses == 1 })
	eventually(t, "half-open back to 0", func() bool { return s.HalfOpen() == 0 })

	const want = `
# HELP cip11_admission_refusals_total Runner connections refused, by Goodbye reason (§12.5).
# TYPE cip11_admission_refusals_total counter
cip11_admission_refusals_total{reason="AuthFailed"} 0
cip11_admission_refusals_total{reason="Draining"} 0
cip11_admission_refusals_total{reason="NotInSubset"} 0
cip11_admission_refusals_total{reason="OverlapExpired"} 0
cip11_admission_refusals_total{reason="ProtocolError"} 0
cip11_admission_refusals_total{reason="RateLimited"} 0
cip11_admission_refusals_total{reason="Shutdown"} 0
cip11_admission_refusals_total{reason="UnsupportedVersion"} 0
cip11_admission_refusals_total{reason="WrongChain"} 1
# HELP cip11_admissions_total Runner connections admitted after the handshake (§6.2).
# TYPE cip11_admissions_total counter
cip11_admissions_total 1
# HELP cip11_goodbyes_total Goodbye frames sent to and received from runners, by direction and reason (§12.5).
# TYPE cip11_goodbyes_total counter
cip11_goodbyes_total{direction="received",reason="AuthFailed"} 0
cip11_goodbyes_total{direction="received",reason="Draining"} 0
cip11_goodbyes_total{direction="received",reason="NotInSubset"} 0
cip11_goodbyes_total{direction="received",reason="OverlapExpired"} 0
cip11_goodbyes_total{direction="received",reason="ProtocolError"} 0
cip11_goodbyes_total{direction="received",reason="RateLimited"} 0
cip11_goodbyes_total{direction="received",reason="Shutdown"} 0
cip11_goodbyes_total{direction="received",reason="UnsupportedVersion"} 0
cip11_goodbyes_total{direction="received",reason="WrongChain"} 0
cip11_goodbyes_total{direction="sent",reason="AuthFailed"} 0
cip11_goodbyes_total{direction="sent",reason="Draining"} 0
cip11_goodbyes_total{direction="sent",reason="NotInSubset"} 0
cip11_goodbyes_total{direction="sent",reason="OverlapExpired"} 0
cip11_goodbyes_total{direction="sent",reason="ProtocolError"} 0
cip11_goodbyes_total{direction="sent",reason="RateLimited"} 0
cip11_goodbyes_total{direction="sent",reason="Shutdown"} 0
cip11_goodbyes_total{direction="sent",reason="UnsupportedVersion"} 0
cip11_goodbyes_total{direction="sent",reason="WrongChain"} 1
# HELP cip11_half_open_connections Runner connections between their first QUIC Initial and CIP-11 admission (§6.6).
# TYPE cip11_half_open_connections gauge
cip11_half_open_connections 0
# HELP cip11_heartbeat_pings_total HeartbeatPings received, by result (§6.3).
# TYPE cip11_heartbeat_pings_total counter
cip11_heartbeat_pings_total{result="ok"} 2
cip11_heartbeat_pings_total{result="rejected"} 0
# HELP cip11_prehello_closes_total Runner connections closed before a Hello arrived (§6.6).
# TYPE cip11_prehello_closes_total counter
cip11_prehello_closes_total 1
# HELP cip11_presence_receipts_issued_total Mode-A PresenceReceipts signed for runners (§8.3, SPEC-NOTES N18).
# TYPE cip11_presence_receipts_issued_total counter
cip11_presence_receipts_issued_total 0
# HELP cip11_pushes_abandoned_total Pushes abandoned because their connection's epoch pair expired (§5.3 point 4, §11.5).
# TYPE cip11_pushes_abandoned_total counter
cip11_pushes_abandoned_total 0
# HELP cip11_pushes_total JobAssignment pushes, by dispatch outcome (§10.6).
# TYPE cip11_pushes_total counter
cip11_pushes_total{outcome="duplicate"} 0
cip11_pushes_total{outcome="hard_failure"} 0
cip11_pushes_total{outcome="soft_failure"} 1
cip11_pushes_total{outcome="success"} 0
# HELP cip11_results_rejected_total JobResultCommit/JobResult frames whose tx_bytes failed the §10.3 checks.
# TYPE cip11_results_rejected_total counter
cip11_results_rejected_total 1
# HELP cip11_runners_connected Authenticated runner QUIC connections (§6.2).
# TYPE cip11_runners_connected gauge
cip11_runners_connected 1
# HELP cip11_runners_present Runners in this validator's local presence (§7.4).
# TYPE cip11_runners_present gauge
cip11_runners_present 1
`
	if err := testutil.CollectAndCompare(NewCollector(s), strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if probs, err := testutil.CollectAndLint(NewCollector(s)); err != nil || len(probs) != 0 {
		t.Fatalf("lint: %v %+v", err, probs)
	}
}
