package recovery

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every error about a malformed Input; the message
// names the offending value.
var ErrInvalid = errors.New("invalid restart input")

// State is what a check found of one object: a rank's data files, its
// parity file, a node's copy of a manifest, a rank's object on the shared
// tier.
type State uint8

const (
	// Unknown: not checked. Allowed only for shared-tier parts, which
	// Restart does not check before fetching (the fetch verifies).
	Unknown State = iota
	Intact        // present and its hash matches the manifest
	Corrupt       // present but unreadable or with a wrong hash
	Missing       // absent
)

func (s State) String() string {
	switch s {
	case Unknown:
		return "unknown"
	case Intact:
		return "intact"
	case Corrupt:
		return "corrupt"
	case Missing:
		return "missing"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Input is everything the restarted job knows about its checkpoints.
type Input struct {
	// Ranks is the number of ranks of the restarted job.
	Ranks int
	// Nodes[r] is the node rank r of the restarted job runs on: the node
	// whose cache it reads and where its lost files are rebuilt.
	Nodes []string
	// Checkpoints are the candidates, in any order: every checkpoint with
	// a valid manifest in a node's cache of the job or on the shared tier.
	// A candidate is identified by its name and ID together.
	Checkpoints []Checkpoint
	// Failed lists attempts of earlier plans that failed while the driver
	// carried them out (a rebuild that did not verify, a fetch that could
	// not read an object, a manifest that could not be written back).
	Failed []Failure
}

// Checkpoint is one candidate: what its manifest says and what the tiers
// hold of it.
type Checkpoint struct {
	Name   string
	ID     uint64
	Ranks  int      // ranks of the job that wrote it (manifest Ranks)
	Scheme string   // the manifest's scheme label, for messages: "xor:4", "rs:4+2"
	M      int      // members each set can lose and still be rebuilt (manifest M)
	Sets   [][]int  // redundancy sets (manifest Sets): they partition 0..Ranks-1
	Nodes  []string // Nodes[r]: the node whose cache held rank r's files when it was written (manifest Parts[r].Node)

	// Manifests is the state of the checkpoint's manifest in the cache of
	// each node of the restarted job; a node of the job not listed holds
	// none (Missing). The caches can offer the checkpoint only if at least
	// one node holds it Intact.
	Manifests map[string]State
	// Held[r] is what the cache of the node rank r runs on now holds of
	// rank r's files. nil means not checked yet: the plan then asks for
	// the check (Verify) when it needs it.
	Held []Held
	// Shared is the checkpoint's copy on the shared tier; nil if the tier
	// holds no manifest of it (or no tier is configured).
	Shared *Shared
}

// Held is what one rank's node holds of the rank's cached files.
type Held struct {
	Data   State  // the rank's application files, all of them
	Parity State  // its parity file; Intact if the scheme has no parity
	Why    string // optional: the check's own message, quoted in reasons
}

// ok reports whether the rank's cached copy is usable as it is.
func (h Held) ok() bool { return h.Data == Intact && h.Parity == Intact }

// Shared is a checkpoint's copy on the shared tier.
type Shared struct {
	// Parts[r] is rank r's object on the tier. nil (or Unknown entries)
	// means not checked: the fetch will find out.
	Parts []State
}

// Failure is an attempt the driver made and that failed.
type Failure struct {
	Name   string
	ID     uint64
	Action Action // UseCache or Rebuild (the caches failed), or Fetch (the shared tier failed)
	Reason string // what went wrong, as a human reads it
}

// inCache reports whether some node of the job holds a valid manifest.
func (c *Checkpoint) inCache() bool {
	for _, st := range c.Manifests {
		if st == Intact {
			return true
		}
	}
	return false
}

func (c *Checkpoint) label() string { return fmt.Sprintf("checkpoint %s (id %d)", c.Name, c.ID) }

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// validate checks every rule of the Input's documentation and returns the
// first broken one, naming the bad value.
func (in *Input) validate() error {
	if in.Ranks < 1 {
		return bad("the job has %d ranks, want at least 1", in.Ranks)
	}
	if len(in.Nodes) != in.Ranks {
		return bad("the job has %d ranks but %d node names", in.Ranks, len(in.Nodes))
	}
	jobNodes := map[string]bool{}
	for r, n := range in.Nodes {
		if n == "" {
			return bad("rank %d of the job runs on no node", r)
		}
		jobNodes[n] = true
	}
	type key struct {
		name string
		id   uint64
	}
	seen := map[key]*Checkpoint{}
	for i := range in.Checkpoints {
		c := &in.Checkpoints[i]
		if err := c.validate(in.Ranks, jobNodes); err != nil {
			return err
		}
		k := key{c.Name, c.ID}
		if seen[k] != nil {
			return bad("%s is listed twice", c.label())
		}
		seen[k] = c
	}
	for _, f := range in.Failed {
		c := seen[key{f.Name, f.ID}]
		switch {
		case c == nil:
			return bad("a failed attempt names checkpoint %s (id %d), which is not a candidate", f.Name, f.ID)
		case f.Action != UseCache && f.Action != Rebuild && f.Action != Fetch:
			return bad("a failed attempt on %s has action %v, want use-cache, rebuild or fetch", c.label(), f.Action)
		case f.Action == Fetch && c.Shared == nil:
			return bad("a failed fetch of %s, which is not on the shared tier", c.label())
		case f.Action != Fetch && !c.inCache():
			return bad("a failed %v of %s, which no node's cache holds", f.Action, c.label())
		case f.Reason == "":
			return bad("a failed %v of %s gives no reason", f.Action, c.label())
		}
	}
	return nil
}

func (c *Checkpoint) validate(jobRanks int, jobNodes map[string]bool) error {
	if c.Name == "" {
		return bad("a checkpoint (id %d) has no name", c.ID)
	}
	if c.ID == 0 {
		return bad("checkpoint %s has id 0; ids start at 1", c.Name)
	}
	if c.Ranks < 1 {
		return bad("%s has %d ranks, want at least 1", c.label(), c.Ranks)
	}
	if c.M < 0 {
		return bad("%s: %s tolerates %d lost members, want at least 0", c.label(), c.Scheme, c.M)
	}
	if len(c.Nodes) != c.Ranks {
		return bad("%s has %d ranks but %d node names", c.label(), c.Ranks, len(c.Nodes))
	}
	for r, n := range c.Nodes {
		if n == "" {
			return bad("%s: rank %d was on no node", c.label(), r)
		}
	}
	if err := c.validateSets(); err != nil {
		return err
	}
	for n, st := range c.Manifests {
		if !jobNodes[n] {
			return bad("%s: manifest state reported for node %q, which runs no rank of the job", c.label(), n)
		}
		if st != Intact && st != Corrupt && st != Missing {
			return bad("%s: manifest on node %s is %v, want intact, corrupt or missing", c.label(), n, st)
		}
	}
	if c.Held != nil {
		if c.Ranks != jobRanks {
			return bad("%s was written by %d ranks, but holdings are reported for it by a job of %d", c.label(), c.Ranks, jobRanks)
		}
		if len(c.Held) != c.Ranks {
			return bad("%s has %d ranks but holdings for %d", c.label(), c.Ranks, len(c.Held))
		}
		for r, h := range c.Held {
			for _, f := range []struct {
				what string
				st   State
			}{{"data", h.Data}, {"parity", h.Parity}} {
				if f.st != Intact && f.st != Corrupt && f.st != Missing {
					return bad("%s: rank %d's %s is %v, want intact, corrupt or missing", c.label(), r, f.what, f.st)
				}
			}
		}
		if !c.inCache() {
			return bad("%s: holdings are reported, but no node's cache holds its manifest", c.label())
		}
	}
	if c.Shared != nil && c.Shared.Parts != nil {
		if len(c.Shared.Parts) != c.Ranks {
			return bad("%s has %d ranks but %d shared-tier parts", c.label(), c.Ranks, len(c.Shared.Parts))
		}
		for r, st := range c.Shared.Parts {
			if st > Missing {
				return bad("%s: shared-tier part of rank %d is %v", c.label(), r, st)
			}
		}
	}
	return nil
}

// validateSets checks that Sets partition 0..Ranks-1 and that every set is
// larger than M (a set no larger than its parity count protects nothing).
func (c *Checkpoint) validateSets() error {
	if len(c.Sets) == 0 {
		return bad("%s has no redundancy sets", c.label())
	}
	setOf := make([]int, c.Ranks)
	for i := range setOf {
		setOf[i] = -1
	}
	for s, set := range c.Sets {
		if len(set) <= c.M {
			return bad("%s: set %d has %d members, %s needs more than %d", c.label(), s, len(set), c.Scheme, c.M)
		}
		for _, r := range set {
			switch {
			case r < 0 || r >= c.Ranks:
				return bad("%s: set %d holds rank %d, out of range [0, %d)", c.label(), s, r, c.Ranks)
			case setOf[r] == s:
				return bad("%s: set %d lists rank %d twice", c.label(), s, r)
			case setOf[r] >= 0:
				return bad("%s: rank %d is in sets %d and %d", c.label(), r, setOf[r], s)
			}
			setOf[r] = s
		}
	}
	for r, s := range setOf {
		if s < 0 {
			return bad("%s: rank %d is in no set", c.label(), r)
		}
	}
	return nil
}
