// Package replay re-executes a chain log (docs/chainlog.md) and checks it:
// [Run] feeds every block through a blockexec.Executor and compares each
// recorded output (assignments and re-selections, pending records written
// and consumed, expired jobs, mru_key writes and the state digest) with
// the recomputed one, stopping at the first divergence, invalid block or
// malformed line. It thereby checks the CIP-11 block execution the log
// records: §7.2 presence inputs and registry order, the §9.2 selection and
// pending pass, §9.3–§9.4 MRU, §10.1 assignments and §11.2 timeout
// re-selection.
//
// Run is driven by a reader and a [Config]: the state comes from
// Config.OpenStore (a fresh in-memory store by default, or a stored state
// such as adapters/pebble's, in which case Run resumes after the blocks
// it holds and first checks the digest there); Limit and Progress bound
// and observe it. A reader goroutine decodes the log and verifies seed
// signatures ahead of execution, and stops when Run returns. `cip11
// replay` is its command line; the synthetic generator and the embedded
// sample chain are package synth.
package replay
