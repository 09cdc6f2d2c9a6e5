package scr

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/quick"
	"time"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// The state machine, call by call through a restart, a checkpoint and an
// output, with the misuses SCR aborts on.
func TestStateMachine(t *testing.T) {
	steps := []struct {
		call string
		in   State
		ok   bool
		msg  string
	}{
		{"SCR_Start_checkpoint", Uninit, false, "SCR_Start_checkpoint: Must call SCR_Init() before SCR_Start_checkpoint()"},
		{"SCR_Init", Uninit, true, ""},
		{"SCR_Init", Idle, false, "SCR_Init: SCR_Init() was already called (state IDLE)"},
		{"SCR_Have_restart", Idle, true, ""},
		{"SCR_Complete_restart", Idle, false, "SCR_Complete_restart: Must call SCR_Start_restart() before SCR_Complete_restart() (state IDLE)"},
		{"SCR_Start_restart", Idle, true, ""},
		{"SCR_Start_checkpoint", Restart, false, "SCR_Start_checkpoint: Must call SCR_Complete_restart() before SCR_Start_checkpoint() (state RESTART)"},
		{"SCR_Complete_restart", Restart, true, ""},
		{"SCR_Complete_output", Checkpoint, false, "SCR_Complete_output: Must call SCR_Start_output() before SCR_Complete_output() (state CHECKPOINT)"},
		{"SCR_Complete_checkpoint", Checkpoint, true, ""},
		{"SCR_Need_checkpoint", Output, false, "SCR_Need_checkpoint: Must call SCR_Complete_output() before SCR_Need_checkpoint() (state OUTPUT)"},
		{"SCR_Complete_output", Output, true, ""},
		{"SCR_Finalize", Idle, true, ""},
		{"SCR_Finalize", Uninit, false, "SCR_Finalize: Must call SCR_Init() before SCR_Finalize()"},
	}
	for _, s := range steps {
		err := Check(s.call, s.in)
		if (err == nil) != s.ok {
			t.Errorf("%s in %s: %v, want ok=%v", s.call, s.in, err, s.ok)
			continue
		}
		var m *Misuse
		if err != nil && (!errors.As(err, &m) || err.Error() != s.msg) {
			t.Errorf("%s in %s: %q, want %q", s.call, s.in, err, s.msg)
		}
	}
	if Check("SCR_Route_file", Idle) == nil {
		t.Errorf("Route_file is no call of the state machine: Check must not accept it")
	}
}

func TestParseConfig(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // key, value, unset, query, subs
		err  bool
	}{
		{in: "SCR_FLUSH=4", want: "SCR_FLUSH=4"},
		{in: "SCR_FLUSH=", want: "SCR_FLUSH unset"},
		{in: "SCR_FLUSH", want: "SCR_FLUSH?"},
		{in: "  SCR_PREFIX=/a/b  ", want: "SCR_PREFIX=/a/b"},
		{in: "CKPT=0 TYPE=XOR SET_SIZE=16", want: "CKPT=0 [TYPE=XOR SET_SIZE=16]"},
		{in: "CKPT=0 TYPE", want: "CKPT=0? [TYPE?]"},
		{in: "", err: true},
		{in: "=3", err: true},
		{in: "CKPT TYPE=XOR", err: true},
		{in: "CKPT=0 TYPE SET_SIZE", err: true},
	} {
		got, err := ParseConfig(c.in)
		if (err != nil) != c.err {
			t.Errorf("ParseConfig(%q): %v, want error %v", c.in, err, c.err)
			continue
		}
		if err == nil && show(got) != c.want {
			t.Errorf("ParseConfig(%q) = %s, want %s", c.in, show(got), c.want)
		}
	}
}

func show(c Config) string {
	s := c.Key
	switch {
	case c.Unset:
		s += " unset"
	case c.Query && len(c.Sub) == 0:
		s += "?"
	default:
		s += "=" + c.Value
		if c.Query {
			s += "?"
		}
	}
	if len(c.Sub) > 0 {
		var subs []string
		for _, x := range c.Sub {
			subs = append(subs, show(x))
		}
		s += " [" + strings.Join(subs, " ") + "]"
	}
	return s
}

// Parameters come from the environment first, then the configuration
// file, then SCR_Config; sets after Init fail; queries work always.
func TestParamsPriority(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "my.conf")
	os.WriteFile(conf, []byte("# comment\nSCR_FLUSH=5\nSCR_SET_SIZE=3 # trailing\nCKPT=0 TYPE=RS SET_SIZE=6\n"), 0o644)
	p := NewParams(envOf(map[string]string{"SCR_FLUSH": "7", "SCR_CONF_FILE": conf}))
	for _, s := range []string{"SCR_FLUSH=1", "SCR_SET_SIZE=2", "SCR_DEBUG=1", "SCR_DEBUG=", "SCR_JOB_ID=j"} {
		if _, _, err := p.Config(s, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.LoadFile(dir); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"SCR_FLUSH": "7", "SCR_SET_SIZE": "3", "SCR_JOB_ID": "j"} {
		if v, ok, _ := p.Config(key, true); !ok || v != want {
			t.Errorf("query %s = %q %v, want %q", key, v, ok, want)
		}
	}
	if _, ok, _ := p.Config("SCR_DEBUG", true); ok {
		t.Errorf("SCR_DEBUG= unset it, but a query finds it")
	}
	if v, ok, _ := p.Config("CKPT=0 TYPE", true); !ok || v != "RS" {
		t.Errorf("query CKPT=0 TYPE = %q %v, want RS", v, ok)
	}
	if _, _, err := p.Config("SCR_FLUSH=2", true); err == nil {
		t.Errorf("a set after SCR_Init succeeded")
	}
	// The file's item counts for the copy type; SCR_SET_SIZE (file) wins
	// over the item's SET_SIZE, and sets are no wider than the nodes.
	if s, err := p.Scheme(8); err != nil || s != "rs:1+2" {
		t.Errorf("Scheme(8) = %q, %v, want rs:1+2 (SCR_SET_SIZE=3, 2 failures)", s, err)
	}
	bad := NewParams(envOf(map[string]string{"SCR_CONF_FILE": conf + ".missing"}))
	if err := bad.LoadFile(dir); err == nil {
		t.Errorf("a missing SCR_CONF_FILE loaded")
	}
	os.WriteFile(filepath.Join(dir, ".scrconf"), []byte("SCR_FLUSH\n"), 0o644)
	if err := NewParams(envOf(nil)).LoadFile(dir); err == nil || !strings.Contains(err.Error(), ".scrconf:1") {
		t.Errorf("a query line in $PREFIX/.scrconf: %v, want an error naming the line", err)
	}
	if _, err := NewParams(envOf(map[string]string{"SCR_FLUSH": "x"})).Int("SCR_FLUSH", 10); err == nil {
		t.Errorf("SCR_FLUSH=x read as a number")
	}
}

func TestSchemeFor(t *testing.T) {
	for _, c := range []struct {
		typ               string
		size, fail, nodes int
		want              string
	}{
		{"", 8, 2, 4, ""},
		{"SINGLE", 8, 2, 4, "single"},
		{"XOR", 8, 2, 4, "xor:4"},
		{"xor", 3, 2, 8, "xor:3"},
		{"XOR", 8, 2, 1, "single"},
		{"PARTNER", 8, 2, 2, "partner"},
		{"RS", 8, 2, 4, "rs:2+2"},
		{"RS", 8, 5, 4, "rs:1+3"},
	} {
		got, err := SchemeFor(c.typ, c.size, c.fail, c.nodes)
		if err != nil || got != c.want {
			t.Errorf("SchemeFor(%q, %d, %d, %d) = %q, %v, want %q", c.typ, c.size, c.fail, c.nodes, got, err, c.want)
		}
	}
	if _, err := SchemeFor("MIRROR", 8, 2, 4); err == nil {
		t.Errorf("an unknown copy type was accepted")
	}
}

func TestNames(t *testing.T) {
	if DatasetName("", 7) != "scr.dataset.7" || DatasetName("out.3", 7) != "out.3" {
		t.Errorf("dataset names: %q %q", DatasetName("", 7), DatasetName("out.3", 7))
	}
	for _, s := range []string{"ckpt.5/rank_0.ckpt", ".hidden/x", "100%/a%2F", "plain"} {
		e := Encode(s)
		if strings.ContainsRune(e, '/') || strings.HasPrefix(e, ".") || Decode(e) != s {
			t.Errorf("Encode(%q) = %q, decoded %q", s, e, Decode(e))
		}
	}
	f := func(s string) bool { return Decode(Encode(s)) == s && !strings.ContainsRune(Encode(s), '/') }
	if err := quick.Check(f, nil); err != nil {
		t.Error(err)
	}
	pre := "/p/run"
	for _, c := range []struct{ cwd, name, key string }{
		{"/p/run", "ckpt.5/rank_0.ckpt", "ckpt.5/rank_0.ckpt"},
		{"/p/run/sub", "../x", "x"},
		{"/elsewhere", "/p/run/a/b", "a/b"},
	} {
		if k, err := OutputKey(pre, c.cwd, c.name); err != nil || k != c.key {
			t.Errorf("OutputKey(%q in %q) = %q, %v, want %q", c.name, c.cwd, k, err, c.key)
		}
	}
	for _, name := range []string{"/etc/passwd", "../out", "/p/run", "/p/runx/a", ""} {
		if k, err := OutputKey(pre, pre, name); err == nil {
			t.Errorf("OutputKey(%q) = %q: outside the prefix, want an error", name, k)
		}
	}
	keys := []string{"ckpt.5/rank_0.ckpt", "ckpt.5/meta", "other/meta"}
	for _, c := range []struct {
		name, key string
		ok        bool
	}{
		{"ckpt.5/rank_0.ckpt", "ckpt.5/rank_0.ckpt", true},
		{"/p/run/ckpt.5/meta", "ckpt.5/meta", true},
		{"rank_0.ckpt", "ckpt.5/rank_0.ckpt", true}, // a bare base name
		{"meta", "", false},                         // two files have it
		{"ckpt.6/rank_0.ckpt", "", false},
	} {
		k, ok := RestartKey(pre, pre, c.name, keys)
		if k != c.key || ok != c.ok {
			t.Errorf("RestartKey(%q) = %q %v, want %q %v", c.name, k, ok, c.key, c.ok)
		}
	}
}

func TestDecider(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	var none Decider
	if none.Need(at(0), false) || none.Need(at(1e6), false) {
		t.Errorf("with nothing configured, Need said yes")
	}
	if !none.Need(at(2), true) {
		t.Errorf("halting: Need said no")
	}
	every := Decider{Interval: Interval{Every: 3}}
	var got []bool
	for i := range 7 {
		got = append(got, every.Need(at(float64(i)), false))
	}
	if want := []bool{false, false, true, false, false, true, false}; !equal(got, want) {
		t.Errorf("every 3rd call: %v, want %v", got, want)
	}
	secs := Decider{Interval: Interval{Seconds: 10 * time.Second}}
	if secs.Need(at(0), false) || secs.Need(at(9), false) || !secs.Need(at(10), false) {
		t.Errorf("seconds: want no at 0 and 9, yes at 10")
	}
	secs.Started(at(10))
	secs.Ended(at(11))
	if secs.Need(at(20), false) || !secs.Need(at(21), false) {
		t.Errorf("seconds: the interval must count from the last checkpoint's end (11)")
	}
	// Overhead 10%: a checkpoint costing 2 s is due once 18 s passed.
	ov := Decider{Interval: Interval{Overhead: 10}}
	if !ov.Need(at(0), false) {
		t.Errorf("overhead: the first call must checkpoint, to measure the cost")
	}
	ov.Started(at(0))
	ov.Ended(at(2))
	if ov.Need(at(19), false) || !ov.Need(at(20), false) {
		t.Errorf("overhead: want no at 17 s after, yes at 18 s")
	}
	if !HaltSoon(at(50), at(100), 60*time.Second) || HaltSoon(at(30), at(100), 60*time.Second) ||
		HaltSoon(at(50), time.Time{}, time.Minute) || HaltSoon(at(50), at(100), 0) {
		t.Errorf("HaltSoon")
	}
}

func equal(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestIndex(t *testing.T) {
	var x Index
	id1, c1 := x.Next(FlagCheckpoint)
	x.Add(Entry{ID: id1, Ckpt: c1, Name: DatasetName("", id1), Flags: FlagCheckpoint})
	id2, c2 := x.Next(FlagOutput)
	x.Add(Entry{ID: id2, Ckpt: c2, Name: "viz", Flags: FlagOutput})
	id3, c3 := x.Next(FlagCheckpoint | FlagOutput)
	x.Add(Entry{ID: id3, Ckpt: c3, Name: "both", Flags: FlagCheckpoint | FlagOutput})
	if id3 != 3 || c3 != 2 || c2 != 0 {
		t.Errorf("ids: dataset %d checkpoint %d (output only %d), want 3, 2, 0", id3, c3, c2)
	}
	b := x.Encode()
	y, err := DecodeIndex(b)
	if err != nil || len(y.Datasets) != 3 || y.LastID != 3 {
		t.Fatalf("round trip: %v %+v", err, y)
	}
	if !y.Eligible("scr.dataset.1") || y.Eligible("viz") || !y.Eligible("both") || !y.Eligible("unknown") {
		t.Errorf("eligible: checkpoints yes, output-only no, unknown yes")
	}
	y.Current = "scr.dataset.1"
	if y.Eligible("both") || !y.Eligible("scr.dataset.1") || y.Eligible("unknown") {
		t.Errorf("with a current one, newer and unknown ones are not eligible")
	}
	y.Find("scr.dataset.1").Failed = true
	if y.Eligible("scr.dataset.1") {
		t.Errorf("a failed checkpoint is eligible")
	}
	y.Remove("scr.dataset.1")
	if y.Current != "" || y.Find("scr.dataset.1") != nil {
		t.Errorf("Remove left it: %+v", y)
	}
	if _, err := DecodeIndex([]byte("{")); err == nil {
		t.Errorf("a damaged index decoded")
	}
}
