package cometbft

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/job"
)

// GET /jobs on a network (issue 30): jobs submitted to different
// validators list in the same order, paged the same way, on every
// validator once each has applied their blocks (the order is chain data:
// submission height, then job id).
func TestJobListingSameOnEveryValidator(t *testing.T) {
	_, nodes, _ := startNet(t, 4, 4)
	waitHeight(t, nodes, 2, 60*time.Second)
	var ids []cip11.Hash
	for i := range 7 {
		id, err := nodes[i%4].V.SubmitJob(&node.JobSpec{Submitter: cip11.Address{0xc1, byte(i % 2)}, Runners: 1, TimeoutBlocks: 50, Nonce: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	included := func(nd *Node) bool {
		for _, id := range ids {
			if v, ok := nd.V.Job(id); !ok || v.SubmittedAt == 0 {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		all := true
		for _, nd := range nodes {
			all = all && included(nd)
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the jobs were not included on every validator in time")
		}
		time.Sleep(100 * time.Millisecond)
	}
	type row struct {
		id cip11.Hash
		h  uint64
	}
	listAll := func(nd *Node, q job.Query) []row {
		t.Helper()
		var out []row
		for pages := 0; ; pages++ {
			vs, err := nd.V.ListJobs(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				out = append(out, row{v.ID, v.SubmittedAt})
			}
			if len(vs) < q.Limit || pages > 20 {
				return out
			}
			k := job.KeyOf(vs[len(vs)-1])
			q.After = &k
		}
	}
	sub := cip11.Address{0xc1, 1}
	for _, q := range []job.Query{{Limit: 2}, {Limit: 3, Submitter: &sub}} {
		first := listAll(nodes[0], q)
		if q.Submitter == nil && len(first) != 7 {
			t.Fatalf("validator 0 listed %d jobs, want 7", len(first))
		}
		for i, nd := range nodes[1:] {
			if got := listAll(nd, q); !slices.Equal(got, first) {
				t.Fatalf("validator %d lists %v, validator 0 %v", i+1, got, first)
			}
		}
	}
}
