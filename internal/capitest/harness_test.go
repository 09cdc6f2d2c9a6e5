package capitest

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/internal/capitest/mpitest"
)

// jobID is SCR_JOB_ID in every test: each test has a cache base of its own.
const jobID = "capitest"

// job is one application's runs, start then restart, in a prefix and
// node caches of its own.
type job struct {
	t      *testing.T
	np     int
	bin    string
	prefix string   // SCR_PREFIX and the runs' working directory
	cache  string   // SCR_CACHE_BASE
	env    []string // the runs' environment beyond mpitest's
}

// newJob builds testdata/src against a fresh installation of the C API
// and prepares np ranks on np simulated nodes (CKPT_SCR_NODES), so that
// every rank's files are on a node of their own.
func newJob(t *testing.T, np int, src string) *job {
	t.Helper()
	install := mpitest.Install(t)
	j := &job{t: t, np: np, bin: program(t, install, src),
		prefix: filepath.Join(t.TempDir(), "prefix"), cache: filepath.Join(t.TempDir(), "cache")}
	for _, d := range []string{j.prefix, j.cache} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	j.env = []string{
		"SCR_PREFIX=" + j.prefix,
		"SCR_CACHE_BASE=" + j.cache,
		"SCR_JOB_ID=" + jobID,
		"CKPT_SCR_NODES=" + strconv.Itoa(np),
		"TMPDIR=" + t.TempDir(),
	}
	return j
}

// setenv adds KEY=VALUE entries to every later run.
func (j *job) setenv(kv ...string) { j.env = append(j.env, kv...) }

// run runs the program once with args and extra environment, and fails
// the test unless it exits 0 and says so.
func (j *job) run(env []string, args ...string) string {
	j.t.Helper()
	out, err := mpitest.Run(j.t, j.np, j.prefix, append(append([]string(nil), j.env...), env...), append([]string{j.bin}, args...)...)
	if err != nil {
		j.t.Fatalf("%s %s at %d ranks: %v\n%s", filepath.Base(j.bin), strings.Join(args, " "), j.np, err, out)
	}
	if strings.Contains(filepath.Base(j.bin), "scrapi") && !strings.Contains(out, "scrapi: OK") {
		j.t.Fatalf("%s %s exited 0 without saying OK:\n%s", filepath.Base(j.bin), strings.Join(args, " "), out)
	}
	return out
}

// runFails runs the program and returns its output, failing the test if
// it exits 0.
func (j *job) runFails(env []string, args ...string) string {
	j.t.Helper()
	out, err := mpitest.Run(j.t, j.np, j.prefix, append(append([]string(nil), j.env...), env...), append([]string{j.bin}, args...)...)
	if err == nil {
		j.t.Fatalf("%s %s at %d ranks exited 0, want a failure:\n%s", filepath.Base(j.bin), strings.Join(args, " "), j.np, out)
	}
	return out
}

// nodeCache is simulated node k's cache directory (CAPI.md).
func (j *job) nodeCache(k int) string {
	return filepath.Join(j.cache, "ckpt."+jobID, "node"+strconv.Itoa(k))
}

// loseNode removes node k's cache, as if the node had died between runs.
func (j *job) loseNode(k int) {
	j.t.Helper()
	dir := j.nodeCache(k)
	if _, err := os.Stat(dir); err != nil {
		j.t.Fatalf("node%d's cache %s is not there to lose: %v (caches: %s)", k, dir, err, listing(j.cache))
	}
	if err := os.RemoveAll(dir); err != nil {
		j.t.Fatal(err)
	}
}

// cachedFiles are the paths under dir of the cached copies of the file
// an application routed as key ("ckpt.3/rank_0.ckpt"), wherever the
// library's layout puts them: a file whose path, with its escaped
// characters (%2F) unescaped, ends in key.
func cachedFiles(t *testing.T, dir, key string) []string {
	t.Helper()
	var found []string
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		plain, err := url.PathUnescape(filepath.ToSlash(path))
		if err == nil && strings.HasSuffix(plain, "/"+key) {
			found = append(found, path)
		}
		return nil
	})
	return found
}

// listing is every file under dir, for failure messages.
func listing(dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			fmt.Fprintf(&b, "\n  %s", rel)
		}
		return nil
	})
	if b.Len() == 0 {
		return "(none)"
	}
	return b.String()
}

// The records scrapi.c writes (its comment at the top): a header of four
// little-endian uint32 (magic, dataset number, rank, payload size) and a
// payload that is a function of the dataset number and the rank.
const (
	recordMagic  = 0x53435254
	recordHeader = 16
)

func payloadSize(k, r uint32) uint32 { return 5000 + 997*r + 13*k }

func pattern(k, r, i uint32) byte {
	x := i*2654435761 + k*40503 + r*2246822519
	return byte(x>>24) ^ byte(x>>11)
}

// record is dataset k's record of rank r, as scrapi.c writes it.
func record(k, r uint32) []byte {
	n := payloadSize(k, r)
	b := make([]byte, recordHeader+n)
	binary.LittleEndian.PutUint32(b[0:], recordMagic)
	binary.LittleEndian.PutUint32(b[4:], k)
	binary.LittleEndian.PutUint32(b[8:], r)
	binary.LittleEndian.PutUint32(b[12:], n)
	for i := uint32(0); i < n; i++ {
		b[recordHeader+i] = pattern(k, r, i)
	}
	return b
}

// checkRecords checks that the file at path holds exactly the records of
// dataset k of ranks, one after the other.
func checkRecords(t *testing.T, path string, k uint32, ranks ...uint32) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	var want []byte
	for _, r := range ranks {
		want = append(want, record(k, r)...)
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d bytes, want %d (dataset %d, ranks %v)", path, len(got), len(want), k, ranks)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: wrong byte at %d: %#x, want %#x (dataset %d, ranks %v)", path, i, got[i], want[i], k, ranks)
			return
		}
	}
}

// checkPrefixFiles checks that every rank's file of dataset ckpt.k lies at
// its original path under the prefix, byte for byte.
func (j *job) checkPrefixFiles(k int) {
	j.t.Helper()
	for r := 0; r < j.np; r++ {
		checkRecords(j.t, filepath.Join(j.prefix, fmt.Sprintf("ckpt.%d/rank_%d.ckpt", k, r)), uint32(k), uint32(r))
	}
}

// forRanks runs test at 1 and at 4 ranks, as subtests.
func forRanks(t *testing.T, test func(t *testing.T, np int)) {
	for _, np := range []int{1, 4} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) { test(t, np) })
	}
}

var programs struct {
	sync.Mutex
	dir   string
	built map[string]string
}

// program compiles testdata/src (or src, if it has a directory) against
// the installation once per test binary and returns the binary.
func program(t testing.TB, install, src string) string {
	t.Helper()
	programs.Lock()
	defer programs.Unlock()
	if bin, ok := programs.built[src]; ok {
		return bin
	}
	if programs.dir == "" {
		dir, err := os.MkdirTemp("", "ckpt-capitest-bin-")
		if err != nil {
			t.Fatal(err)
		}
		programs.dir, programs.built = dir, map[string]string{}
	}
	path := src
	if filepath.Dir(src) == "." {
		path = filepath.Join("testdata", src)
	}
	built := mpitest.Build(t, install, path)
	bin := filepath.Join(programs.dir, filepath.Base(built))
	if err := copyFile(built, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	programs.built[src] = bin
	return bin
}

func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

var ckptTool struct {
	once sync.Once
	path string
	err  error
}

// ckptBinary builds cmd/ckpt once per test binary, for the tests that
// steer a job from outside (ckpt halt).
func ckptBinary(t testing.TB) string {
	t.Helper()
	ckptTool.once.Do(func() {
		root, err := mpitest.RepoRoot()
		if err != nil {
			ckptTool.err = err
			return
		}
		programs.Lock()
		if programs.dir == "" {
			programs.dir, ckptTool.err = os.MkdirTemp("", "ckpt-capitest-bin-")
			programs.built = map[string]string{}
		}
		dir := programs.dir
		programs.Unlock()
		if ckptTool.err != nil {
			return
		}
		ckptTool.path = filepath.Join(dir, "ckpt")
		cmd := exec.Command("go", "build", "-o", ckptTool.path, "./cmd/ckpt")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			ckptTool.err = fmt.Errorf("go build ./cmd/ckpt: %v\n%s", err, out)
		}
	})
	if ckptTool.err != nil {
		t.Fatal(ckptTool.err)
	}
	return ckptTool.path
}

// cleanupPrograms removes the binaries program and ckptBinary built.
func cleanupPrograms() {
	if programs.dir != "" {
		os.RemoveAll(programs.dir)
	}
}
