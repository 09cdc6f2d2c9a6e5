package scr

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Parameters ckpt honours, with what they do (docs/C-API.md has the table
// for users). SCR_CONF_FILE and SCR_PREFIX are read before the file.
var Honoured = map[string]string{
	"SCR_ENABLE":              "0: SCR_Init fails and every later call fails",
	"SCR_PREFIX":              "the prefix directory (default: the current directory)",
	"SCR_CONF_FILE":           "the user configuration file (default $SCR_PREFIX/.scrconf)",
	"SCR_CACHE_BASE":          "the base of the node caches (default: the temp directory)",
	"SCR_CACHE_BYPASS":        "1: files routed to the prefix, copied into the cache at completion; every checkpoint flushed",
	"SCR_COPY_TYPE":           "SINGLE, PARTNER, XOR or RS (default: ckpt's XOR over the nodes)",
	"SCR_SET_SIZE":            "members of an XOR or RS set (default 8, at most the nodes)",
	"SCR_SET_FAILURES":        "parity members of an RS set (default 2)",
	"SCR_FLUSH":               "flush every N-th checkpoint to the prefix (default 10; 0 never)",
	"SCR_CHECKPOINT_INTERVAL": "SCR_Need_checkpoint says yes every N-th call",
	"SCR_CHECKPOINT_SECONDS":  "... or when this many seconds passed since the last checkpoint",
	"SCR_CHECKPOINT_OVERHEAD": "... or while checkpoints cost less than this percentage of the run",
	"SCR_HALT_SECONDS":        "SCR_Should_exit says yes this many seconds before the end time",
	"SCR_END_TIME":            "the allocation's end (Unix seconds), for SCR_HALT_SECONDS",
	"SCR_JOB_ID":              "names the caches (default SLURM_JOBID, PBS_JOBID, LSB_JOBID, FLUX_JOB_ID, else defjobid)",
	"SCR_DEBUG":               "> 0: one line on stderr per dataset from rank 0",
	"SCR_CURRENT":             "the checkpoint SCR_Have_restart starts from (as SCR_Current)",
}

// Ignored are SCR parameters ckpt accepts and does without, and why.
var Ignored = map[string]string{
	"SCR_CNTL_BASE":          "ckpt keeps its metadata beside the data, in the cache and the prefix",
	"SCR_CACHE_SIZE":         "the cache keeps 2 checkpoints (ckpt's default retention)",
	"SCR_USER_NAME":          "no per-user directories: the cache path is SCR_CACHE_BASE/ckpt.JOBID",
	"SCR_FETCH":              "restart always falls back on the prefix",
	"SCR_FLUSH_ON_RESTART":   "checkpoints are flushed when SCR_FLUSH says",
	"SCR_GLOBAL_RESTART":     "restart is always global over every rank",
	"SCR_HALT_EXIT":          "SCR_Should_exit never exits the process (SCR's default since 3.0)",
	"SCR_PREFIX_SIZE":        "the prefix keeps every checkpoint until SCR_Delete",
	"SCR_DROP_AFTER_CURRENT": "newer checkpoints stay (SCR_Current only chooses)",
	"SCR_FLUSH_ASYNC":        "flushes are blocking",
	"SCR_CRC_ON_COPY":        "ckpt verifies every byte against its hash anyway",
	"SCR_CRC_ON_FLUSH":       "ckpt verifies every byte against its hash anyway",
	"SCR_CRC_ON_DELETE":      "ckpt verifies every byte against its hash anyway",
	"SCR_LOG_ENABLE":         "no SCR log database",
	"SCR_MPI_BUF_SIZE":       "redundancy goes through ckpt's own transports",
}

// Params are SCR's parameters as SCR reads them: the environment first,
// then the user configuration file, then what the application set with
// SCR_Config.
type Params struct {
	env  func(string) (string, bool)
	file map[string]string
	app  map[string]string
}

// NewParams reads parameters through env (os.LookupEnv's form).
func NewParams(env func(string) (string, bool)) *Params {
	return &Params{env: env, file: map[string]string{}, app: map[string]string{}}
}

// Get is key's value and whether any source sets it.
func (p *Params) Get(key string) (string, bool) {
	if v, ok := p.env(key); ok {
		return v, true
	}
	if v, ok := p.file[key]; ok {
		return v, true
	}
	v, ok := p.app[key]
	return v, ok
}

// Int is key's value as an integer, def when unset, an error when
// malformed.
func (p *Params) Int(key string, def int) (int, error) {
	v, ok := p.Get(key)
	if !ok || strings.TrimSpace(v) == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("%s=%q: not an integer", key, v)
	}
	return n, nil
}

// Float is Int for a number with a fraction.
func (p *Params) Float(key string, def float64) (float64, error) {
	v, ok := p.Get(key)
	if !ok || strings.TrimSpace(v) == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: not a number", key, v)
	}
	return f, nil
}

// Prefix is SCR_PREFIX made absolute against cwd (cwd itself when unset).
func (p *Params) Prefix(cwd string) string {
	v, ok := p.Get("SCR_PREFIX")
	if !ok || v == "" {
		return filepath.Clean(cwd)
	}
	if !filepath.IsAbs(v) {
		v = filepath.Join(cwd, v)
	}
	return filepath.Clean(v)
}

// LoadFile reads the user configuration file: SCR_CONF_FILE, else
// $PREFIX/.scrconf when it exists. Its lines are SCR_Config's set forms;
// '#' starts a comment.
func (p *Params) LoadFile(cwd string) error {
	path, ok := p.env("SCR_CONF_FILE")
	if !ok || path == "" {
		path = filepath.Join(p.Prefix(cwd), ".scrconf")
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("configuration file: %w", err)
	}
	defer f.Close()
	return p.parseFile(f, path)
}

func (p *Params) parseFile(r io.Reader, path string) error {
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		c, err := ParseConfig(line)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if c.Query {
			return fmt.Errorf("%s:%d: %q sets nothing", path, n, strings.TrimSpace(line))
		}
		c.apply(p.file)
	}
	return sc.Err()
}

// Config is one SCR_Config string, parsed: "KEY=VALUE" sets, "KEY=" unsets,
// "KEY" queries; "CKPT=0 TYPE=XOR SET_SIZE=16" sets TYPE and SET_SIZE of
// the item CKPT=0, and "CKPT=0 TYPE" queries one of them.
type Config struct {
	Key, Value string
	Unset      bool
	Query      bool
	// Sub are the item's settings (Key=Value names the item) in order; a
	// query of a setting has one with Query set.
	Sub []Config
}

// ParseConfig parses an SCR_Config string.
func ParseConfig(s string) (Config, error) {
	words := strings.Fields(s)
	if len(words) == 0 {
		return Config{}, errors.New("empty configuration string")
	}
	one := func(w string) (Config, error) {
		k, v, set := strings.Cut(w, "=")
		if k == "" {
			return Config{}, fmt.Errorf("%q: no key", w)
		}
		return Config{Key: k, Value: v, Unset: set && v == "", Query: !set}, nil
	}
	c, err := one(words[0])
	if err != nil {
		return Config{}, err
	}
	if len(words) == 1 {
		return c, nil
	}
	if c.Query || c.Unset {
		return Config{}, fmt.Errorf("%q: an item with settings needs KEY=VALUE first", s)
	}
	for i, w := range words[1:] {
		sub, err := one(w)
		if err != nil {
			return Config{}, err
		}
		if sub.Query && len(words) > 2 {
			return Config{}, fmt.Errorf("%q: a query names one setting of the item", s)
		}
		c.Sub = append(c.Sub, sub)
		if sub.Query && i == 0 {
			c.Query = true
		}
	}
	return c, nil
}

// itemKey is where an item's setting is kept: "CKPT=0.TYPE".
func itemKey(c Config, sub Config) string { return c.Key + "=" + c.Value + "." + sub.Key }

// apply records a set or unset in m.
func (c Config) apply(m map[string]string) {
	if len(c.Sub) == 0 {
		if c.Unset {
			delete(m, c.Key)
		} else {
			m[c.Key] = c.Value
		}
		return
	}
	m[c.Key] = c.Value
	for _, s := range c.Sub {
		if s.Unset {
			delete(m, itemKey(c, s))
		} else {
			m[itemKey(c, s)] = s.Value
		}
	}
}

// Config carries out an SCR_Config string: a set or unset (before SCR_Init:
// afterwards parameters are read already, and it fails), or a query, whose
// value it returns with true (false: not set).
func (p *Params) Config(s string, initialized bool) (string, bool, error) {
	c, err := ParseConfig(s)
	if err != nil {
		return "", false, err
	}
	if c.Query {
		key := c.Key
		if len(c.Sub) == 1 {
			key = itemKey(c, c.Sub[0])
		}
		v, ok := p.Get(key)
		return v, ok, nil
	}
	if initialized {
		return "", false, fmt.Errorf("%q sets a parameter after SCR_Init, which has read them", s)
	}
	c.apply(p.app)
	return "", false, nil
}

// Scheme is ckpt's redundancy scheme for SCR_COPY_TYPE, SCR_SET_SIZE and
// SCR_SET_FAILURES over nodes failure domains ("" is ckpt's default: XOR
// over the nodes). An item CKPT=N TYPE=... SET_SIZE=... of the
// configuration counts when the SCR_ parameters are unset.
func (p *Params) Scheme(nodes int) (string, error) {
	typ, ok := p.Get("SCR_COPY_TYPE")
	if !ok {
		typ, _ = p.firstItem("CKPT", "TYPE")
	}
	setKey := "SCR_SET_SIZE"
	if _, ok := p.Get(setKey); !ok {
		if v, ok := p.firstItem("CKPT", "SET_SIZE"); ok {
			p.app[setKey] = v
		}
	}
	size, err := p.Int(setKey, 8)
	if err != nil {
		return "", err
	}
	fails, err := p.Int("SCR_SET_FAILURES", 2)
	if err != nil {
		return "", err
	}
	return SchemeFor(typ, size, fails, nodes)
}

// SchemeFor maps SCR's copy type to ckpt's scheme. Sets never hold two
// members of one node, so a set is at most nodes wide; with one node
// every type is SINGLE.
func SchemeFor(typ string, size, fails, nodes int) (string, error) {
	if size < 2 {
		size = 2
	}
	size = min(size, nodes)
	switch strings.ToUpper(strings.TrimSpace(typ)) {
	case "":
		return "", nil
	case "SINGLE", "NONE":
		return "single", nil
	}
	if nodes < 2 {
		return "single", nil
	}
	switch strings.ToUpper(strings.TrimSpace(typ)) {
	case "PARTNER":
		return "partner", nil
	case "XOR":
		return fmt.Sprintf("xor:%d", size), nil
	case "RS":
		fails = max(1, min(fails, size-1))
		return fmt.Sprintf("rs:%d+%d", size-fails, fails), nil
	}
	return "", fmt.Errorf("SCR_COPY_TYPE=%q: want SINGLE, PARTNER, XOR or RS", typ)
}

// firstItem is key's setting of the first item named item (CKPT=0 before
// CKPT=1).
func (p *Params) firstItem(item, key string) (string, bool) {
	for _, m := range []map[string]string{p.file, p.app} {
		if n, ok := m[item]; ok {
			if v, ok := m[item+"="+n+"."+key]; ok {
				return v, true
			}
		}
	}
	return "", false
}
