package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/chainlog"
)

// cip11 reconfigure without -activation keeps a planned activation the
// operator can still meet and otherwise takes one 20 blocks ahead of the
// node, never inside the last epoch's OVERLAP_BLOCKS (issue 30: the README's
// in-band heights were hard to meet).
func TestPickActivation(t *testing.T) {
	var height uint64
	var epochs []chainlog.Reconfigure
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/status":
			_ = json.NewEncoder(w).Encode(httpapi.Status{Height: height})
		case "/epochs":
			_ = json.NewEncoder(w).Encode(httpapi.EpochsResponse{Epochs: epochs})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	const overlap = 6
	for _, c := range []struct {
		name          string
		height        uint64
		last, planned uint64
		want          uint64
	}{
		{"planned still ahead", 10, 0, 30, 30},
		{"planned just 12 ahead", 18, 0, 30, 30},
		{"planned too close", 19, 0, 30, 19 + 20},
		{"planned passed", 100, 0, 30, 120},
		{"inside the last overlap", 100, 115, 70, 121},
		{"planned inside the overlap", 10, 30, 32, 36},
	} {
		height = c.height
		epochs = []chainlog.Reconfigure{{Epoch: 0, Activation: 0}}
		if c.last != 0 {
			epochs = append(epochs, chainlog.Reconfigure{Epoch: 1, Activation: chainlog.U64(c.last)})
		}
		got, err := pickActivation(ctx, srv.URL, c.planned, overlap)
		if err != nil || got != c.want {
			t.Errorf("%s: pickActivation = %d, %v; want %d", c.name, got, err, c.want)
		}
	}
	if _, err := pickActivation(ctx, srv.URL+"/nowhere", 30, overlap); !errors.Is(err, ErrNodeView) {
		t.Errorf("an unreachable node: %v, want ErrNodeView", err)
	}
}
