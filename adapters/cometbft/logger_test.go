package cometbft

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cip11/cip11/adapters/node"
)

// TestNewLogger: each level lets through what it names and nothing
// below it; an unknown level is ErrBadRequest.
func TestNewLogger(t *testing.T) {
	for _, tc := range []struct {
		level              string
		debug, info, error bool
	}{
		{"none", false, false, false},
		{"error", false, false, true},
		{"info", false, true, true},
		{"debug", true, true, true},
	} {
		var b bytes.Buffer
		l, err := NewLogger(&b, tc.level)
		if err != nil {
			t.Fatalf("%s: %v", tc.level, err)
		}
		l.Debug("d-line")
		l.Info("i-line")
		l.Error("e-line")
		out := b.String()
		if strings.Contains(out, "d-line") != tc.debug || strings.Contains(out, "i-line") != tc.info || strings.Contains(out, "e-line") != tc.error {
			t.Errorf("level %s wrote %q", tc.level, out)
		}
	}
	if _, err := NewLogger(&bytes.Buffer{}, "loud"); !errors.Is(err, node.ErrBadRequest) {
		t.Fatalf("level loud: %v", err)
	}
}
