// Command cip11 is the operator tool of the CIP-11 Go implementation.
//
//	cip11 replay [-blocks N] [-json] [-no-cache] [-quiet] [FILE]
//	                                    re-execute a chain log and compare every output
//	cip11 gen [-seed N] [-runners N] [-blocks N] [-multi-validator] [-o FILE]
//	                                    write a deterministic synthetic chain log
//	cip11 vectors check FILE...         evaluate conformance vector files
//	cip11 vectors gen [-dir DIR]        rewrite the vector files from their generators
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
  cip11 replay [-blocks N] [-json] [-no-cache] [-quiet] [FILE]
                                        replay a chain log (default: the embedded sample)
  cip11 gen [-seed N] [-runners N] [-blocks N] [-multi-validator] [-o FILE]
                                        write a deterministic synthetic chain log
  cip11 vectors check FILE...           check conformance vector files
  cip11 vectors gen [-dir DIR]          rewrite the vector files (default DIR:
                                        conformance/testdata/vectors; run from the module root)
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
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "cip11: unknown command %q\n%s", args[0], usage)
	return 2
}
