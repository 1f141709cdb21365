package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/chainlog"
)

// TestHTTPChainEpochs: a runner process reads a network's committed epochs
// from GET /epochs (SPEC-NOTES C11) and refuses a list with a gap or a set
// out of order.
func TestHTTPChainEpochs(t *testing.T) {
	ck := chainlog.PeerKey{9}
	good := []chainlog.Reconfigure{
		{Epoch: 0, Activation: 1, Set: []chainlog.SetMember{{PeerPubKey: chainlog.PeerKey{1}, QUIC: "127.0.0.1:1"}}},
		{Epoch: 1, Activation: 30, Set: []chainlog.SetMember{{PeerPubKey: chainlog.PeerKey{1}, QUIC: "127.0.0.1:1"},
			{PeerPubKey: chainlog.PeerKey{2}, QUIC: "127.0.0.1:2", ConsensusPubKey: ck}}},
	}
	var serve []chainlog.Reconfigure
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(httpapi.EpochsResponse{Epochs: serve})
	}))
	defer srv.Close()
	c := node.HTTPChain{Base: srv.URL}
	serve = good
	es, err := c.Epochs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[1].Activation != 30 || len(es[1].Set) != 2 || *es[1].Set[1].ConsensusPubKey != [32]byte(ck) || es[1].Set[1].QUIC != "127.0.0.1:2" {
		t.Fatalf("epochs %+v", es)
	}
	serve = good[1:]
	if _, err := c.Epochs(context.Background()); err == nil || !strings.Contains(err.Error(), "entry 0 is epoch 1") {
		t.Errorf("a list that does not start at epoch 0: %v", err)
	}
	bad := []chainlog.Reconfigure{good[0], good[1]}
	bad[1].Set = []chainlog.SetMember{good[1].Set[1], good[1].Set[0]}
	serve = bad
	if _, err := c.Epochs(context.Background()); err == nil {
		t.Error("a set out of order was taken")
	}
}
