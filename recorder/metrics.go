package recorder

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the recorder's Prometheus series. Per-connection series carry
// a "conn" label (the slot number); children are resolved once per slot so
// the per-frame path only does atomic adds.
type metrics struct {
	frames      *prometheus.CounterVec
	bytes       *prometheus.CounterVec
	reconnects  *prometheus.CounterVec
	stalls      *prometheus.CounterVec
	drops       *prometheus.CounterVec
	recvLag     *prometheus.GaugeVec
	queueDepth  prometheus.Gauge
	queueBytes  prometheus.Gauge
	writeErrors prometheus.Counter
	diskLag     prometheus.Histogram
	connected   *prometheus.GaugeVec
	restBooks   *prometheus.CounterVec
	restBookErr *prometheus.CounterVec
	subsRemoved *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, venueName string) (*metrics, error) {
	labels := prometheus.Labels{"venue": venueName}
	cv := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tapedeck", Subsystem: "capture",
			Name: name, Help: help, ConstLabels: labels}, []string{"conn"})
	}
	m := &metrics{
		frames:     cv("frames_total", "Frames received and queued for the dataset."),
		bytes:      cv("frame_bytes_total", "Payload bytes of frames received and queued."),
		reconnects: cv("reconnects_total", "Reconnect attempts."),
		stalls:     cv("stalls_total", "Silent stalls detected by the watchdog."),
		drops:      cv("dropped_frames_total", "Frames dropped because the writer queue was full (each reported by an overload record)."),
		recvLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tapedeck", Subsystem: "capture",
			Name: "receive_lag_seconds", Help: "Receive time minus the venue's timestamp of the last frame that carried one.",
			ConstLabels: labels}, []string{"conn"}),
		restBooks:   cv("rest_book_responses_total", "Polymarket REST book-summary bodies stored before a connect."),
		restBookErr: cv("rest_book_errors_total", "Failed Polymarket REST book-summary requests (each recorded as a note; the connection goes ahead)."),
		subsRemoved: cv("subscriptions_removed_total", "Subscriptions removed as suspects of killing their connection (each a gap record; retried with backoff)."),
		connected: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tapedeck", Subsystem: "capture",
			Name: "connected", Help: "1 while the connection slot is open and subscribed.",
			ConstLabels: labels}, []string{"conn"}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tapedeck", Subsystem: "capture",
			Name: "queue_depth", Help: "Records waiting for the dataset writer.", ConstLabels: labels}),
		queueBytes: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tapedeck", Subsystem: "capture",
			Name: "queue_bytes", Help: "Payload bytes waiting for the dataset writer.", ConstLabels: labels}),
		writeErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tapedeck", Subsystem: "capture",
			Name: "write_errors_total", Help: "Failed dataset writes or flushes (retried).", ConstLabels: labels}),
		diskLag: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "tapedeck", Subsystem: "capture",
			Name: "read_to_disk_seconds", Help: "Time from socket read to the flush that wrote the frame.",
			ConstLabels: labels, Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
	}
	for _, c := range []prometheus.Collector{m.frames, m.bytes, m.reconnects, m.stalls, m.drops,
		m.recvLag, m.connected, m.restBooks, m.restBookErr, m.subsRemoved, m.queueDepth, m.queueBytes, m.writeErrors, m.diskLag} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// connMetrics are one slot's resolved children.
type connMetrics struct {
	frames, bytes, reconnects, stalls, drops prometheus.Counter
	restBooks, restBookErr, subsRemoved      prometheus.Counter
	recvLag, connected                       prometheus.Gauge
}

func (m *metrics) conn(id uint32) connMetrics {
	l := strconv.FormatUint(uint64(id), 10)
	return connMetrics{
		frames: m.frames.WithLabelValues(l), bytes: m.bytes.WithLabelValues(l),
		reconnects: m.reconnects.WithLabelValues(l), stalls: m.stalls.WithLabelValues(l),
		drops: m.drops.WithLabelValues(l), recvLag: m.recvLag.WithLabelValues(l),
		connected: m.connected.WithLabelValues(l),
		restBooks: m.restBooks.WithLabelValues(l), restBookErr: m.restBookErr.WithLabelValues(l),
		subsRemoved: m.subsRemoved.WithLabelValues(l),
	}
}
