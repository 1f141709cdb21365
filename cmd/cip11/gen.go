package main

import (
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cip11/cip11/synth"
)

func runGen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s := fs.Uint64("seed", 1, "PRNG seed; the same seed gives the same chain byte for byte")
	n := fs.Int("runners", 5000, "runners registered over the first blocks (≥ 1)")
	blocks := fs.Int("blocks", 2000, "number of blocks (≥ 1)")
	out := fs.String("o", "chain.jsonl.gz", "output file; .gz compresses; - writes plain JSON Lines to stdout")
	multi := fs.Bool("multi-validator", false, "a 4-validator chain (M > 1 draws take the full_set branch)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *n < 1 || *blocks < 1 || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "gen: -runners and -blocks must be ≥ 1; no positional arguments")
		return 2
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
