package main

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cip11/cip11/synth"
)

func runGen(args []string, stdout, stderr io.Writer) int {
	c := newCommand("gen", "[-seed N] [-runners N] [-blocks N] [-multi-validator] [-o FILE]", `
Write a deterministic synthetic chain log (docs/chainlog.md): -runners runners
registered over the first blocks, then -blocks blocks of jobs, heartbeats,
selections and results, with every block's outputs and state digest. The same
flags give the same file byte for byte. No positional arguments.`)
	s := c.uint64Var("seed", 1, 0, "PRNG seed `N`; the same seed gives the same chain byte for byte")
	n := c.intVar("runners", 5000, 1, 10_000, "`N` runners registered over the first blocks (1 to 10000)")
	blocks := c.intVar("blocks", 2000, 1, 1_000_000, "`N` blocks (1 to 1000000)")
	out := c.strVar("o", "chain.jsonl.gz", nil, "output `FILE`; .gz compresses; - writes plain JSON Lines to stdout")
	multi := c.fs.Bool("multi-validator", false, "a 4-validator chain (M > 1 draws take the full_set branch)")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if code, ok := c.nargs(stderr, 0, 0); !ok {
		return code
	}
	cfg := synth.GenConfig{Seed: *s, Runners: *n, Blocks: *blocks, MultiValidator: *multi}
	if err := genToPath(cfg, *out, stdout); err != nil {
		fmt.Fprintf(stderr, "gen: %v\n", err)
		return 1
	}
	if *out != "-" {
		fmt.Fprintf(stderr, "wrote %s\n", *out)
	}
	return 0
}

func genToPath(cfg synth.GenConfig, path string, stdout io.Writer) error {
	if path == "-" {
		return synth.Generate(cfg, stdout, nil)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	var w io.Writer = f
	var zw *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		zw, _ = gzip.NewWriterLevel(f, gzip.BestCompression)
		w = zw
	}
	err = synth.Generate(cfg, w, nil)
	if zw != nil {
		err = errors.Join(err, zw.Close())
	}
	return errors.Join(err, f.Close())
}
