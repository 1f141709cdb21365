package main

import (
	"fmt"
	"io"
	"math"

	"github.com/cip11/cip11/conformance"
)

const vectorsDoc = `
Conformance vectors (docs/vectors.md): "check" evaluates vector files with
this implementation, "gen" rewrites them from their generators.`

// runVectors dispatches the vectors sub-commands.
func runVectors(args []string, stdout, stderr io.Writer) int {
	c := newCommand("vectors", "check FILE... | gen [-dir DIR]", vectorsDoc)
	if len(args) > 0 {
		switch args[0] {
		case "check":
			return runVectorsCheck(args[1:], stdout, stderr)
		case "gen":
			return runVectorsGen(args[1:], stdout, stderr)
		case "-h", "-help", "--help", "help":
			c.help(stdout)
			return 0
		}
		return c.usageError(stderr, "unknown subcommand %q", args[0])
	}
	return c.usageError(stderr, "missing subcommand (check or gen)")
}

// runVectorsCheck evaluates every vector of every file with this
// implementation: one agree/disagree line per vector and a summary on
// stdout, file-level errors (unreadable, malformed, unknown function, no
// vectors) on stderr. It returns 1 if any vector disagrees or any file is
// in error.
func runVectorsCheck(args []string, stdout, stderr io.Writer) int {
	c := newCommand("vectors check", "FILE...", `
Evaluate every vector of every FILE (a conformance vector file,
docs/vectors.md) with this implementation: one agree/disagree line per vector
and a summary on stdout, file errors on stderr. Exit 1 if any vector
disagrees or any file is in error.`)
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if code, ok := c.nargs(stderr, 1, math.MaxInt); !ok {
		return code
	}
	files := c.fs.Args()
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
	c := newCommand("vectors gen", "[-dir DIR]", `
Rewrite every conformance vector file from the generators in package
conformance. Regenerate only on purpose: a changed file is a consensus
change unless the change is a new vector. No positional arguments.`)
	dir := c.strVar("dir", "conformance/testdata/vectors", nil, "output `DIR` (must exist; the default is relative to the module root)")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if code, ok := c.nargs(stderr, 0, 0); !ok {
		return code
	}
	if err := conformance.WriteAll(*dir); err != nil {
		fmt.Fprintf(stderr, "vectors gen: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %d vector files to %s\n", len(conformance.Functions()), *dir)
	return 0
}
