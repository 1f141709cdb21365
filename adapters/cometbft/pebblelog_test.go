package cometbft

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	cmtcfg "github.com/cometbft/cometbft/config"
)

// CometBFT's Pebble stores log through the node's logger (issue 30): a
// reopened store's WAL recovery line reaches the slog handler, tagged
// with the store, instead of pebble's default logger on stderr.
func TestCometStoresLogThroughSlog(t *testing.T) {
	cfg := cmtcfg.DefaultConfig()
	cfg.SetRoot(t.TempDir())
	if cfg.DBBackend != "pebbledb" {
		t.Fatalf("CometBFT's default backend is %q, not pebbledb", cfg.DBBackend)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for i := range 2 {
		db, err := openDB(&cmtcfg.DBContext{ID: "blockstore", Config: cfg}, log)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := db.SetSync([]byte("k"), []byte("v")); err != nil {
				t.Fatal(err)
			}
		} else if v, err := db.Get([]byte("k")); err != nil || string(v) != "v" {
			t.Fatalf("reopened: %q %v", v, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	out := buf.String()
	if !strings.Contains(out, "msg=\"pebble: ") || !strings.Contains(out, "store=blockstore") {
		t.Fatalf("no pebble line through slog:\n%s", out)
	}
	t.Logf("%s", out)
}
