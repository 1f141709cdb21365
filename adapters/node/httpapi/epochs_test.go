package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/cip11/cip11/chainlog"
)

type epochsBackend struct {
	*fakeBackend
	es []chainlog.Reconfigure
}

func (e epochsBackend) Epochs() []chainlog.Reconfigure { return e.es }

// TestEpochs: GET /epochs answers a network's committed epochs as chain-log
// reconfigurations (SPEC-NOTES C11) and 404 without them.
func TestEpochs(t *testing.T) {
	plain, err := NewHandler(&fakeBackend{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rr := do(plain, http.MethodGet, "/epochs", "", nil); rr.Code != http.StatusNotFound {
		t.Fatalf("a backend without epochs: %d", rr.Code)
	}
	es := []chainlog.Reconfigure{
		{Epoch: 0, Activation: 1, Set: []chainlog.SetMember{{PeerPubKey: chainlog.PeerKey{1}, QUIC: "h:1"}}},
		{Epoch: 1, Activation: 30, GroupKey: chainlog.PublicKey{7}, Set: []chainlog.SetMember{{PeerPubKey: chainlog.PeerKey{1}, QUIC: "h:1"}, {PeerPubKey: chainlog.PeerKey{2}, QUIC: "h:2", HTTP: "h:3"}}},
	}
	h, err := NewHandler(epochsBackend{&fakeBackend{}, es}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rr := do(h, http.MethodGet, "/epochs", "", nil)
	if rr.Code != http.StatusOK {
		t.Fatalf("GET /epochs: %d %s", rr.Code, rr.Body)
	}
	var got EpochsResponse
	if err := json.Unmarshal(rr.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Epochs) != 2 || got.Epochs[1].Activation != 30 || got.Epochs[1].Set[1].HTTP != "h:3" || got.Epochs[1].GroupKey[0] != 7 {
		t.Fatalf("body %s", rr.Body)
	}
	if rr := do(epochsOnly(t, nil), http.MethodGet, "/epochs", "", nil); rr.Code != http.StatusNotFound {
		t.Fatalf("no epochs (a single validator): %d", rr.Code)
	}
}

func epochsOnly(t *testing.T, es []chainlog.Reconfigure) http.Handler {
	t.Helper()
	h, err := NewHandler(epochsBackend{&fakeBackend{}, es}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}
