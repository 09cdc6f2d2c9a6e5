package bench

import (
	"encoding/json"
	"math"
	"testing"
)

// A stage report reads back as it was written: the slope, and one
// server's read rate from the aggregate with the most servers.
func TestStageReportRoundTrip(t *testing.T) {
	r := StageResult{RawWrite: 1e9, StageWriteRatio: 0.9, AlphaSlope: 0.02, AlphaAtPaperRate: math.NaN(),
		Servers: []StagePoint{{N: 1, BytesPerSecond: 5e8, Ratio: 0.5}, {N: 4, BytesPerSecond: 8e8, Ratio: 0.8}}}
	b, err := json.Marshal(NewStageReport(QuickStageConfig(), r))
	if err != nil {
		t.Fatal(err)
	}
	var back StageReport
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.AlphaSlope == nil || *back.AlphaSlope != 0.02 || !math.IsNaN(float64(back.AlphaAtPaperRate)) {
		t.Errorf("read back slope %v, α at the paper's rate %v\n%s", back.AlphaSlope, back.AlphaAtPaperRate, b)
	}
	x, err := back.ReadRate()
	if err != nil || x != 2e8 {
		t.Errorf("ReadRate = %g, %v; want 2e8 (800 MB/s over 4 servers)", x, err)
	}
	if a := StageAlpha(0.02, x); math.Abs(a-0.004) > 1e-15 {
		t.Errorf("α = %g, want 0.004", a)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"writers", "servers", "alpha", "raw_writers"} {
		if _, ok := m[k].([]any); !ok {
			t.Errorf("%s: %v, want a list (empty, not null)", k, m[k])
		}
	}
	if _, err := (StageReport{}).ReadRate(); err != ErrNoReadRate {
		t.Errorf("no servers: %v", err)
	}
}
