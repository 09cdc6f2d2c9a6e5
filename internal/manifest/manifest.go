package manifest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Version is the manifest format version this package writes and reads.
const Version = 1

// Level is a storage level a checkpoint can be committed at.
type Level string

// Storage levels a checkpoint can be committed at.
const (
	LevelCache  Level = "cache"  // node-local caches, protected by the redundancy scheme
	LevelShared Level = "shared" // the shared tier (parallel file system or object store)
)

var (
	// ErrInvalid is wrapped by errors about manifests that break a rule of
	// the format (see Manifest.Validate).
	ErrInvalid = errors.New("invalid manifest")
	// ErrVersion is wrapped when a manifest has another format version.
	ErrVersion = errors.New("unsupported manifest version")
	// ErrIncomplete is wrapped by Merge when parts are missing, repeated or
	// from ranks outside the job.
	ErrIncomplete = errors.New("incomplete checkpoint")
)

// File is one file of a checkpoint as written by its rank.
//
// Size and Hash are always those of the bytes the application wrote (its
// logical bytes), so that a restart proves it hands back exactly those. A
// file may be stored compressed (Codec, after an optional Filter; see
// internal/compress): then the object every tier holds, which redundancy
// encodes and flushes copy, is StoredSize bytes with content hash
// StoredHash. Stored gives the object's size and hash either way.
type File struct {
	Rank int    // rank that wrote (or, for parity, holds) the file
	Name string // file name, valid by ValidName, unique within the rank
	Size int64  // length in bytes, non-negative
	Hash Hash   // content hash: see ContentHasher (XXH3-128 over 1 MiB chunk hashes)

	Codec      string // "" when stored as written; else how it was compressed
	Filter     string // applied before Codec ("" for none); only with a Codec
	StoredSize int64  // with a Codec: the stored object's length
	StoredHash Hash   // with a Codec: the stored object's content hash
}

// Stored is the size and content hash of the object that holds f: f's
// own for a file stored as written, its compressed form's otherwise.
func (f File) Stored() (int64, Hash) {
	if f.Codec != "" {
		return f.StoredSize, f.StoredHash
	}
	return f.Size, f.Hash
}

// Part is one rank's contribution to a checkpoint.
type Part struct {
	Rank   int    // rank number in [0, Ranks)
	Node   string // node whose cache held the files at checkpoint time
	Set    int    // index of the rank's redundancy set in Meta.Sets
	Member int    // index of the rank within that set: Sets[Set][Member] == Rank
	Files  []File // the application's files, in the order the rank listed them
	Parity []File // redundancy data the rank holds for its set (none for SINGLE)
}

// Meta is everything in a manifest except the parts: what Merge needs
// besides the parts themselves.
type Meta struct {
	Name    string    // checkpoint name, valid by ValidName
	ID      uint64    // sequence number, ≥ 1, increasing from checkpoint to checkpoint
	Created time.Time // creation time; stored in UTC with nanoseconds
	Ranks   int       // number of ranks, ≥ 1
	Scheme  string    // redundancy scheme as text: "single", "partner", "xor:4", "rs:8+2"
	SetSize int       // nominal members per redundancy set, ≥ 1 (encoded as "n")
	M       int       // members a set can lose and still be rebuilt, 0 ≤ M < SetSize (encoded as "m")
	Sets    [][]int   // redundancy sets; they partition the ranks 0..Ranks-1
	Level   Level     // LevelCache or LevelShared
}

// Manifest describes one complete checkpoint. It is written last: a
// checkpoint without a valid manifest does not exist.
type Manifest struct {
	Version int // format version, Version
	Meta
	Parts []Part // one per rank, Parts[r].Rank == r
}

// Validate checks every rule of the format and returns the first broken one,
// wrapping ErrVersion or ErrInvalid and naming the offending value:
//
//   - the version is Version; the name is valid; ID ≥ 1; Created is set and
//     its year is in 1..9999;
//   - Ranks ≥ 1; Scheme is a non-empty printable label; SetSize ≥ 1; 0 ≤ M < SetSize;
//     Level is LevelCache or LevelShared;
//   - Sets partition the ranks 0..Ranks-1 and every set has more than M
//     members;
//   - there is one part per rank, in rank order; each names its node and its
//     place in Sets;
//   - every file (data or parity) carries its part's rank, a valid name unique
//     within the rank, and a non-negative size; a Codec and Filter are
//     printable labels, a Filter or stored size or hash only with a Codec,
//     a stored size non-negative, and parity is never compressed.
func (m *Manifest) Validate() error {
	if m.Version != Version {
		return fmt.Errorf("%w %d, this build reads version %d", ErrVersion, m.Version, Version)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	if err := ValidName(m.Name); err != nil {
		return fmt.Errorf("%w: checkpoint name: %w", ErrInvalid, err)
	}
	if m.ID == 0 {
		return bad("checkpoint %q has id 0; ids start at 1", m.Name)
	}
	if m.Created.IsZero() {
		return bad("no creation time")
	}
	if y := m.Created.UTC().Year(); y < 1 || y > 9999 {
		return bad("creation time %s is outside years 1 to 9999", m.Created.UTC().Format(time.RFC3339))
	}
	if m.Ranks < 1 {
		return bad("%d ranks, want at least 1", m.Ranks)
	}
	if err := validLabel("scheme", m.Scheme); err != nil {
		return bad("%v", err)
	}
	if m.SetSize < 1 {
		return bad("scheme %q: n = %d, want at least 1", m.Scheme, m.SetSize)
	}
	if m.M < 0 || m.M >= m.SetSize {
		return bad("scheme %q: m = %d, want 0 ≤ m < n = %d", m.Scheme, m.M, m.SetSize)
	}
	if m.Level != LevelCache && m.Level != LevelShared {
		return bad("level %q, want %q or %q", clip(string(m.Level)), LevelCache, LevelShared)
	}
	if len(m.Parts) != m.Ranks {
		return bad("%d ranks but %d parts", m.Ranks, len(m.Parts))
	}
	if err := m.validateSets(); err != nil {
		return err
	}
	for i := range m.Parts {
		if err := m.validatePart(i); err != nil {
			return err
		}
	}
	return nil
}

// validateSets checks that Sets partition 0..Ranks-1 (len(Parts) == Ranks
// has been checked, so Ranks is bounded by the size of the input).
func (m *Manifest) validateSets() error {
	if len(m.Sets) == 0 {
		return fmt.Errorf("%w: no redundancy sets", ErrInvalid)
	}
	setOf := make([]int, m.Ranks)
	for i := range setOf {
		setOf[i] = -1
	}
	for s, set := range m.Sets {
		if len(set) <= m.M {
			return fmt.Errorf("%w: set %d has %d members, not more than m = %d", ErrInvalid, s, len(set), m.M)
		}
		for _, r := range set {
			if r < 0 || r >= m.Ranks {
				return fmt.Errorf("%w: set %d: rank %d out of range [0, %d)", ErrInvalid, s, r, m.Ranks)
			}
			if setOf[r] >= 0 {
				return fmt.Errorf("%w: rank %d is in sets %d and %d", ErrInvalid, r, setOf[r], s)
			}
			setOf[r] = s
		}
	}
	if r := slices.Index(setOf, -1); r >= 0 {
		return fmt.Errorf("%w: rank %d is in no set", ErrInvalid, r)
	}
	return nil
}

// validatePart checks Parts[i]; Sets are valid.
func (m *Manifest) validatePart(i int) error {
	p := &m.Parts[i]
	if p.Rank != i {
		if p.Rank < 0 || p.Rank >= m.Ranks {
			return fmt.Errorf("%w: part %d: rank %d out of range [0, %d)", ErrInvalid, i, p.Rank, m.Ranks)
		}
		return fmt.Errorf("%w: part %d is rank %d; parts must be in rank order 0..%d", ErrInvalid, i, p.Rank, m.Ranks-1)
	}
	if err := validLabel("node", p.Node); err != nil {
		return fmt.Errorf("%w: rank %d: %v", ErrInvalid, p.Rank, err)
	}
	if p.Set < 0 || p.Set >= len(m.Sets) {
		return fmt.Errorf("%w: rank %d: set %d out of range [0, %d)", ErrInvalid, p.Rank, p.Set, len(m.Sets))
	}
	set := m.Sets[p.Set]
	if p.Member < 0 || p.Member >= len(set) {
		return fmt.Errorf("%w: rank %d: member %d out of range [0, %d) of set %d", ErrInvalid, p.Rank, p.Member, len(set), p.Set)
	}
	if set[p.Member] != p.Rank {
		return fmt.Errorf("%w: rank %d claims member %d of set %d, which is rank %d", ErrInvalid, p.Rank, p.Member, p.Set, set[p.Member])
	}
	seen := make(map[string]string, len(p.Files)+len(p.Parity))
	for _, list := range []struct {
		kind  string
		files []File
	}{{"file", p.Files}, {"parity file", p.Parity}} {
		for _, f := range list.files {
			if err := ValidName(f.Name); err != nil {
				return fmt.Errorf("%w: rank %d: %s: %w", ErrInvalid, p.Rank, list.kind, err)
			}
			if f.Rank != p.Rank {
				return fmt.Errorf("%w: rank %d: %s %q carries rank %d", ErrInvalid, p.Rank, list.kind, f.Name, f.Rank)
			}
			if f.Size < 0 {
				return fmt.Errorf("%w: rank %d: %s %q has negative size %d", ErrInvalid, p.Rank, list.kind, f.Name, f.Size)
			}
			if err := validStorage(f, list.kind == "parity file"); err != nil {
				return fmt.Errorf("%w: rank %d: %s %q: %v", ErrInvalid, p.Rank, list.kind, f.Name, err)
			}
			if prev, dup := seen[f.Name]; dup {
				return fmt.Errorf("%w: rank %d: %s %q repeats the name of a %s", ErrInvalid, p.Rank, list.kind, f.Name, prev)
			}
			seen[f.Name] = list.kind
		}
	}
	return nil
}

// validStorage checks a file's stored form (parity: a parity file).
func validStorage(f File, parity bool) error {
	if f.Codec == "" {
		if f.Filter != "" || f.StoredSize != 0 || f.StoredHash != (Hash{}) {
			return errors.New("a filter or stored form without a codec")
		}
		return nil
	}
	if parity {
		return errors.New("parity is never compressed")
	}
	if err := validLabel("codec", f.Codec); err != nil {
		return err
	}
	if f.Filter != "" {
		if err := validLabel("filter", f.Filter); err != nil {
			return err
		}
	}
	if f.StoredSize < 0 {
		return fmt.Errorf("negative stored size %d", f.StoredSize)
	}
	return nil
}

// Merge assembles the manifest of a checkpoint from the parts sent by its
// ranks, in any order, and meta. Every rank 0..meta.Ranks-1 must send exactly
// one part; otherwise the error wraps ErrIncomplete and lists the missing,
// repeated or out-of-range ranks. The result is then validated (errors wrap
// ErrInvalid). The manifest does not share memory with parts or meta.
func Merge(parts []Part, meta Meta) (*Manifest, error) {
	if meta.Ranks < 1 {
		return nil, fmt.Errorf("%w: %d ranks, want at least 1", ErrInvalid, meta.Ranks)
	}
	byRank := make([]int, meta.Ranks) // parts per rank
	for _, p := range parts {
		if p.Rank < 0 || p.Rank >= meta.Ranks {
			return nil, fmt.Errorf("%w: part from rank %d, out of range [0, %d)", ErrIncomplete, p.Rank, meta.Ranks)
		}
		if byRank[p.Rank]++; byRank[p.Rank] > 1 {
			return nil, fmt.Errorf("%w: rank %d sent more than one part", ErrIncomplete, p.Rank)
		}
	}
	var missing []int
	for r, c := range byRank {
		if c == 0 {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: no part from %s (%d of %d ranks missing)", ErrIncomplete, rankList(missing), len(missing), meta.Ranks)
	}

	m := &Manifest{Version: Version, Meta: meta, Parts: make([]Part, len(parts))}
	m.Sets = make([][]int, len(meta.Sets))
	for i, s := range meta.Sets {
		m.Sets[i] = slices.Clone(s)
	}
	for i, p := range parts {
		p.Files = slices.Clone(p.Files)
		p.Parity = slices.Clone(p.Parity)
		m.Parts[i] = p
	}
	slices.SortFunc(m.Parts, func(a, b Part) int { return cmp.Compare(a.Rank, b.Rank) })
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// rankList formats ranks as "rank 3" or "ranks 3, 7, 9", eliding after ten.
func rankList(ranks []int) string {
	if len(ranks) == 1 {
		return fmt.Sprintf("rank %d", ranks[0])
	}
	var b strings.Builder
	b.WriteString("ranks ")
	for i, r := range ranks {
		if i == 10 {
			b.WriteString(", …")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, r)
	}
	return b.String()
}
