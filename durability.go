package ckpt

import "fmt"

// Durability says what a checkpoint committed in a node's cache survives.
// Whatever the setting, a checkpoint appears only complete (files, parity,
// then the manifest, each written under a temporary name and renamed), and
// restart verifies every byte against the manifest, so a choice here trades
// how often a checkpoint can be lost, never whether wrong data is returned.
type Durability int

const (
	// DurableDefault takes CKPT_CACHE_DURABILITY, else DurableNode.
	DurableDefault Durability = iota
	// DurableNode syncs every file, parity file and manifest, and the
	// directory entries, before the checkpoint counts as committed: it
	// survives a crash or power loss of the node, and the node's cache is
	// usable when the node comes back.
	DurableNode
	// DurableProcess writes and renames without syncing: a committed
	// checkpoint survives the crash of the application's processes (the
	// kernel's page cache holds it), and a node that crashes counts as lost,
	// its files rebuilt from redundancy like those of a node that does not
	// come back (after a reboot they fail verification and are rebuilt).
	// This is how a cache on tmpfs behaves in any case, and what SCR does
	// with the files applications write; it saves the disk time of the
	// sync, which on a disk cache is most of a checkpoint's cost.
	DurableProcess
)

// String is the name ParseDurability accepts.
func (d Durability) String() string {
	switch d {
	case DurableDefault:
		return "default"
	case DurableNode:
		return "node"
	case DurableProcess:
		return "process"
	}
	return fmt.Sprintf("Durability(%d)", int(d))
}

// ParseDurability parses "node" or "process"; "" is DurableNode.
func ParseDurability(s string) (Durability, error) {
	switch s {
	case "", "node":
		return DurableNode, nil
	case "process":
		return DurableProcess, nil
	}
	return 0, fmt.Errorf("cache durability %q: want node (sync to disk: survives the node's crash) or process (page cache: survives the processes' crash)", s)
}
