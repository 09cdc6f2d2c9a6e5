package launch

import (
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/policy"
)

// The environment of a job's ranks: what `ckpt run` has always given them.
func TestJobEnv(t *testing.T) {
	iv, err := policy.Parse("auto")
	if err != nil {
		t.Fatal(err)
	}
	j := Job{Ranks: 4, Nodes: 2, Program: "prog", Interval: iv, Redundancy: "xor:2", Shared: "/shared",
		FlushEvery: policy.FlushEvery{K: 2}, Durability: "process", Compress: "auto", SharedBandwidth: 4e8,
		StagingServers: 2, StageArgs: []string{"--writers", "4"}, FlushBusy: "wait"}
	got := strings.Join(j.Env().Encode(), " ")
	want := "CKPT_CACHE_DURABILITY=process CKPT_COMPRESS=auto CKPT_REDUNDANCY=xor:2 CKPT_SHARED=/shared CKPT_SHARED_BANDWIDTH=1e+08B/s CKPT_INTERVAL=auto CKPT_FLUSH_EVERY=2"
	if got != want {
		t.Errorf("env\n got %s\nwant %s", got, want)
	}
	if e := (Job{Ranks: 1}).Env(); strings.Join(e.Encode(), " ") != "CKPT_INTERVAL=none" {
		t.Errorf("a bare job's env: %v", e.Encode())
	}
	cfg, coords, err := j.Config("/cache")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Ranks != 4 || cfg.Nodes != 2 || cfg.CacheRoot != "/cache" || cfg.NewCoordinator == nil || coords.Policy != iv {
		t.Errorf("config %+v", cfg)
	}
	sc := j.StagingConfig("/bin/ckpt", "/cache", "tok", nil, nil)
	if want := []string{"stage", "--shared", "/shared", "--shared-bandwidth", "2e+08B/s", "--writers", "4"}; !slices.Equal(sc.Args, want) ||
		sc.Servers != 2 || sc.Dir != "/cache/staging" || sc.Token != "tok" {
		t.Errorf("staging config %+v", sc)
	}
	st := &Staging{}
	j.UseStaging(&cfg, st, "tok")
	if cfg.Job.StageToken != "tok" || cfg.Job.FlushBusy != jobenv.FlushWait {
		t.Errorf("with staging: %+v", cfg.Job)
	}
}

func TestReportRestarts(t *testing.T) {
	r := Report{Attempts: []Attempt{{Restored: "none"}, {Restored: "cache"}, {Restored: "cache"}, {Restored: "none"}}}
	if got := r.Restarts(); len(got) != 2 || got["cache"] != 2 || got["none"] != 1 {
		t.Errorf("restarts %v", got)
	}
	if got := (Report{}).Restarts(); len(got) != 0 {
		t.Errorf("no attempts: %v", got)
	}
}

func TestJobCheckRedundancy(t *testing.T) {
	for _, c := range []struct {
		j    Job
		want string // "" fits
	}{
		{Job{Ranks: 8, Nodes: 4}, ""},
		{Job{Ranks: 8, Nodes: 4, Redundancy: "xor:4"}, ""},
		{Job{Ranks: 8, Nodes: 4, Redundancy: "partner"}, ""},
		{Job{Ranks: 8, Nodes: 2, Redundancy: "xor:4"}, "--redundancy xor:4: "},
		{Job{Ranks: 8, Nodes: 8, Redundancy: "raid6"}, "--redundancy: "},
	} {
		err := c.j.CheckRedundancy()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.j, err, c.want)
		}
	}
}
