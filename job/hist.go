package job

import "math/bits"

// histSub is the number of linear sub-buckets per power of two: values are
// kept to within 1/histSub (1.6 %) of their true value.
const histSub = 64

// Histogram is a fixed-size, log-linear histogram of non-negative integers
// (microseconds, blocks): values below 2·histSub are exact, larger ones are
// kept to within 1/histSub. Its memory never grows with the number of
// samples, so a validator that runs for weeks keeps latency quantiles in a
// few kilobytes. The zero value is empty and ready to use.
type Histogram struct {
	counts [64 * histSub]uint64
	n      uint64
	max    uint64
}

func histIndex(v uint64) int {
	if v < 2*histSub {
		return int(v)
	}
	e := bits.Len64(v) - 7 // v >> e is in [64, 128)
	return (e+1)*histSub + int(v>>uint(e)) - histSub
}

// histValue is the smallest value of bucket i.
func histValue(i int) uint64 {
	if i < 2*histSub {
		return uint64(i)
	}
	e := i/histSub - 1
	m := uint64(i%histSub + histSub)
	return m << uint(e)
}

// Add records one value.
func (h *Histogram) Add(v uint64) {
	h.counts[histIndex(v)]++
	h.n++
	h.max = max(h.max, v)
}

// Merge adds every sample of o.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// Count is the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Quantile returns the value at quantile q/1000 (nearest rank, integer
// arithmetic): the lower bound of the bucket holding that rank, or the
// largest sample for q ≥ 1000. An empty histogram returns 0.
func (h *Histogram) Quantile(perMille uint64) uint64 {
	if h.n == 0 {
		return 0
	}
	if perMille >= 1000 {
		return h.max
	}
	rank := h.n * perMille / 1000 // 0-based rank of the sample
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > rank {
			return min(histValue(i), h.max)
		}
	}
	return h.max
}
