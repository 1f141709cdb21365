// Command cip11 is the operator tool of the CIP-11 Go implementation.
//
//	cip11 devnet [-runners N] [-duration D] [-phase N] [-chaos] [-http ADDR] [-json]
//	                                    one-process devnet: validator, runners over QUIC, jobs, report
//	cip11 devnet -validators N [-runners N] [-duration D] [-chaos [-kills N] | -reconfigure] [-json]
//	                                    the same over N validators agreeing through CometBFT
//	cip11 genesis [-o DIR] [-runners N] [-phase N] [-runner ADDRESS[:STAKE]]... [-runners-file FILE] [-force]
//	                                    write a devnet genesis and key files
//	cip11 genesis -validators N [-o DIR] [-runners N] [-seed N] [-base-port P]
//	                                    write a network: one validator home per validator (DIR/v<i>)
//	cip11 validator [-genesis F] [-key F] [-data DIR]
//	                                    a single-validator chain node
//	cip11 validator -home DIR           one validator of a network (CometBFT in-process)
//	cip11 reset -home DIR [-signed-height H]
//	                                    clear a network validator's chain state, keeping its last-sign state
//	cip11 runner [-genesis F] [-key F] [-api URL]
//	                                    a runner process
//	cip11 job submit|get|list [flags]   submit, follow, print and list jobs over a validator's HTTP API
//	cip11 replay [-blocks N] [-json] [-no-cache] [-quiet] [FILE]
//	                                    re-execute a chain log and compare every output
//	cip11 gen [-seed N] [-runners N] [-blocks N] [-multi-validator] [-o FILE]
//	                                    write a deterministic synthetic chain log
//	cip11 vectors check FILE...         evaluate conformance vector files
//	cip11 version                       module version, Go version, VCS revision
//	cip11 vectors gen [-dir DIR]        rewrite the vector files from their generators
//
// -phase N (0 to 3, default 2) selects the §14 migration phase through the
// genesis delivery flags: 0 no QUIC (poll only), 1 push alongside poll, 2
// push primary with poll as fallback, 3 push only (poll answers 410).
//
// cip11 COMMAND -h describes a command, its arguments and every flag. A
// flag value outside its range is a usage error (exit 2) naming the flag
// and the range.
//
// replay without FILE replays the sample chain embedded in the binary. A
// chain log is the JSON Lines format of package chainlog, documented in
// docs/chainlog.md; a name ending in .gz is gzip-compressed.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  cip11 devnet [-runners N] [-duration D] [-phase N] [-chaos] [-http ADDR] [-json]
                                        a validator, N runners over QUIC and a job generator, then a report
  cip11 devnet -validators N [-runners N] [-duration D] [-chaos [-kills N] | -reconfigure] [-json]
                                        the same over N validators agreeing through CometBFT, in one process
  cip11 genesis [-o DIR] [-runners N] [-seed N] [-phase N] [-runner ADDRESS[:STAKE]]... [-runners-file FILE] [-force]
                                        write a devnet genesis.json and key files (docs/genesis.md)
  cip11 genesis -validators N [-o DIR] [-runners N] [-seed N] [-base-port P] [-reconfigure [-in-band]]
                                        write a network of N validators: homes DIR/v0 … DIR/v<N-1>
  cip11 reconfigure -net DIR -epoch E [-activation H] [-node URL]
                                        DEVNET: add a planned epoch to a running network in band
  cip11 validator [-genesis FILE] [-key FILE] [-data DIR] [-block-time D]
                                        run a single-validator chain node (QUIC, HTTP API, metrics)
  cip11 validator -home DIR [-http ADDR] [-log LEVEL] [-comet-log LEVEL]
                                        run one validator of a network from its home (e.g. net/v0)
  cip11 reset -home DIR [-signed-height H]
                                        clear a network validator's chain state (it rebuilds from its
                                        peers), keeping priv_validator_state.json (docs/network.md)
  cip11 runner [-genesis FILE] [-key FILE] [-api URL]
                                        run a runner process (QUIC push, on-chain heartbeats, poll fallback)
  cip11 job submit|get|list [flags]     submit a job and follow it, print one, list them (cip11 job -h)
  cip11 replay [-blocks N] [-json] [-no-cache] [-quiet] [FILE]
                                        replay a chain log (default: the embedded sample)
  cip11 gen [-seed N] [-runners N] [-blocks N] [-multi-validator] [-o FILE]
                                        write a deterministic synthetic chain log
  cip11 vectors check FILE...           check conformance vector files
  cip11 version                         print the module version, the Go version and the VCS revision
  cip11 vectors gen [-dir DIR]          rewrite the vector files (default DIR:
                                        conformance/testdata/vectors; run from the module root)

cip11 COMMAND -h describes COMMAND, its arguments and every flag.
`

// run executes the command line args (without the program name) and returns
// the process exit code: 0 success, 1 a failed check or divergence, 2 a
// usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "replay":
		return runReplay(args[1:], stdout, stderr)
	case "gen":
		return runGen(args[1:], stdout, stderr)
	case "vectors":
		return runVectors(args[1:], stdout, stderr)
	case "devnet":
		return runDevnet(args[1:], stdout, stderr)
	case "genesis":
		return runGenesis(args[1:], stdout, stderr)
	case "validator":
		return runValidator(args[1:], stdout, stderr)
	case "runner":
		return runRunner(args[1:], stdout, stderr)
	case "reconfigure":
		return runReconfigure(args[1:], stdout, stderr)
	case "reset":
		return runReset(args[1:], stdout, stderr)
	case "job":
		return runJob(args[1:], stdout, stderr)
	case "version":
		return runVersion(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "cip11: unknown command %q\n%s", args[0], usage)
	return 2
}
