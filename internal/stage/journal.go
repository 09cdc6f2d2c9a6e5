package stage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/storage"
)

// record is what the journal keeps of a pending flush: enough to resume it
// after the server restarts. Objects already durable are not pulled again;
// one cut off half way is pulled from its start (it was never committed).
type record struct {
	Name     string
	Manifest []byte           // as announced
	Nodes    map[string][]int // ranks each node serves
	Done     map[int]bool     // ranks whose object is durable
}

func (r *record) nodes() []string {
	ns := make([]string, 0, len(r.Nodes))
	for n := range r.Nodes {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

func journalObject(name string) string { return "flush-" + name + ".json" }

// saveLocked writes f's record to the journal (atomic: storage commits
// whole objects).
func (s *Server) saveLocked(f *flush) error {
	if s.cfg.Journal == nil {
		return nil
	}
	b, err := json.Marshal(&f.rec)
	if err != nil {
		return err
	}
	_, err = storage.Save(s.ctx, s.cfg.Journal, journalObject(f.rec.Name), bytes.NewReader(b))
	return err
}

func (s *Server) dropJournal(name string) error {
	if s.cfg.Journal == nil {
		return nil
	}
	err := s.cfg.Journal.Remove(context.WithoutCancel(s.ctx), journalObject(name))
	if errors.Is(err, storage.ErrNotExist) {
		return nil
	}
	return err
}

// loadJournal resumes the flushes a previous run of the server left.
// Records that cannot be read are dropped with a log line: their flush
// never committed, so nothing is lost but the work of pulling it.
func (s *Server) loadJournal() error {
	if s.cfg.Journal == nil {
		return nil
	}
	var names []string
	err := s.cfg.Journal.List(s.ctx, "flush-", func(i storage.Info) error {
		names = append(names, i.Name)
		return nil
	})
	if err != nil {
		return fmt.Errorf("stage: reading the journal: %w", err)
	}
	var fs []*flush
	for _, n := range names {
		f, err := s.loadRecord(n)
		if err != nil {
			s.cfg.Logf("stage: journal %s: %v; dropped", n, err)
			s.cfg.Journal.Remove(s.ctx, n)
			continue
		}
		fs = append(fs, f)
	}
	slices.SortFunc(fs, func(a, b *flush) int { return cmp.Compare(a.m.ID, b.m.ID) })
	for _, f := range fs {
		s.flushes[f.rec.Name] = f
		s.order = append(s.order, f.rec.Name)
		s.cfg.Logf("stage: %s: resumed from the journal (%d of its ranks durable)", f.rec.Name, len(f.rec.Done))
	}
	return nil
}

func (s *Server) loadRecord(obj string) (*flush, error) {
	b, err := storage.Load(s.ctx, s.cfg.Journal, obj)
	if err != nil {
		return nil, err
	}
	f := &flush{}
	if err := json.Unmarshal(b, &f.rec); err != nil {
		return nil, err
	}
	if f.m, err = manifest.Decode(f.rec.Manifest); err != nil {
		return nil, err
	}
	if f.m.Name != f.rec.Name || journalObject(f.rec.Name) != obj {
		return nil, fmt.Errorf("record of %q holds the manifest of %q", f.rec.Name, f.m.Name)
	}
	for node, ranks := range f.rec.Nodes {
		for _, r := range ranks {
			if r < 0 || r >= f.m.Ranks || f.m.Parts[r].Node != node {
				return nil, fmt.Errorf("rank %d on node %q does not match the manifest", r, node)
			}
		}
	}
	// A rank recorded durable counts only if its object is there, whole:
	// someone may have removed it since.
	for r := range f.rec.Done {
		size := int64(0)
		if r >= 0 && r < f.m.Ranks {
			for _, file := range f.m.Parts[r].Files {
				n, _ := file.Stored()
				size += n
			}
		}
		if i, err := s.cfg.Shared.Stat(s.ctx, sharedtier.DataObject(f.rec.Name, r)); err != nil || i.Size != size {
			s.cfg.Logf("stage: %s: rank %d recorded durable, but its object is not there whole (%v); pulled again", f.rec.Name, r, err)
			delete(f.rec.Done, r)
		}
	}
	f.init()
	return f, nil
}

// parseRanks reads a marker's ranks, written as fmt.Sprint of []int.
func parseRanks(s string, n int) ([]int, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return nil, fmt.Errorf("malformed rank list %q", s)
	}
	var out []int
	for _, f := range strings.Fields(s[1 : len(s)-1]) {
		r, err := strconv.Atoi(f)
		if err != nil || r < 0 || r >= n {
			return nil, fmt.Errorf("bad rank %q (job of %d ranks)", f, n)
		}
		out = append(out, r)
	}
	return out, nil
}
