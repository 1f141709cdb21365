package cometbft

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/cip11/cip11/adapters/node"
)

// TestCometMetricsOnTheNodeRegistry (issue 29): with NodeConfig.Registerer
// CometBFT's own series come out of the node's registry under the
// cometbft namespace, with CometBFT's names and the chain_id label, beside
// the cip11_ series and the gossip's; Close takes them all off again, so
// a restart on the same registry registers cleanly.
func TestCometMetricsOnTheNodeRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a validator")
	}
	nw, err := NewNetwork(NetworkOptions{Validators: 1, Seed: 1, BasePort: freeBase(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := nw.Write(dir); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	vm, err := node.PrometheusMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		nd, err := StartNode(context.Background(), NodeConfig{Home: filepath.Join(dir, "v0"), NoSync: true, Metrics: vm, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		if err := nd.metrics.err(); err != nil {
			t.Fatal(err)
		}
		waitHeight(t, []*Node{nd}, uint64(3*(round+1)), 30*time.Second)
		fams := gather(t, reg)
		h := fams["cometbft_consensus_height"]
		if h == nil || len(h.Metric) != 1 || h.Metric[0].GetGauge().GetValue() < 3 || label(h.Metric[0], "chain_id") == "" {
			t.Fatalf("round %d: cometbft_consensus_height %v", round, h)
		}
		for _, name := range []string{"cometbft_p2p_peers", "cometbft_mempool_size", "cometbft_state_block_processing_time",
			"cometbft_consensus_round_duration_seconds", "cip11_block_height", "cip11_runners_connected", MetricGossipViews, node.MetricQueueDropped} {
			if fams[name] == nil {
				t.Errorf("round %d: %s not on the registry", round, name)
			}
		}
		if err := nd.Close(); err != nil {
			t.Fatal(err)
		}
		for name := range gather(t, reg) {
			if strings.HasPrefix(name, "cometbft_") || strings.HasPrefix(name, "cip11_gossip") || name == "cip11_runners_connected" {
				t.Fatalf("round %d: %s still registered after Close", round, name)
			}
		}
	}
}

func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	fs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fs {
		out[f.GetName()] = f
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// buckets reads every bucket layout metricsgen writes, and refuses the
// arguments prometheus' constructors would panic on.
func TestCometBuckets(t *testing.T) {
	type s struct {
		None  int `metrics_bucketsizes:""`
		List  int `metrics_bucketsizes:"-1.5, 0, 2"`
		Range int `metrics_bucketsizes:"0.1, 100, 8" metrics_buckettype:"exprange"`
		Exp   int `metrics_bucketsizes:"1,3,7" metrics_buckettype:"exp"`
		Lin   int `metrics_bucketsizes:"1, 10, 10" metrics_buckettype:"lin"`
		Bad1  int `metrics_bucketsizes:"0, 10, 3" metrics_buckettype:"exp"`
		Bad2  int `metrics_bucketsizes:"1, 10" metrics_buckettype:"lin"`
		Bad3  int `metrics_bucketsizes:"1, x" metrics_buckettype:""`
		Bad4  int `metrics_bucketsizes:"1, 2, 0" metrics_buckettype:"exprange"`
		Bad5  int `metrics_bucketsizes:"1, 2, 3" metrics_buckettype:"cubic"`
	}
	st := reflect.TypeFor[s]()
	want := map[string]int{"None": 0, "List": 3, "Range": 8, "Exp": 7, "Lin": 10}
	for i := range st.NumField() {
		f := st.Field(i)
		b, err := buckets(f.Tag)
		n, ok := want[f.Name]
		if ok != (err == nil) || len(b) != n {
			t.Errorf("%s: %v, %v", f.Name, b, err)
		}
	}
}
