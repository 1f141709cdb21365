package cometbft

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/chain"
)

// A CheckTx refusal's log is the app's error text, which already names
// its sentinel: the engine's error says the sentinel once (issue 30:
// "node: bad request: node: bad request: …") and still matches it.
func TestErrOfSaysThePrefixOnce(t *testing.T) {
	for _, c := range []struct {
		code uint32
		err  error
	}{
		{CodeBadRequest, fmt.Errorf("%w: the job asks for 4 runners and 3 are registered", node.ErrBadRequest)},
		{CodeDuplicate, fmt.Errorf("%w: job 00ab", node.ErrDuplicate)},
		{CodeFull, fmt.Errorf("%w: 10000 waiting", chain.ErrMempoolFull)},
	} {
		log := c.err.Error()
		if got := codeOf(c.err); got != c.code {
			t.Fatalf("codeOf(%v) = %d, want %d", c.err, got, c.code)
		}
		err := errOf(c.code, log)
		if err == nil || err.Error() != log {
			t.Errorf("errOf(%d, %q) = %v, want the log itself", c.code, log, err)
		}
		if !errors.Is(err, errors.Unwrap(c.err)) {
			t.Errorf("errOf(%d, %q) = %v: not its sentinel", c.code, log, err)
		}
		if n := strings.Count(err.Error(), errors.Unwrap(c.err).Error()); n != 1 {
			t.Errorf("%q names its sentinel %d times", err, n)
		}
	}
	if err := errOf(CodeOK, ""); err != nil {
		t.Errorf("CodeOK: %v", err)
	}
	// A log without the prefix (CometBFT's own) is wrapped as before.
	if err := errOf(CodeBadRequest, "tx too large"); err == nil || err.Error() != node.ErrBadRequest.Error()+": tx too large" {
		t.Errorf("a plain log: %v", err)
	}
}
