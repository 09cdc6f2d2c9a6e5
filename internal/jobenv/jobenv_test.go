package jobenv

import (
	"errors"
	"flag"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/jobtls"
	"github.com/ckpt/ckpt/internal/policy"
)

var update = flag.Bool("update", false, "rewrite docs/RUNTIME.md's table of the variables")

// full sets every field of Env.
func full(t *testing.T) Env {
	t.Helper()
	p, err := policy.Parse("auto:6h")
	if err != nil {
		t.Fatal(err)
	}
	f, err := policy.ParseFlushEvery("auto:24h")
	if err != nil {
		t.Fatal(err)
	}
	return Env{Coord: "127.0.0.1:7077", Token: "abc", Incarnation: 3, Rank: 2, Size: 4,
		Node: "node1", Domain: "rack2", Cache: "/tmp/job/node1", CacheDurability: "process", Compress: CompressAuto,
		Nodes: []string{"node0", "node1"}, CacheRoot: "/tmp/job",
		Redundancy: "xor:4", Shared: "s3://bucket/prefix", SharedBandwidth: 2.5e7,
		Interval: &p, FlushEvery: &f, FlushBusy: FlushWait,
		FlushPrior: FlushStats{Mode: "blocking", K: 3, Due: 2, Started: 2, Seconds: 0.25, LastFailure: "a, b", IdleSteps: 7},
		Stage:      []string{"127.0.0.1:1", "127.0.0.1:2"}, StageToken: "st", Advertise: "host-a",
		TLS:      jobtls.Files{CA: "/job/tls-ca.pem", Cert: "/job/tls-cert.pem", Key: "/job/tls-key.pem"},
		Strategy: StrategyUncoordinated}
}

func TestRoundTrip(t *testing.T) {
	for _, e := range []Env{{}, {Coord: "h:1"}, {Size: 1}, full(t)} {
		environ := e.Encode()
		got, err := FromEnviron(append([]string{"PATH=/bin", "CKPT_NODE=overridden"}, environ...))
		if e.Node == "" {
			got.Node = "" // the earlier entry stays: Encode wrote none
		}
		if err != nil {
			t.Fatalf("%v: %v", environ, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("round trip of %v:\n got %+v\nwant %+v", environ, got, e)
		}
	}
}

// A full Env writes every variable of the contract once, in Vars' order.
func TestEncodeOrder(t *testing.T) {
	var names, want []string
	for _, kv := range full(t).Encode() {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	for _, v := range Vars {
		if v.Contract {
			want = append(want, v.Name)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("Encode wrote %v, want %v", names, want)
	}
	// What the launcher has always written, byte for byte.
	env := Env{Coord: "h:1", Size: 2, Rank: 1, SharedBandwidth: 1.25e8}
	if got := strings.Join(env.Encode(), " "); got != "CKPT_COORD=h:1 CKPT_INCARNATION=0 CKPT_RANK=1 CKPT_SIZE=2 CKPT_SHARED_BANDWIDTH=1.25e+08B/s" {
		t.Errorf("Encode = %s", got)
	}
}

func TestMalformed(t *testing.T) {
	for _, c := range [][]string{
		{VarIncarnation, "-1"},
		{VarIncarnation, "x"},
		{VarRank, "x", VarSize, "2"},
		{VarRank, "2", VarSize, "2"},
		{VarRank, "-1", VarSize, "2"},
		{VarSize, "0", VarRank, "0"},
		{VarSize, "two", VarRank, "0"},
		{VarRank, "0"},
		{VarSize, "1"},
		{VarCacheDurability, "disk"},
		{VarCompress, "zstd"},
		{VarSharedBandwidth, "fast"},
		{VarSharedBandwidth, "0B/s"},
		{VarInterval, "sometimes"},
		{VarFlushEvery, "0"},
		{VarFlushEvery, "auto"},
		{VarFlushBusy, "block"},
		{VarFlushPrior, "{not json"},
		{VarStage, ","},
		{VarStage, "host"},
		{VarTLSCert, "", VarTLSCA, "/ca.pem", VarTLSKey, "/key.pem"}, // all three or none
		{VarTLSKey, "", VarTLSCA, "/ca.pem", VarTLSCert, "/cert.pem"},
		{VarTLSCA, "", VarTLSCert, "/cert.pem", VarTLSKey, "/key.pem"},
		{VarStrategy, "optimistic"},
	} {
		var environ []string
		for i := 0; i < len(c); i += 2 {
			environ = append(environ, c[i]+"="+c[i+1])
		}
		_, err := FromEnviron(environ)
		var e *Error
		if !errors.As(err, &e) || e.Name != c[0] || e.Value != c[1] {
			t.Errorf("%v: error %v, want one naming %s=%q", environ, err, c[0], c[1])
			continue
		}
		if !strings.Contains(err.Error(), c[0]+"="+strconv.Quote(c[1])) {
			t.Errorf("%v: message %q does not name the variable and its value", environ, err)
		}
	}
}

func TestPayloads(t *testing.T) {
	for _, r := range []Restored{{Source: SourceNone}, {Source: SourceRebuild, Checkpoint: "c-3 x"}} {
		if got := DecodeRestored(r.Encode()); got != r {
			t.Errorf("restored %+v: round trip %+v", r, got)
		}
	}
	if got := string(Restored{Source: SourceCache, Checkpoint: "c1"}.Encode()); got != "cache c1" {
		t.Errorf("restored encodes as %q", got)
	}
	f := full(t).FlushPrior
	b, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeFlushStats(b); err != nil || got != f {
		t.Errorf("flush stats: round trip %+v, %v", got, err)
	}
	if _, err := DecodeFlushStats([]byte("[")); err == nil {
		t.Error("malformed flush stats decoded")
	}
	sum := FlushStats{Mode: "blocking", K: 2, Due: 1, LastFailure: "x"}.Add(FlushStats{Due: 2, KError: "e"})
	if sum != (FlushStats{Mode: "blocking", K: 2, Due: 3, LastFailure: "x", KError: "e"}) {
		t.Errorf("Add = %+v", sum)
	}
}

// moduleRoot is the module's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// constNames are the Var* constants this package declares.
func constNames(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "jobenv.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if strings.HasPrefix(n.Name, "Var") {
						v, _ := strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
						names = append(names, v)
					}
				}
			}
		}
	}
	return names
}

func TestVarsDocumented(t *testing.T) {
	consts := constNames(t)
	var documented []string
	for _, v := range Vars {
		if slices.Contains(documented, v.Name) {
			t.Errorf("%s documented twice", v.Name)
		}
		documented = append(documented, v.Name)
		if v.Meaning == "" || v.SetBy == "" || v.Default == "" {
			t.Errorf("%s: incomplete: %+v", v.Name, v)
		}
	}
	slices.Sort(consts)
	slices.Sort(documented)
	if !slices.Equal(consts, documented) {
		t.Errorf("constants %v, documented %v", consts, documented)
	}
}

// Foundations (below the runtime layer) that read a variable of their own
// and cannot import this package: they may spell its name.
var ownNames = map[string][]string{
	"internal/storage/s3/config.go":        {VarS3Endpoint},
	"internal/storage/s3/s3test/s3test.go": {VarMinio, VarRequireS3},
}

// Every CKPT_ name the module's code mentions, in code, strings or
// comments, is one of Vars; and outside this package no string literal is
// a variable's name (or NAME=...): the code spells them through the
// constants.
func TestNoStrayNames(t *testing.T) {
	root := moduleRoot(t)
	known := map[string]bool{}
	for _, v := range Vars {
		known[v.Name] = true
	}
	nameRE := regexp.MustCompile(`CKPT_[A-Z0-9_]*[A-Z0-9]`)
	// A literal that is a name, or holds NAME=: the environment built by hand.
	literalRE := regexp.MustCompile(`^CKPT_[A-Z0-9_]*[A-Z0-9]$|CKPT_[A-Z0-9_]*[A-Z0-9]=`)
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." {
				if n := d.Name(); strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "vendor" {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		fset := token.NewFileSet()
		var s scanner.Scanner
		s.Init(fset.AddFile(path, -1, len(src)), src, nil, scanner.ScanComments)
		inJobenv := strings.HasPrefix(rel, "internal/jobenv/")
		for {
			pos, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok != token.STRING && tok != token.COMMENT && tok != token.CHAR {
				continue
			}
			for _, name := range nameRE.FindAllString(lit, -1) {
				if !known[name] {
					t.Errorf("%s: %s is not a jobenv variable: add it to internal/jobenv (a constant and its line in Vars)", fset.Position(pos), name)
				}
			}
			if tok == token.STRING && !inJobenv {
				v, err := strconv.Unquote(lit)
				if err != nil {
					continue
				}
				for _, m := range literalRE.FindAllString(v, -1) {
					if name := strings.TrimSuffix(m, "="); !slices.Contains(ownNames[rel], name) {
						t.Errorf("%s: the literal %q: use jobenv.Var* (or Env.Encode)", fset.Position(pos), v)
						break
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Errorf("scanned %d files: the walk missed the module", files)
	}
}

// docs/RUNTIME.md's table is Markdown's.
func TestDocTable(t *testing.T) {
	path := filepath.Join(moduleRoot(t), "docs", "RUNTIME.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, DocBegin), strings.Index(doc, DocEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q ... %q", path, DocBegin, DocEnd)
	}
	cur := doc[i : j+len(DocEnd)]
	want := Markdown()
	if cur == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc[:i]+want+doc[j+len(DocEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's table of the variables is not internal/jobenv's Vars: run go test ./internal/jobenv -update\n got:\n%s\nwant:\n%s", path, cur, want)
}

// LookupOnly reads only the variables marked, so Lookup checks only what
// a reader uses.
func TestLookupOnly(t *testing.T) {
	all := func(name string) (string, bool) { return "bad", true }
	e, err := LookupOnly(all, map[string]bool{VarNode: true, VarToken: true, VarInterval: false})
	if err != nil || e.Node != "bad" || e.Token != "bad" || e.Coord != "" {
		t.Errorf("only node and token: %+v, %v", e, err)
	}
	if _, err := LookupOnly(all, map[string]bool{VarInterval: true}); err == nil {
		t.Error("a marked variable's bad value passed")
	}
}

// Identity: the contract's variables, else the first launcher's pair that
// is a rank of its size, else rank 0 of 1.
func TestIdentity(t *testing.T) {
	for _, c := range []struct {
		env        Env
		vars       map[string]string
		rank, size int
	}{
		{Env{Rank: 1, Size: 2}, map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "4"}, 1, 2},
		{Env{}, map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "4"}, 3, 4},
		{Env{}, map[string]string{"SLURM_PROCID": "x", "SLURM_NTASKS": "4", "OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "6"}, 5, 6},
		{Env{}, map[string]string{"PMI_RANK": "7", "PMI_SIZE": "8"}, 7, 8},
		// mpirun in a Slurm allocation: its ranks inherit their node's
		// daemon's SLURM_PROCID; the MPI launcher's variables win.
		{Env{}, map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4"}, 3, 4},
		{Env{}, map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "PMI_RANK": "2", "PMI_SIZE": "4"}, 2, 4},
		{Env{}, map[string]string{"PMI_RANK": "7"}, 0, 1},
		// A pair that is not a rank of its size (a stale or broken
		// launcher's) is passed over, as one that does not parse: it
		// would index past the job's nodes (NodeOf).
		{Env{}, map[string]string{"OMPI_COMM_WORLD_RANK": "4", "OMPI_COMM_WORLD_SIZE": "4", "SLURM_PROCID": "1", "SLURM_NTASKS": "2"}, 1, 2},
		{Env{}, map[string]string{"PMI_RANK": "-1", "PMI_SIZE": "4", "SLURM_PROCID": "1", "SLURM_NTASKS": "2"}, 1, 2},
		{Env{}, map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "0"}, 0, 1},
	} {
		r, n := Identity(c.env, func(name string) (string, bool) { v, ok := c.vars[name]; return v, ok })
		if r != c.rank || n != c.size {
			t.Errorf("rank %d of %d in Env, %v: rank %d of %d, want %d of %d", c.env.Rank, c.env.Size, c.vars, r, n, c.rank, c.size)
		}
	}
}

func TestEndTime(t *testing.T) {
	env := map[string]string{"B": "1700000000", "C": "soon"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	end, from, err := EndTime(lookup, "A", "B", "C")
	if err != nil || from != "B" || end.Unix() != 1700000000 {
		t.Fatalf("%v from %q, %v", end, from, err)
	}
	if _, from, err := EndTime(lookup, "C", "B"); err == nil || from != "C" || !strings.Contains(err.Error(), `C="soon"`) {
		t.Fatalf("a bad value: from %q, %v", from, err)
	}
	if end, from, err := EndTime(lookup, "A"); !end.IsZero() || from != "" || err != nil {
		t.Fatalf("none set: %v %q %v", end, from, err)
	}
	loc := time.FixedZone("X", 3600)
	got, err := ParseSqueueEnd("2026-11-26T20:50:00\n", loc)
	if err != nil || !got.Equal(time.Date(2026, 11, 26, 20, 50, 0, 0, loc)) {
		t.Fatalf("squeue's end: %v, %v", got, err)
	}
	for _, none := range []string{"N/A", "Unknown", " ", "UNLIMITED"} {
		if got, err := ParseSqueueEnd(none, loc); !got.IsZero() || err != nil {
			t.Errorf("%q: %v, %v", none, got, err)
		}
	}
	if _, err := ParseSqueueEnd("tomorrow", loc); err == nil {
		t.Errorf("a bad end: no error")
	}
}

func TestMsgLogStats(t *testing.T) {
	s := MsgLogStats{Protect: 1500 * time.Millisecond, Replay: 7}
	got, err := DecodeMsgLogStats(s.Encode())
	if err != nil || got != s {
		t.Fatalf("round trip of %+v: %+v, %v", s, got, err)
	}
	if sum := s.Add(MsgLogStats{Protect: 1, Replay: 2}); sum != (MsgLogStats{Protect: 1500*time.Millisecond + 1, Replay: 9}) {
		t.Errorf("Add = %+v", sum)
	}
	for _, bad := range []string{"", "1", "1 2 3", "x 1", "1 -2"} {
		if _, err := DecodeMsgLogStats([]byte(bad)); err == nil {
			t.Errorf("DecodeMsgLogStats(%q) accepted it", bad)
		}
	}
	if KeyMsgLog(3) != "ckpt/msglog/3" {
		t.Errorf("KeyMsgLog(3) = %s", KeyMsgLog(3))
	}
	full := MsgLogStats{Protect: 1, Replay: 2, Checkpoints: 3, CheckpointTime: 4, Loads: 5, LoadTime: 6}
	if got, err := DecodeMsgLogStats(full.Encode()); err != nil || got != full {
		t.Errorf("round trip of %+v: %+v, %v", full, got, err)
	}
	if sum := full.Add(full); sum != (MsgLogStats{Protect: 2, Replay: 4, Checkpoints: 6, CheckpointTime: 8, Loads: 10, LoadTime: 12}) {
		t.Errorf("Add = %+v", sum)
	}
	// The older form, "PROTECT REPLAY", is still read, its counts zero.
	if got, err := DecodeMsgLogStats([]byte("1500000000 7")); err != nil || got != (MsgLogStats{Protect: 1500 * time.Millisecond, Replay: 7}) {
		t.Errorf("the two-field form: %+v, %v", got, err)
	}
	if _, err := DecodeMsgLogStats([]byte("1 2 3 4 5 -6")); err == nil {
		t.Errorf("a negative load time accepted")
	}
}

func TestPeers(t *testing.T) {
	for _, peers := range [][]int{nil, {4}, {0, 2, 5}} {
		got, err := DecodePeers(EncodePeers(peers))
		if err != nil || !slices.Equal(got, peers) {
			t.Errorf("round trip of %v: %v, %v", peers, got, err)
		}
	}
	for _, bad := range []string{"", "1,", "a", "1,-2"} {
		if _, err := DecodePeers([]byte(bad)); err == nil {
			t.Errorf("DecodePeers(%q) accepted it", bad)
		}
	}
	if KeyPeers(2) != "ckpt/peers/2" {
		t.Errorf("KeyPeers(2) = %s", KeyPeers(2))
	}
}
