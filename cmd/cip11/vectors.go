package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/cip11/cip11/conformance"
)

// runVectors dispatches the vectors sub-commands.
func runVectors(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "check":
			return runVectorsCheck(args[1:], stdout, stderr)
		case "gen":
			return runVectorsGen(args[1:], stdout, stderr)
		}
	}
	fmt.Fprint(stderr, usage)
	return 2
}

// runVectorsCheck evaluates every vector of every file with this
// implementation: one agree/disagree line per vector and a summary on
// stdout, file-level errors (unreadable, malformed, unknown function, no
// vectors) on stderr. It returns 1 if any vector disagrees or any file is
// in error.
func runVectorsCheck(files []string, stdout, stderr io.Writer) int {
	if len(files) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var agree, disagree, broken int
	for _, path := range files {
		fn, results, err := conformance.CheckFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "%s: error: %v\n", path, err)
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
	fmt.Fprintf(stdout, "%d files, %d vectors: %d agree, %d disagree, %d files in error\n",
		len(files), agree+disagree, agree, disagree, broken)
	if disagree > 0 || broken > 0 {
		return 1
	}
	return 0
}

// runVectorsGen rewrites every vector file from the generators in package
// conformance. Regenerate only on purpose: a changed file is a consensus
// change unless the change is a new vector. DIR must exist, so a run from
// outside the module root fails instead of creating a stray tree.
func runVectorsGen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vectors gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "conformance/testdata/vectors", "output directory (must exist)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprint(stderr, "vectors gen: no positional arguments\n"+usage)
		return 2
	}
	if err := conformance.WriteAll(*dir); err != nil {
		fmt.Fprintf(stderr, "vectors gen: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %d vector files to %s\n", len(conformance.Functions()), *dir)
	return 0
}
