package main

import (
	"fmt"
	"io"
	"math"

	"github.com/cip11/cip11/adapters/cometbft"
)

// runReset is cip11 reset: clear a network validator's chain state,
// keeping its double-sign protection (cometbft.ResetHome).
func runReset(args []string, stdout, stderr io.Writer) int {
	c := newCommand("reset", "-home DIR [-signed-height H]", `
Clear the chain state of a network validator's home (one that cip11 genesis
-validators wrote, e.g. net/v2) so that it rebuilds the chain from its peers
when cip11 validator -home DIR starts it again: CometBFT's stores (everything
in DIR/data but priv_validator_state.json: block store, state store,
consensus WAL, evidence) and the validator's DIR/node (state, block log,
job file, archive). The keys, the configuration, the genesis and
DIR/data/priv_validator_state.json are kept: that file records the last
height, round and step the validator signed, and keeping it is what stops
the restarted validator from signing twice at a height it already voted on
(like CometBFT's reset-state; unlike unsafe-reset-all, which forgets it).

Stop the validator first: a home whose stores a running process holds is
refused. A home whose priv_validator_state.json is missing is refused too,
unless -signed-height H is given: then a state is written under which the
validator signs nothing at or below H (take H at least the network's
current height, from GET /status of a live validator); an existing state
at a greater height is kept. Exit 0 when reset, 1 when refused, 2 on a
usage error. No positional arguments. docs/network.md, "Wiped homes".`)
	home := c.strVar("home", "", nonEmpty, "the validator home `DIR` to reset (e.g. net/v2)")
	signed := c.uint64Var("signed-height", 0, 0, "write a last-sign state at `H` when none is kept: sign nothing at or below H (0: require the existing state)")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if code, ok := c.nargs(stderr, 0, 0); !ok {
		return code
	}
	if *home == "" {
		return c.usageError(stderr, "-home is required")
	}
	if *signed >= math.MaxInt64 {
		return c.usageError(stderr, "-signed-height %d: at most %d", *signed, int64(math.MaxInt64-1))
	}
	rep, err := cometbft.ResetHome(*home, int64(*signed))
	if err != nil {
		fmt.Fprintf(stderr, "cip11 reset: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "reset %s: removed %d paths (CometBFT's stores and the validator's node/); ", *home, len(rep.Removed))
	if rep.Wrote {
		fmt.Fprintf(stdout, "wrote %s: signs nothing below height %d\n", rep.SignState, rep.SignedHeight)
	} else {
		fmt.Fprintf(stdout, "kept %s (last signed height %d)\n", rep.SignState, rep.SignedHeight)
	}
	fmt.Fprintf(stdout, "start it with cip11 validator -home %s: it catches up from its peers\n", *home)
	return 0
}
