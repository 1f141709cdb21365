package main

import (
	"fmt"
	"io"

	"github.com/cip11/cip11/conformance"
)

// runVectorsCheck evaluates every vector of every file with this
// implementation and prints one line per vector. It returns 1 if any vector
// disagrees or any file is unreadable or names an unknown function.
func runVectorsCheck(files []string, stdout, stderr io.Writer) int {
	if len(files) == 0 {
		fmt.Fprint(stderr, "usage: cip11 vectors check FILE...\n")
		return 2
	}
	var agree, disagree, broken int
	for _, path := range files {
		fn, results, err := conformance.CheckFile(path)
		if err != nil {
			fmt.Fprintf(stdout, "%s: error: %v\n", path, err)
			broken++
			continue
		}
		for _, r := range results {
			if r.Agree {
				fmt.Fprintf(stdout, "%s %s: agree\n", fn, r.Name)
				agree++
				continue
			}
			fmt.Fprintf(stdout, "%s %s: disagree: %s\n", fn, r.Name, r.Detail)
			disagree++
		}
	}
	fmt.Fprintf(stdout, "%d files, %d vectors: %d agree, %d disagree, %d files unreadable\n",
		len(files), agree+disagree, agree, disagree, broken)
	if disagree > 0 || broken > 0 {
		return 1
	}
	return 0
}
