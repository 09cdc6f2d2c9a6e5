package main

import (
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/torture"
)

// Where no sandbox can be made, --kinds all leaves the network and disk
// faults out, saying so; naming one is an error that says what is missing.
func TestTortureWithoutSandbox(t *testing.T) {
	none := func() string { return "needs root" }
	all, _ := torture.ParseKinds("all")
	kinds, unavailable, err := withSandbox(all, false, none)
	if err != nil || len(kinds) != len(all)-4 || len(unavailable) != 4 || unavailable[torture.DiskFull] != "needs root" {
		t.Fatalf("all without a sandbox: %v, %v, %v", kinds, unavailable, err)
	}
	for _, k := range kinds {
		if k.NeedsSandbox() {
			t.Fatalf("%s kept without a sandbox", k)
		}
	}
	_, _, err = withSandbox([]torture.Kind{torture.KillRank, torture.CutNode}, true, none)
	if err == nil || !strings.Contains(err.Error(), "cut-node") || !strings.Contains(err.Error(), "needs root") {
		t.Fatalf("cut-node named without a sandbox: %v", err)
	}
	// No sandbox kind selected: the machine is not even asked.
	asked := false
	kinds, unavailable, err = withSandbox([]torture.Kind{torture.KillRank}, true, func() string { asked = true; return "no" })
	if err != nil || len(kinds) != 1 || unavailable != nil || asked {
		t.Fatalf("kill-rank alone: %v, %v, %v (asked %v)", kinds, unavailable, err, asked)
	}
	// A sandbox: nothing is left out.
	kinds, unavailable, err = withSandbox(all, false, func() string { return "" })
	if err != nil || len(kinds) != len(all) || len(unavailable) != 0 {
		t.Fatalf("all with a sandbox: %v, %v, %v", kinds, unavailable, err)
	}
}
