package bench

import (
	"errors"
	"math"

	"github.com/ckpt/ckpt/internal/report"
)

// StageReport is `ckpt bench stage --json`: a StageResult and the
// configuration it ran with. `ckpt model multilevel --alpha-from` and `ckpt
// plan --alpha-from` read it back (StageReport.Alpha).
type StageReport struct {
	RawWrite        report.Float `json:"raw_write_bytes_per_second"`
	StageWriteRatio report.Float `json:"stage_write_ratio"`
	// The limit and the ratio with raw writers that fsync once at the end
	// of each file only: what the two keys above were before issue 17.
	RawWriteFsync        report.Float  `json:"raw_write_fsync_bytes_per_second"`
	StageWriteFsyncRatio report.Float  `json:"stage_write_fsync_ratio"`
	Writers              []WriterPoint `json:"writers"` // Fig. 9
	Servers              []ServerPoint `json:"servers"` // Fig. 10
	Alpha                []AlphaReport `json:"alpha"`   // Fig. 11
	// AlphaSlope is c of α = c·x, per GB/s; nil when a report has none.
	AlphaSlope       *report.Float    `json:"alpha_slope_per_gbps"`
	PaperAlphaSlope  float64          `json:"paper_alpha_slope_per_gbps"`
	AlphaAtPaperRate report.Float     `json:"alpha_at_paper_rate"`
	RawWriters       []RawWriterPoint `json:"raw_writers"`
	HimenoSeconds    report.Float     `json:"himeno_seconds"`
	HimenoIterations int              `json:"himeno_iterations"`
	SizeBytes        int64            `json:"size_bytes"`
	Ranks            int              `json:"ranks"`
	Nodes            int              `json:"nodes"`
	ServerWriters    int              `json:"server_writers"`
}

// WriterPoint is a point of Fig. 9: one staging server with Writers
// writers.
type WriterPoint struct {
	Writers        int          `json:"writers"`
	BytesPerSecond report.Float `json:"bytes_per_second"`
	Ratio          report.Float `json:"ratio"`
}

// ServerPoint is a point of Fig. 10: Servers staging servers together.
type ServerPoint struct {
	Servers        int          `json:"servers"`
	BytesPerSecond report.Float `json:"bytes_per_second"`
	Ratio          report.Float `json:"ratio"`
}

// RawWriterPoint is Writers raw writers' throughput: the best of the
// patterns, each also given.
type RawWriterPoint struct {
	Writers        int          `json:"writers"`
	BytesPerSecond report.Float `json:"bytes_per_second"`
	// Each file fsync'd at its end; writeback started every 8 MiB as well
	// (as the staging server's writer does). Absent from reports written
	// before issue 17.
	Fsync     *report.Float `json:"fsync_bytes_per_second,omitempty"`
	Writeback *report.Float `json:"writeback_bytes_per_second,omitempty"`
	// O_DIRECT, each file fsync'd at its end; null where the file system
	// refuses it. Absent from reports written before it was measured.
	Direct *report.Float `json:"direct_bytes_per_second,omitempty"`
}

// AlphaReport is a point of Fig. 11 (AlphaPoint).
type AlphaReport struct {
	Rate     report.Float `json:"read_rate_bytes_per_second"`
	Measured report.Float `json:"measured_read_bytes_per_second"`
	Alpha    report.Float `json:"alpha"`
	Seconds  report.Float `json:"seconds"`
	Baseline report.Float `json:"baseline_seconds"`
}

// NewStageReport is the report of r, run with cfg.
func NewStageReport(cfg StageConfig, r StageResult) StageReport {
	f := func(x float64) report.Float { return report.Float(x) }
	slope := f(r.AlphaSlope)
	rep := StageReport{RawWrite: f(r.RawWrite), StageWriteRatio: f(r.StageWriteRatio),
		Writers: []WriterPoint{}, Servers: []ServerPoint{}, Alpha: []AlphaReport{}, RawWriters: []RawWriterPoint{},
		RawWriteFsync: f(r.RawWriteFsync), StageWriteFsyncRatio: f(r.StageWriteFsyncRatio),
		AlphaSlope: &slope, PaperAlphaSlope: PaperAlphaSlope, AlphaAtPaperRate: f(r.AlphaAtPaperRate),
		HimenoSeconds: f(r.HimenoSeconds), HimenoIterations: r.HimenoIterations,
		SizeBytes: cfg.Size, Ranks: cfg.Ranks, Nodes: cfg.Nodes, ServerWriters: cfg.ServerWriters}
	for _, p := range r.Writers {
		rep.Writers = append(rep.Writers, WriterPoint{p.N, f(p.BytesPerSecond), f(p.Ratio)})
	}
	for _, p := range r.Servers {
		rep.Servers = append(rep.Servers, ServerPoint{p.N, f(p.BytesPerSecond), f(p.Ratio)})
	}
	for _, p := range r.Alpha {
		rep.Alpha = append(rep.Alpha, AlphaReport{f(p.Rate), f(p.Measured), f(p.Alpha), f(p.Seconds), f(p.Baseline)})
	}
	for i, p := range r.RawWriters {
		pt := RawWriterPoint{Writers: p.N, BytesPerSecond: f(p.BytesPerSecond)}
		if i < len(r.RawFsync) && i < len(r.RawWriteback) {
			fs, wb := f(r.RawFsync[i]), f(r.RawWriteback[i])
			pt.Fsync, pt.Writeback = &fs, &wb
		}
		if i < len(r.RawDirect) {
			d := f(r.RawDirect[i])
			pt.Direct = &d
		}
		rep.RawWriters = append(rep.RawWriters, pt)
	}
	return rep
}

// ErrNoReadRate is StageReport.ReadRate's error for a report without a
// staging throughput.
var ErrNoReadRate = errors.New("no staging throughput in the report")

// ReadRate is x, one staging server's read rate in bytes/s, as the report
// measured it: the aggregate throughput with the most servers over their
// number (as Sato et al. 2012 derive 0.20905 GB/s from their Fig. 10).
func (r StageReport) ReadRate() (float64, error) {
	best := -1
	for i, s := range r.Servers {
		if s.Servers > 0 && s.BytesPerSecond > 0 && (best < 0 || s.Servers > r.Servers[best].Servers) {
			best = i
		}
	}
	if best < 0 {
		return math.NaN(), ErrNoReadRate
	}
	return float64(r.Servers[best].BytesPerSecond) / float64(r.Servers[best].Servers), nil
}

// StageAlpha is α = c·x (Sato et al. 2012, §VI.A): c the fitted slope per
// GB/s, x a staging server's read rate in bytes/s.
func StageAlpha(slope, rate float64) float64 { return slope * rate / 1e9 }
