package cometbft

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	cmtcfg "github.com/cometbft/cometbft/config"
	"github.com/cometbft/cometbft/libs/metrics"
	kitprom "github.com/cometbft/cometbft/libs/metrics/prometheus"
	cmtnode "github.com/cometbft/cometbft/node"
	"github.com/prometheus/client_golang/prometheus"
)

// CometNamespace is the namespace of CometBFT's own series on the node's
// registry (NodeConfig.Registerer): cometbft_consensus_height,
// cometbft_p2p_peers, cometbft_mempool_size, … with CometBFT's names and
// label sets (a chain_id label first), beside the cip11_ series. A series
// labelled by chain_id alone is there from the first scrape.
const CometNamespace = "cometbft"

// ErrCometMetrics: one of CometBFT's series could not be built or
// registered; it stays a no-op (StartNode logs it and goes on).
var ErrCometMetrics = errors.New("cometbft: CometBFT metrics")

// cometMetrics puts CometBFT's per-subsystem metrics on a registry of the
// node's own instead of the process-global one CometBFT's
// PrometheusMetrics constructors register on (and panic on twice), so
// that several nodes of one process and the cip11_ series share nothing
// global. CometBFT's Metrics structs (consensus's is internal to it) are
// filled by reflection from their exported metrics.Counter, Gauge and
// Histogram fields and the tags CometBFT's metricsgen reads
// (metrics_name, metrics_labels, metrics_buckettype, metrics_bucketsizes).
type cometMetrics struct {
	reg prometheus.Registerer

	mu         sync.Mutex
	registered []prometheus.Collector
	errs       []error
}

func newCometMetrics(reg prometheus.Registerer) *cometMetrics { return &cometMetrics{reg: reg} }

// provider is CometBFT's metrics provider: its no-op metrics, each field
// replaced by a series on m.reg.
func (m *cometMetrics) provider() cmtnode.MetricsProvider {
	nop := cmtnode.DefaultMetricsProvider(&cmtcfg.InstrumentationConfig{Prometheus: false})
	fn := reflect.ValueOf(nop)
	return reflect.MakeFunc(fn.Type(), func(args []reflect.Value) []reflect.Value {
		outs := fn.Call(args)
		for _, o := range outs {
			m.fill(o, args[0].String())
		}
		return outs
	}).Interface().(cmtnode.MetricsProvider)
}

var (
	counterType   = reflect.TypeFor[metrics.Counter]()
	gaugeType     = reflect.TypeFor[metrics.Gauge]()
	histogramType = reflect.TypeFor[metrics.Histogram]()
	capitalChange = regexp.MustCompile("([a-z0-9])([A-Z])") // metricsgen's snake case
)

// subsystems are CometBFT's MetricsSubsystem constants by package.
var subsystems = map[string]string{"proxy": "abci_connection"}

// fill replaces the metric fields of *o, a CometBFT Metrics struct.
func (m *cometMetrics) fill(o reflect.Value, chainID string) {
	if o.Kind() != reflect.Pointer || o.IsNil() || o.Elem().Kind() != reflect.Struct {
		return
	}
	s := o.Elem()
	st := s.Type()
	pkg := st.PkgPath()
	sub := pkg[strings.LastIndex(pkg, "/")+1:]
	if x, ok := subsystems[sub]; ok {
		sub = x
	}
	for i := range st.NumField() {
		f := st.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Tag.Get("metrics_name")
		if name == "" {
			name = strings.ToLower(capitalChange.ReplaceAllString(f.Name, "${1}_${2}"))
		}
		labels := []string{"chain_id"}
		if l := f.Tag.Get("metrics_labels"); l != "" {
			for _, x := range strings.Split(l, ",") {
				labels = append(labels, strings.TrimSpace(x))
			}
		}
		help := fmt.Sprintf("CometBFT %s %s (github.com/cometbft/cometbft %s.Metrics.%s).", sub, name, sub, f.Name)
		var c prometheus.Collector
		var v any
		switch f.Type {
		case counterType:
			cv := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: CometNamespace, Subsystem: sub, Name: name, Help: help}, labels)
			c, v = cv, kitprom.NewCounter(cv).With("chain_id", chainID)
			if len(labels) == 1 {
				cv.WithLabelValues(chainID) // present from the first scrape
			}
		case gaugeType:
			gv := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: CometNamespace, Subsystem: sub, Name: name, Help: help}, labels)
			c, v = gv, kitprom.NewGauge(gv).With("chain_id", chainID)
			if len(labels) == 1 {
				gv.WithLabelValues(chainID)
			}
		case histogramType:
			b, err := buckets(f.Tag)
			if err != nil {
				m.fail(fmt.Errorf("%w: %s_%s: %w", ErrCometMetrics, sub, name, err))
				continue
			}
			hv := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: CometNamespace, Subsystem: sub, Name: name, Help: help, Buckets: b}, labels)
			c, v = hv, kitprom.NewHistogram(hv).With("chain_id", chainID)
			if len(labels) == 1 {
				hv.WithLabelValues(chainID)
			}
		default:
			continue
		}
		if err := m.reg.Register(c); err != nil {
			m.fail(fmt.Errorf("%w: %s_%s: %w", ErrCometMetrics, sub, name, err))
			continue // the no-op stays
		}
		m.mu.Lock()
		m.registered = append(m.registered, c)
		m.mu.Unlock()
		s.Field(i).Set(reflect.ValueOf(v))
	}
}

func (m *cometMetrics) fail(err error) {
	m.mu.Lock()
	m.errs = append(m.errs, err)
	m.mu.Unlock()
}

// err is the joined build and registration failures.
func (m *cometMetrics) err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return errors.Join(m.errs...)
}

// unregister removes every series fill registered.
func (m *cometMetrics) unregister() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.registered {
		m.reg.Unregister(c)
	}
	m.registered = nil
}

// buckets reads metricsgen's bucket tags: explicit bounds, or three
// numbers for prometheus.ExponentialBucketsRange ("exprange"),
// ExponentialBuckets ("exp") or LinearBuckets ("lin"); none: the default
// buckets. Arguments those constructors would panic on are an error.
func buckets(tag reflect.StructTag) ([]float64, error) {
	sizes := tag.Get("metrics_bucketsizes")
	if sizes == "" {
		return nil, nil
	}
	var xs []float64
	for _, p := range strings.Split(sizes, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return nil, fmt.Errorf("bucket size %q: %w", p, err)
		}
		xs = append(xs, x)
	}
	kind := tag.Get("metrics_buckettype")
	if kind == "" {
		return xs, nil
	}
	if len(xs) != 3 || xs[2] < 1 || xs[2] != float64(int(xs[2])) {
		return nil, fmt.Errorf("%s buckets %v: want two bounds and a count", kind, xs)
	}
	n := int(xs[2])
	switch {
	case kind == "exprange" && xs[0] > 0 && xs[1] > 0:
		return prometheus.ExponentialBucketsRange(xs[0], xs[1], n), nil
	case kind == "exp" && xs[0] > 0 && xs[1] > 1:
		return prometheus.ExponentialBuckets(xs[0], xs[1], n), nil
	case kind == "lin":
		return prometheus.LinearBuckets(xs[0], xs[1], n), nil
	}
	return nil, fmt.Errorf("%s buckets %v", kind, xs)
}

// The presence gossip's series (§8.2), read from GossipStats at scrape
// time; registered with CometBFT's when NodeConfig.Registerer is set and
// gossip is on.
const (
	MetricGossipViews        = "cip11_gossip_views_total"
	MetricGossipViewsDropped = "cip11_gossip_views_dropped_total"
	MetricGossipPeersDropped = "cip11_gossip_peers_dropped_total"
	MetricGossipBytesSent    = "cip11_gossip_bytes_sent_total"
)

// gossipCollector exports a reactor's GossipStats at scrape time
// (collectors.NewDBStatsCollector's pattern).
type gossipCollector struct {
	r                                    *presenceReactor
	views, viewsDropped, peers, bytesOut *prometheus.Desc
}

func newGossipCollector(r *presenceReactor) *gossipCollector {
	return &gossipCollector{r: r,
		views:        prometheus.NewDesc(MetricGossipViews, "Presence gossip views sent to and received from peers (§8.2), by direction.", []string{"direction"}, nil),
		viewsDropped: prometheus.NewDesc(MetricGossipViewsDropped, "Well-formed presence gossip views not stored, by reason (not_validator, future, stale, excess).", []string{"reason"}, nil),
		peers:        prometheus.NewDesc(MetricGossipPeersDropped, "Peers disconnected for a malformed presence gossip message.", nil, nil),
		bytesOut:     prometheus.NewDesc(MetricGossipBytesSent, "Presence gossip bytes sent.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *gossipCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.views
	ch <- c.viewsDropped
	ch <- c.peers
	ch <- c.bytesOut
}

// Collect implements prometheus.Collector.
func (c *gossipCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.r.stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(c.views, st.Sent, "sent")
	counter(c.views, st.Received, "received")
	counter(c.viewsDropped, st.NotValidator, "not_validator")
	counter(c.viewsDropped, st.Future, "future")
	counter(c.viewsDropped, st.Stale, "stale")
	counter(c.viewsDropped, st.Excess, "excess")
	counter(c.peers, st.Dropped)
	counter(c.bytesOut, st.BytesSent)
}
