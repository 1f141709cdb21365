package replay

import (
	"io"

	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
)

// pipelineDepth is how many decoded blocks the reader may run ahead.
const pipelineDepth = 64

// pipeline decodes the log and verifies each block's seed signatures on
// its own goroutine, ahead of execution, so JSON decoding and BLS pairings
// overlap with block execution on a second core. Blocks
// come out in log order; the first read error ends the stream.
type pipeline struct {
	out  chan decoded
	done chan struct{}
}

type decoded struct {
	b   *chainlog.Block
	err error
}

func newPipeline(r *chainlog.Reader, x *blockexec.Executor) *pipeline {
	p := &pipeline{out: make(chan decoded, pipelineDepth), done: make(chan struct{})}
	go func() {
		defer close(p.out)
		for {
			b, err := r.Next()
			var d decoded
			if err != nil {
				d.err = err
			} else {
				d.b = &b
				x.VerifyAhead(d.b)
			}
			select {
			case p.out <- d:
			case <-p.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return p
}

// next returns the next block, or io.EOF after the last.
func (p *pipeline) next() (*chainlog.Block, error) {
	d, ok := <-p.out
	if !ok {
		return nil, io.EOF
	}
	return d.b, d.err
}

// stop releases the reader goroutine.
func (p *pipeline) stop() { close(p.done) }
