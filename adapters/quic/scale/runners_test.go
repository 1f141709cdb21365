package scale

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	qgo "github.com/quic-go/quic-go"

	"github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/presence/validators"
)

// ---- helper processes, parent side ----

type helperProc struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	addr *net.UDPAddr
	pid  int
}

func spawnHelper(t testing.TB, mode string, n int, env ...string) *helperProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, fmt.Sprintf("%s=%d", helperNEnv, n))
	cmd.Env = append(cmd.Env, env...)
	in, _ := cmd.StdinPipe()
	outR, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helperProc{cmd: cmd, in: in, out: bufio.NewScanner(outR), pid: cmd.Process.Pid}
	h.out.Buffer(make([]byte, 1<<20), 1<<20)
	t.Cleanup(h.stop)
	if !h.out.Scan() {
		t.Fatal("helper printed nothing")
	}
	f := strings.Fields(h.out.Text())
	if len(f) != 2 || f[0] != "ready" {
		t.Fatalf("helper: %q", h.out.Text())
	}
	if h.addr, err = net.ResolveUDPAddr("udp", f[1]); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *helperProc) stop() {
	if h.in != nil {
		_ = h.in.Close()
		h.in = nil
		done := make(chan struct{})
		go func() { _ = h.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = h.cmd.Process.Kill()
			<-done
		}
	}
}

// call sends one command and decodes the answer into v (if not nil).
func (h *helperProc) call(t testing.TB, v any, cmd string, args ...any) {
	t.Helper()
	line := cmd
	for _, a := range args {
		line += " " + fmt.Sprint(a)
	}
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		t.Fatalf("helper %s: %v", cmd, err)
	}
	if !h.out.Scan() {
		t.Fatalf("helper %s: no answer", cmd)
	}
	ans := h.out.Text()
	switch {
	case strings.HasPrefix(ans, "ok "):
		if v != nil {
			if err := json.Unmarshal([]byte(ans[3:]), v); err != nil {
				t.Fatalf("helper %s: %v in %q", cmd, err, ans)
			}
		}
	default:
		t.Fatalf("helper %s: %s", cmd, ans)
	}
}

func (h *helperProc) cpu(t testing.TB) time.Duration {
	var n int64
	h.call(t, &n, "cpu")
	return time.Duration(n)
}

// rss is the smallest of three readings a second apart: after a full GC
// the live heap still varies with packets in flight.
func (h *helperProc) rss(t testing.TB) rssReport {
	var best rssReport
	for i := range 3 {
		if i > 0 {
			time.Sleep(time.Second)
		}
		var r rssReport
		h.call(t, &r, "rss")
		if i == 0 || r.SettledKiB < best.SettledKiB {
			best.SettledKiB, best.HeapInuseKiB, best.Goroutines = r.SettledKiB, r.HeapInuseKiB, r.Goroutines
		}
		if i == 0 || r.RawKiB < best.RawKiB {
			best.RawKiB = r.RawKiB
		}
	}
	return best
}

// ---- CIP-11 runners: full quic.Clients, one UDP socket each ----

type cipPool struct {
	w       *world
	dir     *quic.StaticDirectory
	peer    validators.PeerKey
	clients []*quic.Client
}

// admitted is the validator helper's admission count (ServerStats.Admitted).
func (h *helperProc) admitted(t testing.TB) int64 {
	var s validatorStats
	h.call(t, &s, "stats")
	return s.Admitted
}

// blocks advances the validator helper and the pool n blocks past *h,
// one every d.
func blocks(t testing.TB, v *helperProc, pool *cipPool, h *uint64, n int, d time.Duration) {
	for range n {
		*h++
		v.call(t, nil, "tick", *h)
		pool.tick(*h)
		time.Sleep(d)
	}
}

func newCipPool(w *world, addr net.Addr) *cipPool {
	p := &cipPool{w: w, dir: &quic.StaticDirectory{}, peer: validators.PeerKey(w.vk.PubKey().Raw())}
	p.dir.Put(p.peer, addr)
	return p
}

func (p *cipPool) clientConfig(i int) quic.ClientConfig {
	k := p.w.keys[i]
	from := k.Address()
	exec := quic.ExecutorFunc(func(_ context.Context, j *quic.Job) (quic.Result, error) {
		return quic.Result{Reveal: memTx(from, j.Assignment.JobID)}, nil
	})
	return quic.ClientConfig{Key: k, ChainID: chainID, Params: p.w.p, Validators: p.w.sets, Directory: p.dir, Executor: exec,
		GoodbyeLinger: 100 * time.Millisecond}
}

// grow starts clients up to n, at most batch at a time, waiting for each
// batch to be admitted (admitted reports the server's admission count).
func (p *cipPool) grow(t testing.TB, n, batch int, h uint64, admitted func() int64) {
	t.Helper()
	base := admitted() - int64(len(p.clients))
	for len(p.clients) < n {
		end := min(n, len(p.clients)+batch)
		for i := len(p.clients); i < end; i++ {
			c, err := quic.NewClient(context.Background(), p.clientConfig(i), h)
			if err != nil {
				t.Fatal(err)
			}
			p.clients = append(p.clients, c)
		}
		deadline := time.Now().Add(30 * time.Second)
		for admitted()-base < int64(len(p.clients)) {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d admitted", admitted()-base, len(p.clients))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// each runs fn over the clients with workers goroutines.
func (p *cipPool) each(workers int, fn func(i int, c *quic.Client)) {
	var wg sync.WaitGroup
	var next atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(p.clients) {
					return
				}
				fn(i, p.clients[i])
			}
		}()
	}
	wg.Wait()
}

func (p *cipPool) tick(h uint64) { p.each(64, func(_ int, c *quic.Client) { c.Tick(h) }) }

func (p *cipPool) stats() quic.ClientStats {
	var s quic.ClientStats
	for _, c := range p.clients {
		x := c.Stats()
		s.Dials += x.Dials
		s.Admissions += x.Admissions
		s.PingsSent += x.PingsSent
		s.PongsOK += x.PongsOK
		s.PongsRejected += x.PongsRejected
		s.Executions += x.Executions
		s.Acks += x.Acks
	}
	return s
}

// refusals counts the runners' last Goodbye reasons.
func (p *cipPool) refusals() map[string]int {
	m := map[string]int{}
	for _, c := range p.clients {
		if r := c.LastRefusal(p.peer); r != nil {
			m[fmt.Sprintf("%s/%s", r.Reason, r.Detail)]++
		}
	}
	return m
}

func (p *cipPool) close() {
	p.each(256, func(_ int, c *quic.Client) { _ = c.Close() })
	p.clients = nil
}

// ---- bare quic-go runners ----

type bareConn struct {
	udp net.PacketConn
	tr  *qgo.Transport
	qc  *qgo.Conn
	st  *qgo.Stream
}

type barePool struct {
	conns          []*bareConn
	assign, ack    int
	block          chan struct{} // closed at every block
	mu             sync.Mutex
	replies, fails atomic.Int64
	redials        atomic.Int64
	stop           chan struct{}
	wg             sync.WaitGroup
}

func newBarePool(assign, ack int) *barePool {
	return &barePool{assign: assign, ack: ack, block: make(chan struct{}), stop: make(chan struct{})}
}

// grow dials bare connections up to n, conc at a time; each opens its
// stream with a first request (so the server holds it) and then answers
// every server-opened stream with an echo.
func (p *barePool) grow(t testing.TB, addr net.Addr, n, conc int) {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, conc)
	var firstErr atomic.Value
	out := make([]*bareConn, n-len(p.conns))
	for i := range out {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var c *bareConn
			var err error
			for try := range 20 { // quic-go refuses when its accept queue is full
				if c, err = dialBare(addr); err == nil {
					break
				}
				p.redials.Add(1)
				time.Sleep(time.Duration(100*(try+1)) * time.Millisecond)
			}
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
				return
			}
			out[i] = c
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		t.Fatal(err)
	}
	for _, c := range out {
		p.conns = append(p.conns, c)
		p.wg.Add(2)
		go p.heartbeats(c)
		go p.echo(c)
	}
}

func dialBare(addr net.Addr) (*bareConn, error) {
	udp, err := listenUDP()
	if err != nil {
		return nil, err
	}
	c := &bareConn{udp: udp, tr: &qgo.Transport{Conn: udp}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c.qc, err = c.tr.Dial(ctx, addr, bareClientTLS(), &qgo.Config{HandshakeIdleTimeout: 10 * time.Second, MaxIdleTimeout: 30 * time.Second, KeepAlivePeriod: 5 * time.Second})
	if err != nil {
		_ = udp.Close()
		return nil, err
	}
	if c.st, err = c.qc.OpenStreamSync(ctx); err == nil {
		err = c.roundTrip()
	}
	if err != nil {
		_ = c.qc.CloseWithError(0, "")
		_ = c.tr.Close()
		_ = udp.Close()
		return nil, err
	}
	return c, nil
}

func (c *bareConn) roundTrip() error {
	if _, err := c.st.Write(make([]byte, bareRequestLen)); err != nil {
		return err
	}
	_ = c.st.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := io.ReadFull(c.st, make([]byte, bareReplyLen))
	return err
}

func (p *barePool) nextBlock() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.block
}

// tick is one block: every connection sends one request.
func (p *barePool) tick() {
	p.mu.Lock()
	close(p.block)
	p.block = make(chan struct{})
	p.mu.Unlock()
}

func (p *barePool) heartbeats(c *bareConn) {
	defer p.wg.Done()
	ch := p.nextBlock()
	for {
		select {
		case <-ch:
		case <-p.stop:
			return
		}
		ch = p.nextBlock()
		if err := c.roundTrip(); err != nil {
			p.fails.Add(1)
			continue
		}
		p.replies.Add(1)
	}
}

func (p *barePool) echo(c *bareConn) {
	defer p.wg.Done()
	for {
		st, err := c.qc.AcceptStream(context.Background())
		if err != nil {
			return
		}
		go func() {
			if _, err := io.ReadFull(st, make([]byte, p.assign)); err != nil {
				return
			}
			_, _ = st.Write(make([]byte, p.ack))
			_ = st.Close()
		}()
	}
}

func (p *barePool) close() {
	close(p.stop)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	for _, c := range p.conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_ = c.qc.CloseWithError(0, "")
			_ = c.tr.Close()
			_ = c.udp.Close()
		}()
	}
	wg.Wait()
	p.wg.Wait()
	p.conns = nil
}
