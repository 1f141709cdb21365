package quic

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"net"
	"sort"
	"testing"
	"time"

	qgo "github.com/quic-go/quic-go"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

const testChain = 7

// fixture is one chain: a registry, a validator-set snapshot, servers and
// the runners' keys. Heights start at startHeight.
type fixture struct {
	t        *testing.T
	p        cip11.Params
	reg      *state.MemRegistry
	vkeys    []*wire.ValidatorKey // canonical (ascending raw key) order
	snap     *validators.Snapshot
	sets     *StaticValidatorSets
	dir      *StaticDirectory
	servers  []*Server
	mempools []*MemMempool
	outcomes chan Outcome
}

const startHeight = 10

func seed(s string) [32]byte { return cip11.Keccak256([]byte(s)) }

func runnerKey(t testing.TB, i int) *wire.RunnerKey {
	k, err := wire.NewRunnerKey(seed(fmt.Sprintf("runner %d", i)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func validatorKeys(n int, tag string) []*wire.ValidatorKey {
	ks := make([]*wire.ValidatorKey, n)
	for i := range ks {
		ks[i] = wire.NewValidatorKey(seed(fmt.Sprintf("validator %s %d", tag, i)))
	}
	sort.Slice(ks, func(i, j int) bool { return bytes.Compare(ks[i].PubKey().Raw(), ks[j].PubKey().Raw()) < 0 })
	return ks
}

func snapshotOf(t testing.TB, epoch uint64, ks []*wire.ValidatorKey, activation uint64) *validators.Snapshot {
	recs := make([]validators.Record, len(ks))
	for i, k := range ks {
		recs[i] = validators.Record{PeerPubKey: validators.PeerKey(k.PubKey().Raw()), Stake: cip11.U128From64(1)}
	}
	s, err := validators.NewSnapshot(epoch, recs, activation)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testParams() cip11.Params {
	p := cip11.DefaultParams()
	p.TransportEnabled = true
	return p
}

func newFixture(t *testing.T, nValidators int, runners ...*wire.RunnerKey) *fixture {
	t.Helper()
	f := &fixture{t: t, p: testParams(), reg: state.NewMemRegistry(state.DefaultReputationConfig()),
		dir: &StaticDirectory{}, outcomes: make(chan Outcome, 256)}
	f.vkeys = validatorKeys(nValidators, "A")
	f.snap = snapshotOf(t, 0, f.vkeys, 0)
	e, err := validators.NewEpochs(nil, f.snap)
	if err != nil {
		t.Fatal(err)
	}
	f.sets = NewStaticValidatorSets(e)
	for _, r := range runners {
		f.register(r, state.Healthy)
	}
	return f
}

func (f *fixture) register(k *wire.RunnerKey, h state.Health) {
	f.t.Helper()
	r := state.Runner{Address: k.Address(), Health: h, LastHeartbeat: 1, Stake: cip11.U128From64(1), ReputationX1e9: 1e9}
	var err error
	if _, ok := f.reg.Latest(k.Address()); ok {
		err = f.reg.Update(1, r)
	} else {
		err = f.reg.Register(1, r)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) serverConfig(i int) ServerConfig {
	mp := &MemMempool{}
	f.mempools = append(f.mempools, mp)
	return ServerConfig{
		Key: f.vkeys[i], ChainID: testChain, Params: f.p, Registry: f.reg, Validators: f.sets,
		TxDecoder: wire.MemTxCodec{}, TxValidator: wire.MemTxCodec{}, Mempool: mp,
		OnOutcome:        func(o Outcome) { f.outcomes <- o },
		HandshakeTimeout: 3 * time.Second, IdleTimeout: 5 * time.Second, GoodbyeLinger: 200 * time.Millisecond,
	}
}

// startServer starts validator i; mutate may adjust its config.
func (f *fixture) startServer(i int, mutate func(*ServerConfig)) *Server {
	f.t.Helper()
	cfg := f.serverConfig(i)
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := NewServer(context.Background(), cfg, startHeight)
	if err != nil {
		f.t.Fatal(err)
	}
	f.dir.Put(s.PeerKey(), s.Addr())
	f.servers = append(f.servers, s)
	f.t.Cleanup(func() { _ = s.Close() })
	return s
}

func (f *fixture) clientConfig(k *wire.RunnerKey, ex Executor) ClientConfig {
	if ex == nil {
		ex = resultExecutor(k, false, 0)
	}
	return ClientConfig{
		Key: k, ChainID: testChain, Params: f.p, Validators: f.sets, Directory: f.dir, Executor: ex,
		HandshakeTimeout: 3 * time.Second, IdleTimeout: 5 * time.Second, KeepAlive: time.Second, GoodbyeLinger: 200 * time.Millisecond,
	}
}

func (f *fixture) startClient(k *wire.RunnerKey, ex Executor, mutate func(*ClientConfig)) *Client {
	f.t.Helper()
	cfg := f.clientConfig(k, ex)
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := NewClient(context.Background(), cfg, startHeight)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = c.Close() })
	return c
}

// tick moves every server and the given clients to h.
func (f *fixture) tick(h uint64, clients ...*Client) {
	for _, s := range f.servers {
		s.Tick(h)
	}
	for _, c := range clients {
		c.Tick(h)
	}
}

// resultExecutor returns MemTx results signed by k's address: a commit
// when multi, and a reveal whose window opens at revealOpens.
func resultExecutor(k *wire.RunnerKey, multi bool, revealOpens uint64) ExecutorFunc {
	return func(_ context.Context, j *Job) (Result, error) {
		r := Result{Reveal: memTx(k, wire.InstructionJobResultSubmit, j.Assignment.JobID), RevealOpens: revealOpens}
		if multi {
			r.Commit = memTx(k, wire.InstructionJobResultCommit, j.Assignment.JobID)
		}
		return r, nil
	}
}

func memTx(k *wire.RunnerKey, kind wire.InstructionKind, job cip11.Hash) []byte {
	t := &wire.MemTx{From: k.Address(), Kind: kind, JobID: job, Valid: true}
	return t.Bytes()
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fixture) waitOutcome(jobID cip11.Hash) Outcome {
	f.t.Helper()
	select {
	case o := <-f.outcomes:
		if o.JobID != jobID {
			f.t.Fatalf("outcome for job %s, want %s", o.JobID, jobID)
		}
		return o
	case <-time.After(10 * time.Second):
		f.t.Fatal("no outcome")
	}
	return Outcome{}
}

func (f *fixture) noOutcome(d time.Duration) {
	f.t.Helper()
	select {
	case o := <-f.outcomes:
		f.t.Fatalf("unexpected outcome %+v", o)
	case <-time.After(d):
	}
}

// ---- a raw runner that can misbehave ----

// rawConn is a runner-side QUIC connection driven frame by frame.
type rawConn struct {
	t       testing.TB
	tr      *qgo.Transport
	qc      *qgo.Conn
	ctl     *frameStream
	binding cip11.Hash
	sess    *wire.Session
	key     *wire.RunnerKey
	hello   *wire.Hello
	peer    *wire.Hello
	pending *wire.Goodbye // a Goodbye read where a pong was expected
}

// rawTransport is one UDP socket for several raw connections.
func rawTransport(t testing.TB) *qgo.Transport {
	t.Helper()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &qgo.Transport{Conn: udp}
	t.Cleanup(func() { _ = tr.Close(); _ = udp.Close() })
	return tr
}

func rawDial(t testing.TB, tr *qgo.Transport, s *Server, k *wire.RunnerKey) *rawConn {
	t.Helper()
	return rawDialConfig(t, tr, s, k, &qgo.Config{MaxIdleTimeout: 5 * time.Second, MaxIncomingStreams: 100})
}

// rawDialConfig dials s with the QUIC config c and opens the control stream.
func rawDialConfig(t testing.TB, tr *qgo.Transport, s *Server, k *wire.RunnerKey, c *qgo.Config) *rawConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	qc, err := tr.Dial(ctx, s.Addr(), clientTLS(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = qc.CloseWithError(0, "") })
	b, err := ChannelBinding(qc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := qc.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return &rawConn{t: t, tr: tr, qc: qc, ctl: newFrameStream(st, 1<<21, 1<<21), binding: b, key: k}
}

// helloFor is the Hello an honest runner would send under pair.
func helloFor(k *wire.RunnerKey, pair wire.EpochPair) *wire.Hello {
	h := &wire.Hello{Version: wire.Version, ChainID: testChain, ValidatorSetHash: pair.ValidatorSetHash, SubsetEpoch: pair.SubsetEpoch,
		PartyPubKey: k.PubKey(), PartyRole: wire.RoleRunner, BlockHeight: startHeight}
	_, _ = crand.Read(h.ChallengeNonce[:])
	return h
}

// sendHello writes hello and reads the validator's answer: its Hello (and
// HelloAck, verified) or a Goodbye.
func (r *rawConn) sendHello(hello *wire.Hello) (*wire.Goodbye, error) {
	r.hello = hello
	if err := r.ctl.write(hello); err != nil {
		return nil, err
	}
	fr, err := r.ctl.readBy(time.Now().Add(5 * time.Second))
	if err != nil {
		return nil, err
	}
	switch fr := fr.(type) {
	case *wire.Goodbye:
		return fr, nil
	case *wire.Hello:
		r.peer = fr
	default:
		return nil, fmt.Errorf("got %s", fr.Type())
	}
	fr, err = r.ctl.readBy(time.Now().Add(5 * time.Second))
	if err != nil {
		return nil, err
	}
	ack, ok := fr.(*wire.HelloAck)
	if !ok {
		return nil, fmt.Errorf("got %s, want HelloAck", fr.Type())
	}
	if err := ack.Verify(r.hello, r.binding); err != nil {
		return nil, err
	}
	return nil, nil
}

// sendAck signs our HelloAck over binding (normally r.binding).
func (r *rawConn) sendAck(binding cip11.Hash) error {
	ack := ackFor(r.hello)
	if err := ack.Sign(r.peer, binding, r.key); err != nil {
		return err
	}
	if err := r.ctl.write(ack); err != nil {
		return err
	}
	var err error
	r.sess, err = wire.SessionFor(r.hello, r.peer, r.binding)
	return err
}

// handshake runs an honest handshake and waits for the first pong.
func (r *rawConn) handshake(pair wire.EpochPair) {
	r.t.Helper()
	g, err := r.sendHello(helloFor(r.key, pair))
	if err != nil || g != nil {
		r.t.Fatalf("hello: %v %+v", err, g)
	}
	if err := r.sendAck(r.binding); err != nil {
		r.t.Fatal(err)
	}
	if p := r.ping(0, startHeight); p == nil {
		r.t.Fatal("no pong to the first ping")
	}
}

// ping sends a signed ping and returns the pong (nil on Goodbye/close).
func (r *rawConn) ping(nonce, h uint64) *wire.HeartbeatPong {
	p := &wire.HeartbeatPing{BlockHeight: h, Nonce: nonce}
	if err := p.Sign(r.sess, r.key); err != nil {
		r.t.Fatal(err)
	}
	return r.sendPing(p)
}

func (r *rawConn) sendPing(p *wire.HeartbeatPing) *wire.HeartbeatPong {
	if err := r.ctl.write(p); err != nil {
		return nil
	}
	fr, err := r.ctl.readBy(time.Now().Add(5 * time.Second))
	if err != nil {
		return nil
	}
	if g, ok := fr.(*wire.Goodbye); ok {
		r.pending = g
	}
	pong, _ := fr.(*wire.HeartbeatPong)
	return pong
}

// expectGoodbye reads control frames until a Goodbye and returns it.
func (r *rawConn) expectGoodbye() *wire.Goodbye {
	r.t.Helper()
	if g := r.pending; g != nil {
		r.pending = nil
		return g
	}
	for {
		fr, err := r.ctl.readBy(time.Now().Add(5 * time.Second))
		if err != nil {
			r.t.Fatalf("waiting for Goodbye: %v", err)
		}
		if g, ok := fr.(*wire.Goodbye); ok {
			return g
		}
	}
}

// waitClosed waits until the server closed the connection.
func (r *rawConn) waitClosed() {
	r.t.Helper()
	select {
	case <-r.qc.Context().Done():
	case <-time.After(5 * time.Second):
		r.t.Fatal("connection not closed")
	}
}

// acceptJob accepts the next validator-initiated job stream.
func (r *rawConn) acceptJob() (*frameStream, *wire.JobAssignment) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := r.qc.AcceptStream(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	fs := newFrameStream(st, 1<<21, 1<<21)
	fr, err := fs.readBy(time.Now().Add(5 * time.Second))
	if err != nil {
		r.t.Fatal(err)
	}
	a, ok := fr.(*wire.JobAssignment)
	if !ok {
		r.t.Fatalf("got %s", fr.Type())
	}
	return fs, a
}

func (r *rawConn) ack(fs *frameStream, a *wire.JobAssignment, st wire.AckStatus) {
	r.t.Helper()
	ack := &wire.JobAck{JobID: a.JobID, AssignmentHash: a.AssignmentHash, Status: st}
	if err := ack.Sign(r.sess, r.key); err != nil {
		r.t.Fatal(err)
	}
	if err := fs.write(ack); err != nil {
		r.t.Fatal(err)
	}
}

func isGoodbye(g *wire.Goodbye, reason wire.GoodbyeReason) error {
	if g == nil {
		return errors.New("no Goodbye")
	}
	if g.Reason != reason {
		return fmt.Errorf("Goodbye{%s}, want %s", g.Reason, reason)
	}
	return nil
}

// job returns a test job spec and id.
func testJob(name string) (cip11.Hash, []byte) {
	return cip11.Keccak256([]byte("job " + name)), []byte("job spec " + name)
}

func nowPlus(d time.Duration) time.Time { return time.Now().Add(d) }
