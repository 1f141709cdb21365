package chain_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/wire"
)

// Issue 30: a runner's Reject ack keeps its reason in the job's events:
// the acked event names Reject(reason), the soft_failure outcome the
// transport's error with the ack's text.
func TestCoreKeepsAckReasons(t *testing.T) {
	w := newWorld(t, 4, 256)
	w.block()
	id := w.submit(1, 10, 1)
	var runner cip11.Address
	for range 3 {
		if s := seated(w.block(), id); len(s) == 1 {
			runner = s[0]
			break
		}
	}
	if runner == (cip11.Address{}) {
		t.Fatal("no push for the job within 3 blocks")
	}
	at := time.Now()
	w.c.Acked(id, runner, wire.Reject(wire.RejectUnverifiableAssignment), at)
	err := fmt.Errorf("%w: %s: %q", quic.ErrAckRejected, wire.Reject(wire.RejectUnverifiableAssignment), "not in the committee at 7")
	if kind := w.c.Outcome(id, runner, local.SoftFailure, w.c.Height(), err, at); kind != job.EventSoftFailure {
		t.Fatalf("outcome kind %s", kind)
	}
	jv, _ := w.c.Job(id)
	var acked, soft string
	for _, e := range jv.Events {
		switch e.Kind {
		case job.EventAcked:
			acked = e.Detail
		case job.EventSoftFailure:
			soft = e.Detail
		}
	}
	if acked != "Reject(UnverifiableAssignment)" {
		t.Fatalf("acked detail %q", acked)
	}
	if !strings.Contains(soft, "Reject(UnverifiableAssignment)") || !strings.Contains(soft, "not in the committee at 7") {
		t.Fatalf("soft_failure detail %q", soft)
	}
}
