package launch

import (
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/inject"
	"github.com/ckpt/ckpt/internal/resource"
)

// okOptions are ckpt run's defaults for a job of 4 ranks.
func okOptions() Options {
	return Options{Ranks: 4, Program: "prog", Interval: "auto", FlushEvery: "1", Retries: DefaultRetries,
		InjectDist: "exp", InjectKind: "rank", Seed: 1, StageWriters: 4, FlushBusy: "skip",
		Have: resource.Have{Procs: resource.Unknown, FDs: resource.Unknown, Memory: resource.Unknown}, CPUs: 2}
}

func given(names ...string) func(string) bool {
	return func(n string) bool {
		for _, g := range names {
			if g == n {
				return true
			}
		}
		return false
	}
}

func TestOptionsJob(t *testing.T) {
	o := okOptions()
	o.Nodes, o.Shared, o.StagingServers, o.FlushBusy = 2, "/shared", 2, "wait"
	o.StageRate, o.SharedBandwidth, o.Heartbeat, o.JoinTimeout, o.InjectMTTI = 2e8, 1e9, 0.5, 90, 3
	o.InjectKind = "node"
	o.Given = given("stage-rate", "shared-bandwidth", "heartbeat-timeout", "join-timeout", "inject-mtti")
	j, err := o.Job()
	if err != nil {
		t.Fatal(err)
	}
	if j.Nodes != 2 || j.Heartbeat != 500*time.Millisecond || j.JoinTimeout != 90*time.Second ||
		j.Inject == nil || j.Inject.Kind != inject.Node || j.FlushBusy != "wait" || j.SharedBandwidth != 1e9 {
		t.Errorf("job %+v", j)
	}
	if got := strings.Join(j.StageArgs, " "); got != "--writers 4 --rate 2e+08B/s" {
		t.Errorf("stage args %q", got)
	}
	d, err := okOptions().Job()
	if err != nil {
		t.Fatal(err)
	}
	if d.Nodes != 4 || d.Heartbeat != DefaultHeartbeat || d.JoinTimeout != JoinAllowance(4, 2) || d.Inject != nil || d.StageArgs != nil {
		t.Errorf("defaults: %+v", d)
	}
}

// Every bad value is refused with a message naming the flag and the value.
func TestOptionsErrors(t *testing.T) {
	for _, c := range []struct {
		mod  func(*Options)
		want string
	}{
		{func(o *Options) { o.Ranks = 0 }, "-n 0: need at least one rank"},
		{func(o *Options) { o.Nodes = 5 }, "--nodes 5: need 1 to 4 (the number of ranks)"},
		{func(o *Options) { o.Nodes = -1 }, "--nodes -1: need 1 to 4"},
		{func(o *Options) {
			o.Have.Procs = resource.Limit{Avail: 3, From: "RLIMIT_NPROC"}
		}, "-n 4: the job needs 4 processes, 3 available"},
		{func(o *Options) {
			o.Have.FDs = resource.Limit{Avail: 10, From: "RLIMIT_NOFILE"}
		}, "-n 4: the launcher needs 76 file descriptors, 10 available"},
		{func(o *Options) { o.JoinTimeout, o.Given = 0, given("join-timeout") }, "--join-timeout 0s: need a positive duration"},
		{func(o *Options) { o.Redundancy = "raid6" }, "--redundancy: "},
		{func(o *Options) { o.Durability = "disk" }, `--cache-durability: cache durability "disk": want node`},
		{func(o *Options) { o.Compress = "zstd" }, `--compress: compression "zstd": want auto`},
		{func(o *Options) { o.Interval = "sometimes" }, "--interval: "},
		{func(o *Options) { o.FlushEvery = "0" }, "--flush-every: "},
		{func(o *Options) { o.Retries = -1 }, "--retries -1: need ≥ 0"},
		{func(o *Options) { o.Heartbeat, o.Given = 0.05, given("heartbeat-timeout") }, "--heartbeat-timeout 0.05s: need at least 0.1s"},
		{func(o *Options) { o.InjectKind = "node" }, "--inject-dist and --inject-kind need --inject-mtti"},
		{func(o *Options) { o.InjectMTTI, o.InjectDist, o.Given = 3, "gauss", given("inject-mtti") }, "gauss"},
		{func(o *Options) { o.Shared = "s3:bucket" }, `--shared "s3:bucket": an object store location is written s3://BUCKET/PREFIX`},
		{func(o *Options) { o.FlushEvery, o.Given = "2", given("flush-every") }, "--flush-every 2: needs --shared"},
		{func(o *Options) { o.Given = given("flush-busy") }, "--flush-busy applies to non-blocking flushes: add --staging-servers S"},
		{func(o *Options) { o.Given = given("stage-rate") }, "--stage-rate applies to non-blocking flushes"},
		{func(o *Options) { o.StagingServers = -1 }, "--staging-servers -1: need ≥ 0"},
		{func(o *Options) { o.StagingServers = 2 }, "--staging-servers 2: needs --shared"},
		{func(o *Options) { o.FlushBusy = "block" }, `--flush-busy "block": want skip or wait`},
		{func(o *Options) { o.StageWriters = 0 }, "--stage-writers 0: want 1 to 1024"},
		{func(o *Options) {
			o.Shared, o.StagingServers, o.StageRate, o.Given = "/s", 1, 0, given("stage-rate")
		}, "--stage-rate 0: want a positive bandwidth such as 200MB/s"},
		{func(o *Options) { o.SharedBandwidth, o.Given = -1, given("shared-bandwidth") }, "--shared-bandwidth -1: want a positive bandwidth such as 1GB/s"},
		{func(o *Options) { o.SharedBandwidth, o.Given = 1e9, given("shared-bandwidth") }, "--shared-bandwidth needs --shared"},
	} {
		o := okOptions()
		c.mod(&o)
		_, err := o.Job()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", o, err, c.want)
		}
	}
}
