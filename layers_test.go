package ckpt

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/ckpt/ckpt"

// TestLayers holds the boundaries docs/ARCHITECTURE.md draws: the root is
// the public API over the engine, so no internal package imports it (the
// paths would call back into the API), and the root does not import the
// launcher (a rank needs only the contract, internal/jobenv).
func TestLayers(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the packages: %v", err)
	}
	out, err := exec.Command(goCmd, "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	seen := 0
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		seen++
		for _, imp := range p.Imports {
			switch {
			case strings.HasPrefix(p.ImportPath, module+"/internal/") && imp == module:
				t.Errorf("%s imports the module root: internal packages sit under the public API", p.ImportPath)
			case p.ImportPath == module && imp == module+"/internal/launch":
				t.Errorf("the root imports internal/launch: a rank reads the launcher's contract from internal/jobenv")
			case strings.HasPrefix(imp, module+"/cmd/"):
				t.Errorf("%s imports the command %s", p.ImportPath, imp)
			}
		}
	}
	if seen < 30 {
		t.Fatalf("go list listed %d packages: the check saw too little to mean anything", seen)
	}
}

// TestPublicAPIHasNoInternalTypes holds that what go doc shows of the root
// names no internal package: a program outside the module could not use or
// implement such a signature.
func TestPublicAPIHasNoInternalTypes(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed for go doc: %v", err)
	}
	out, err := exec.Command(goCmd, "doc", "-all", ".").Output()
	if err != nil {
		t.Fatalf("go doc: %v", err)
	}
	if !strings.Contains(string(out), "func Open(opts Options) (*Store, error)") {
		t.Fatalf("go doc -all . shows no Open: the check would see nothing\n%s", out)
	}
	for i, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "internal") {
			t.Errorf("go doc line %d names an internal package: %s", i+1, strings.TrimSpace(line))
		}
	}
}
