// Command genvectors rewrites conformance/testdata/vectors from the
// generators in package conformance. Run it from the module root:
//
//	go run ./conformance/cmd/genvectors
//
// Regenerate only on purpose: a changed file is a consensus change unless the
// change is a new vector.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/cip11/cip11/conformance"
)

func main() {
	dir := flag.String("dir", "conformance/testdata/vectors", "output directory")
	flag.Parse()
	if err := conformance.WriteAll(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "genvectors:", err)
		os.Exit(1)
	}
}
