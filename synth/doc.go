// Package synth makes synthetic CIP-11 chain logs (docs/chainlog.md "The
// sample chain"): [Generate] writes the chain a [GenConfig] describes,
// deterministically (the same configuration gives the same bytes),
// executing every block on a blockexec.Executor as it writes it so that
// each line carries this implementation's outputs; [Sample] is the
// embedded sample chain (`cip11 gen -seed 1 -runners 5000 -blocks 1000`),
// replayed by `cip11 replay` without arguments.
//
// A generated chain exercises the block execution the log records:
// registrations and registry churn in ACTIVE_RUNNERS_KEY order and the
// proposer's PresenceInputV1 over registry(H−1) (§7.2), signed seeds of
// every round including nullified views and ConsumedSeedsV1 (§9.2), M = 1
// and M > 1 submits (present_first, and full_set on a multi-validator
// chain, §9.2), MRU writes from MRU_ACTIVATION_HEIGHT (§9.3, §9.4), and
// committees that deliver late, partly or never, so that timeout
// re-selection and expiry (§11.2) occur.
//
// Generate is driven by `cip11 gen` and by tests; it is pure (it writes
// an io.Writer) and deterministic given its configuration.
package synth
