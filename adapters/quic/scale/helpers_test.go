package scale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	qgo "github.com/quic-go/quic-go"

	"github.com/cip11/cip11"
	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/wire"
)

// pushFrameSizes are the encoded sizes of a scale JobAssignment and its
// JobAck, so the bare push baseline moves the same bytes.
func pushFrameSizes(w *world) (assign, ack int, err error) {
	k := w.keys[0]
	id, spec := jobFor(startHeight, 0)
	a := &wire.JobAssignment{JobID: id, JobSpec: spec, JobSpecHash: wire.JobSpecHash(spec), AssignmentHeight: startHeight,
		DeadlineBlock: startHeight + 100, RunnerPubKey: k.PubKey()}
	if err := a.Sign(chainID, w.vk); err != nil {
		return 0, 0, err
	}
	b, err := wire.Encode(a)
	if err != nil {
		return 0, 0, err
	}
	ep, err := w.sets.EpochsAt(startHeight)
	if err != nil {
		return 0, 0, err
	}
	pair := ep.Current.Pair()
	rh := &wire.Hello{Version: wire.Version, ChainID: chainID, ValidatorSetHash: pair.ValidatorSetHash, SubsetEpoch: pair.SubsetEpoch,
		PartyPubKey: k.PubKey(), PartyRole: wire.RoleRunner, BlockHeight: startHeight}
	vh := &wire.Hello{Version: wire.Version, ChainID: chainID, ValidatorSetHash: pair.ValidatorSetHash, SubsetEpoch: pair.SubsetEpoch,
		PartyPubKey: w.vk.PubKey(), PartyRole: wire.RoleValidator, BlockHeight: startHeight}
	sess, err := wire.SessionFor(rh, vh, cip11.Keccak256([]byte("binding")))
	if err != nil {
		return 0, 0, err
	}
	ackF := &wire.JobAck{JobID: id, AssignmentHash: a.AssignmentHash, Status: wire.Accepted()}
	if err := ackF.Sign(sess, k); err != nil {
		return 0, 0, err
	}
	c, err := wire.Encode(ackF)
	if err != nil {
		return 0, 0, err
	}
	return len(b), len(c), nil
}

// cryptoCost is the floor's crypto measured here, serially.
type cryptoCost struct {
	N int
	// per operation, µs of CPU
	RecoverUs, EdSignUs, EdVerifyUs, SecpSignUs float64
	// PushBatchMs is the wall time of N × (Ed25519 sign + verify, secp256k1
	// sign + recover) done serially, divided by GOMAXPROCS.
	PushBatchMs float64
	GOMAXPROCS  int
}

func measureCrypto(w *world, n int) (cryptoCost, error) {
	c := cryptoCost{N: n, GOMAXPROCS: runtime.GOMAXPROCS(0)}
	k := w.keys[0]
	d := cip11.Keccak256([]byte("floor digest"))
	sig, err := k.Sign(d)
	if err != nil {
		return c, err
	}
	id, spec := jobFor(startHeight, 0)
	a := &wire.JobAssignment{JobID: id, JobSpec: spec, JobSpecHash: wire.JobSpecHash(spec), AssignmentHeight: startHeight,
		DeadlineBlock: startHeight + 100, RunnerPubKey: k.PubKey()}
	if err := a.Sign(chainID, w.vk); err != nil {
		return c, err
	}
	per := func(op func() error) (float64, error) {
		t0 := cpuNanos()
		for range n {
			if err := op(); err != nil {
				return 0, err
			}
		}
		return float64(cpuNanos()-t0) / float64(n) / 1e3, nil
	}
	if c.RecoverUs, err = per(func() error { _, err := wire.RecoverRunner(d, sig); return err }); err != nil {
		return c, err
	}
	if c.EdSignUs, err = per(func() error { _ = w.vk.Sign(d); return nil }); err != nil {
		return c, err
	}
	if c.EdVerifyUs, err = per(func() error { return a.Verify(chainID) }); err != nil {
		return c, err
	}
	if c.SecpSignUs, err = per(func() error { _, err := k.Sign(d); return err }); err != nil {
		return c, err
	}
	// The push batch: what dispatching n assignments signs and verifies,
	// wall clock, serial, then divided by GOMAXPROCS.
	t0 := time.Now()
	for range n {
		_ = w.vk.Sign(d)
		if err := a.Verify(chainID); err != nil {
			return c, err
		}
		s, err := k.Sign(d)
		if err != nil {
			return c, err
		}
		if _, err := wire.RecoverRunner(d, s); err != nil {
			return c, err
		}
	}
	c.PushBatchMs = float64(time.Since(t0).Microseconds()) / 1e3 / float64(c.GOMAXPROCS)
	return c, nil
}

// ---- the validator helper ("cip11") ----

type validatorHelper struct {
	w    *world
	addr string
	mp   *cquic.MemMempool
	udp  *net.UDPConn // our socket, when rcvbufEnv asks for one

	mu         sync.Mutex
	srv        *cquic.Server
	pushT0     time.Time
	pushWant   int
	pushLat    map[cip11.Hash]time.Duration
	pushKinds  map[string]int
	pushErrs   int
	pushRet    time.Duration // how long the Push call itself took
	pushWindow int           // the window of the last push
	restartAt  time.Time
	admitLat   []time.Duration // admissions since restartAt

	track    atomic.Bool
	drops    atomic.Int64
	admits   atomic.Int64
	storming atomic.Bool
	halfPeak atomic.Int64
	prev     map[cip11.Address]bool
	dropped  []string
}

func newValidatorHelper() (*validatorHelper, error) {
	n, _ := strconv.Atoi(os.Getenv(helperNEnv))
	w, err := newWorld(n)
	if err != nil {
		return nil, err
	}
	h := &validatorHelper{w: w, addr: "127.0.0.1:0", mp: &cquic.MemMempool{}}
	if err := h.start(); err != nil {
		return nil, err
	}
	go h.presenceLoop()
	return h, nil
}

func (h *validatorHelper) config() cquic.ServerConfig {
	return cquic.ServerConfig{
		Key: h.w.vk, ChainID: chainID, Params: h.w.p, Registry: h.w.reg, Validators: h.w.sets,
		TxDecoder: wire.MemTxCodec{}, Mempool: discardMempool{},
		Listen:      h.addr,
		HelloRate:   -1, // every runner here shares 127.0.0.1
		OnOutcome:   h.onOutcome,
		OnAck:       h.onAck,
		OnAdmit:     h.onAdmit,
		MaxHalfOpen: envInt(maxHalfOpenEnv, 0),
		RetryAbove:  envInt(retryAboveEnv, 0),
	}
}

// discardMempool accepts forwarded results without keeping them.
type discardMempool struct{}

func (discardMempool) Submit([]byte, wire.Transaction) error { return nil }

func (h *validatorHelper) start() error {
	cfg := h.config()
	var udp *net.UDPConn
	if n := envInt(rcvbufEnv, 0); n > 0 {
		var err error
		if udp, err = listenUDPAt(h.addr); err != nil {
			return err
		}
		cfg.PacketConn = udp
	}
	s, err := cquic.NewServer(context.Background(), cfg, startHeight)
	if err != nil {
		return err
	}
	h.udp = udp
	if udp != nil { // after quic-go raised it: what an unprivileged host gets
		if err := udp.SetReadBuffer(envInt(rcvbufEnv, 0)); err != nil {
			return err
		}
	}
	h.mu.Lock()
	h.srv = s
	h.addr = s.Addr().String()
	h.mu.Unlock()
	return nil
}

func (h *validatorHelper) server() *cquic.Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.srv
}

func (h *validatorHelper) onAdmit(cip11.Address) {
	h.admits.Add(1)
	if h.storming.Load() {
		h.mu.Lock()
		h.admitLat = append(h.admitLat, time.Since(h.restartAt))
		h.mu.Unlock()
	}
}

func (h *validatorHelper) onOutcome(o cquic.Outcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pushLat == nil {
		return
	}
	k := fmt.Sprint(o.Outcome)
	if o.Ack == nil {
		k += "/no-ack"
	}
	h.pushKinds[k]++
}

// onAck records dispatch → verified JobAck received (ServerConfig.OnAck),
// the push-latency measure.
func (h *validatorHelper) onAck(id cip11.Hash, _ cip11.Address, _ wire.AckStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pushLat == nil {
		return
	}
	if _, seen := h.pushLat[id]; !seen {
		h.pushLat[id] = time.Since(h.pushT0)
	}
}

// checkPresence counts runners that left local presence since the last
// check while tracking is on.
func (h *validatorHelper) checkPresence() int {
	cur := map[cip11.Address]bool{}
	for _, a := range h.server().Present() {
		cur[a] = true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.track.Load() && h.prev != nil {
		for a := range h.prev {
			if !cur[a] {
				h.drops.Add(1)
				if len(h.dropped) < 10 {
					h.dropped = append(h.dropped, a.String())
				}
			}
		}
	}
	h.prev = cur
	return len(cur)
}

func (h *validatorHelper) presenceLoop() {
	for range time.Tick(500 * time.Millisecond) {
		if h.track.Load() {
			h.checkPresence()
		}
	}
}

// halfOpenLoop samples HalfOpen every millisecond while a storm is being
// measured (started by restart; it would cost CPU otherwise).
func (h *validatorHelper) halfOpenLoop() {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for range t.C {
		if !h.storming.Load() {
			return
		}
		if n := int64(h.server().HalfOpen()); n > h.halfPeak.Load() {
			h.halfPeak.Store(n)
		}
	}
}

type validatorStats struct {
	cquic.ServerStats
	Present, HalfOpen int
	Drops, Admits     int64
	Dropped           []string
	Height            uint64
}

func (h *validatorHelper) do(cmd string, args []string) (any, error) {
	arg := func(i int) uint64 {
		if i >= len(args) {
			return 0
		}
		n, _ := strconv.ParseUint(args[i], 10, 64)
		return n
	}
	s := h.server()
	switch cmd {
	case "tick": // tick H: presence check, then Tick
		n := h.checkPresence()
		s.Tick(arg(0))
		return n, nil
	case "track": // track 1|0
		h.mu.Lock()
		h.prev = nil
		h.mu.Unlock()
		h.track.Store(arg(0) == 1)
		h.checkPresence()
		return nil, nil
	case "stats":
		present := h.checkPresence()
		h.mu.Lock()
		d := append([]string(nil), h.dropped...)
		h.mu.Unlock()
		return validatorStats{ServerStats: s.Stats(), Present: present, HalfOpen: s.HalfOpen(),
			Drops: h.drops.Load(), Admits: h.admits.Load(), Dropped: d, Height: s.Height()}, nil
	case "crypto": // crypto N
		return measureCrypto(h.w, int(arg(0)))
	case "push": // push K H [maxInFlight]: assignments for runners 0..K-1 in block H
		window := 0 // signed: -1 is all at once
		if len(args) > 2 {
			w, err := strconv.Atoi(args[2])
			if err != nil {
				return nil, fmt.Errorf("push: window %q: %v", args[2], err)
			}
			window = w
		}
		return nil, h.push(int(arg(0)), arg(1), window)
	case "pushres": // pushres timeoutSeconds
		return h.pushResult(time.Duration(arg(0)) * time.Second), nil
	case "profstart": // profstart PATH: CPU profile of this process until profstop
		if len(args) != 1 {
			return nil, errors.New("profstart: want one path")
		}
		f, err := os.Create(args[0])
		if err != nil {
			return nil, err
		}
		return nil, pprof.StartCPUProfile(f)
	case "profstop":
		pprof.StopCPUProfile()
		return nil, nil
	case "restart":
		return h.restart()
	case "storm": // storm target timeoutSeconds
		return h.stormResult(int(arg(0)), time.Duration(arg(1))*time.Second), nil
	}
	return nil, fmt.Errorf("unknown command %q", cmd)
}

func (h *validatorHelper) push(k int, height uint64, maxInFlight int) error {
	if k > len(h.w.keys) {
		return errors.New("push: more runners than registered")
	}
	as := make([]cquic.Assignment, k)
	for i := range as {
		id, spec := jobFor(height, i)
		as[i] = cquic.Assignment{JobID: id, JobSpec: spec, AssignmentHeight: height, DeadlineBlock: height + 100, Runner: h.w.addr[i]}
	}
	s := h.server()
	s.Tick(height)
	h.mu.Lock()
	h.pushWindow = maxInFlight
	if maxInFlight == 0 {
		h.pushWindow = s.PushWindow()
	}
	h.pushWant, h.pushLat, h.pushKinds, h.pushErrs = k, map[cip11.Hash]time.Duration{}, map[string]int{}, 0
	h.pushT0 = time.Now()
	h.mu.Unlock()
	go func() {
		t0 := time.Now()
		errs := pushWith(s, as, maxInFlight)
		d := time.Since(t0)
		n := 0
		for _, err := range errs {
			if err != nil {
				n++
			}
		}
		h.mu.Lock()
		h.pushErrs, h.pushRet = n, d
		h.mu.Unlock()
	}()
	return nil
}

type pushResult struct {
	latStats
	Window     int // the MaxInFlight in effect: Server.PushWindow for 0, -1 all at once
	Errs       int
	PushCallMs float64
	Kinds      map[string]int
}

func (h *validatorHelper) pushResult(timeout time.Duration) pushResult {
	deadline := time.Now().Add(timeout)
	for {
		h.mu.Lock()
		done := len(h.pushLat)+h.pushErrs >= h.pushWant && h.pushRet > 0
		h.mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ds := make([]time.Duration, 0, len(h.pushLat))
	for _, d := range h.pushLat {
		ds = append(ds, d)
	}
	r := pushResult{latStats: latencies(ds, h.pushWant), Window: h.pushWindow, Errs: h.pushErrs, PushCallMs: float64(h.pushRet.Microseconds()) / 1e3, Kinds: h.pushKinds}
	h.pushLat = nil
	return r
}

// restart closes the server (Goodbye{Shutdown} to every runner) and starts
// a new one on the same address with empty presence (§8.1).
func (h *validatorHelper) restart() (float64, error) {
	old := h.server()
	h.track.Store(false)
	t0 := time.Now()
	_ = old.Close()
	if h.udp != nil {
		_ = h.udp.Close()
	}
	closeMs := float64(time.Since(t0).Microseconds()) / 1e3
	h.halfPeak.Store(0)
	h.mu.Lock()
	h.admitLat = nil
	h.restartAt = time.Now()
	h.mu.Unlock()
	h.storming.Store(true)
	go h.halfOpenLoop()
	var err error
	for range 50 { // the old socket is closed; the port is ours again
		if err = h.start(); err == nil {
			return closeMs, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return closeMs, err
}

type stormResult struct {
	Target, Admissions   int
	T50Ms, T99Ms, T100Ms float64
	HalfOpenPeak         int64
	cquic.ServerStats
}

func (h *validatorHelper) stormResult(target int, timeout time.Duration) stormResult {
	deadline := time.Now().Add(timeout)
	for {
		h.mu.Lock()
		n := len(h.admitLat)
		h.mu.Unlock()
		if n >= target || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.storming.Store(false)
	h.mu.Lock()
	ds := append([]time.Duration(nil), h.admitLat...)
	h.mu.Unlock()
	l := latencies(ds, target)
	return stormResult{Target: target, Admissions: len(ds), T50Ms: l.P50, T99Ms: l.P99, T100Ms: func() float64 {
		if len(ds) < target {
			return -1
		}
		return l.Max
	}(), HalfOpenPeak: h.halfPeak.Load(), ServerStats: h.server().Stats()}
}

// ---- the bare quic-go helper ("bare") ----

// bareHelper is a bare quic-go server: each connection's first stream is
// held open and answers every fixed-size request with a fixed-size reply
// (with the floor's crypto per message when floor is set); "push" opens a
// stream on each connection and waits for an echo.
type bareHelper struct {
	ln    *qgo.Listener
	floor func()
	msgs  atomic.Int64

	mu       sync.Mutex
	conns    []*qgo.Conn // with their stream accepted, in order
	pushT0   time.Time
	pushWant int
	pushLat  []time.Duration
	pushErrs int
}

func newBareHelper() (*bareHelper, error) {
	n, _ := strconv.Atoi(os.Getenv(helperNEnv))
	w, err := newWorld(min(n, 1))
	if err != nil {
		return nil, err
	}
	conf, err := selfSignedTLS()
	if err != nil {
		return nil, err
	}
	udp, err := listenUDPAt("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ln, err := (&qgo.Transport{Conn: udp}).Listen(conf, bareServerQUIC())
	if err != nil {
		return nil, err
	}
	if n := envInt(rcvbufEnv, 0); n > 0 {
		if err := udp.SetReadBuffer(n); err != nil {
			return nil, err
		}
	}
	h := &bareHelper{ln: ln}
	if os.Getenv(floorEnv) == "1" {
		k := w.keys[0]
		d := cip11.Keccak256([]byte("floor digest"))
		sig, err := k.Sign(d)
		if err != nil {
			return nil, err
		}
		h.floor = func() {
			_, _ = wire.RecoverRunner(d, sig)
			_ = w.vk.Sign(d)
		}
	}
	go h.acceptLoop()
	return h, nil
}

// bareServerQUIC mirrors the CIP-11 server's QUIC settings that matter
// for memory and timers.
func bareServerQUIC() *qgo.Config {
	return &qgo.Config{HandshakeIdleTimeout: 10 * time.Second, MaxIdleTimeout: 30 * time.Second, MaxIncomingStreams: 1, MaxIncomingUniStreams: -1}
}

func (h *bareHelper) acceptLoop() {
	for {
		qc, err := h.ln.Accept(context.Background())
		if err != nil {
			return
		}
		go h.serve(qc)
	}
}

func (h *bareHelper) serve(qc *qgo.Conn) {
	st, err := qc.AcceptStream(context.Background())
	if err != nil {
		return
	}
	h.mu.Lock()
	h.conns = append(h.conns, qc)
	h.mu.Unlock()
	req, reply := make([]byte, bareRequestLen), make([]byte, bareReplyLen)
	for {
		if _, err := io.ReadFull(st, req); err != nil {
			return
		}
		if h.floor != nil {
			h.floor()
		}
		if _, err := st.Write(reply); err != nil {
			return
		}
		h.msgs.Add(1)
	}
}

func (h *bareHelper) do(cmd string, args []string) (any, error) {
	arg := func(i int) int {
		if i >= len(args) {
			return 0
		}
		n, _ := strconv.Atoi(args[i])
		return n
	}
	switch cmd {
	case "conns":
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.conns), nil
	case "msgs":
		return h.msgs.Load(), nil
	case "push": // push K assignLen ackLen
		return nil, h.push(arg(0), arg(1), arg(2))
	case "pushres":
		return h.pushResult(time.Duration(arg(0)) * time.Second), nil
	}
	return nil, fmt.Errorf("unknown command %q", cmd)
}

func (h *bareHelper) push(k, reqLen, replyLen int) error {
	h.mu.Lock()
	if k > len(h.conns) {
		h.mu.Unlock()
		return fmt.Errorf("push %d: only %d connections", k, len(h.conns))
	}
	conns := append([]*qgo.Conn(nil), h.conns[:k]...)
	h.pushWant, h.pushLat, h.pushErrs = k, nil, 0
	h.pushT0 = time.Now()
	t0 := h.pushT0
	h.mu.Unlock()
	for _, qc := range conns {
		go func() {
			err := func() error {
				ctx, cancel := context.WithTimeout(qc.Context(), 10*time.Second)
				defer cancel()
				st, err := qc.OpenStreamSync(ctx)
				if err != nil {
					return err
				}
				defer st.CancelRead(0)
				if _, err := st.Write(make([]byte, reqLen)); err != nil {
					return err
				}
				_ = st.SetReadDeadline(time.Now().Add(10 * time.Second))
				_, err = io.ReadFull(st, make([]byte, replyLen))
				_ = st.Close()
				return err
			}()
			d := time.Since(t0)
			h.mu.Lock()
			if err != nil {
				h.pushErrs++
			} else {
				h.pushLat = append(h.pushLat, d)
			}
			h.mu.Unlock()
		}()
	}
	return nil
}

func (h *bareHelper) pushResult(timeout time.Duration) pushResult {
	deadline := time.Now().Add(timeout)
	for {
		h.mu.Lock()
		done := len(h.pushLat)+h.pushErrs >= h.pushWant
		h.mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return pushResult{latStats: latencies(append([]time.Duration(nil), h.pushLat...), h.pushWant), Errs: h.pushErrs}
}

// listenUDPAt binds a UDP socket at addr.
func listenUDPAt(addr string) (*net.UDPConn, error) {
	a, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	return net.ListenUDP("udp", a)
}

// listenUDP is one loopback UDP socket.
func listenUDP() (net.PacketConn, error) { return net.ListenPacket("udp", "127.0.0.1:0") }
