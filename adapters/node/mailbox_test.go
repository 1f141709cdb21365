package node

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A full mailbox drops and counts, never blocks (issue 29: bounded
// queues, drops exported).
func TestMailboxBoundedDropsCounted(t *testing.T) {
	m := newMailbox[int](2)
	for i := range 5 {
		if ok := m.post(i); ok != (i < 2) {
			t.Fatalf("post %d: %v", i, ok)
		}
	}
	if got := m.take(); len(got) != 2 || m.drops() != 3 {
		t.Fatalf("took %v, %d drops; want 2 kept, 3 dropped", got, m.drops())
	}
	if !m.post(9) || m.drops() != 3 {
		t.Fatal("an emptied mailbox takes posts again")
	}
	if maxSendBacklog > 1<<12 || maxInbox > 1<<16 {
		t.Fatalf("queue bounds %d, %d", maxSendBacklog, maxInbox)
	}
}

// cip11_queue_dropped_total reads the validator's queues at scrape time.
func TestQueueDroppedExported(t *testing.T) {
	d := testDevnet(t, 1, nil)
	reg := prometheus.NewRegistry()
	v, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: t.TempDir(), NoSync: true, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	v.inbox.dropped.Add(2)
	v.sendq.dropped.Add(5)
	want := `
# HELP cip11_queue_dropped_total Posts a full bounded queue dropped, by queue (inbox: transport events for the loop; send: committed blocks for the sender).
# TYPE cip11_queue_dropped_total counter
cip11_queue_dropped_total{queue="inbox"} 2
cip11_queue_dropped_total{queue="send"} 5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), MetricQueueDropped); err != nil {
		t.Fatal(err)
	}
	if _, err := PrometheusMetrics(nil); err == nil {
		t.Fatal("PrometheusMetrics(nil) must fail")
	}
	m := NopMetrics()
	m.BlockProduced(3) // counts nowhere, panics never
	m.SetJobs(nil)
}
