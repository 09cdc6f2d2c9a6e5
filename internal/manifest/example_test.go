package manifest_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ckpt/ckpt/internal/manifest"
)

func Example() {
	// Each rank describes its files; rank 0 gathers the parts.
	content := []string{"state of rank 0", "state of rank 1"}
	var parts []manifest.Part
	for r, c := range content {
		h, n, _ := manifest.HashReader(strings.NewReader(c))
		parts = append(parts, manifest.Part{
			Rank: r, Node: fmt.Sprintf("node%d", r), Set: 0, Member: r,
			Files: []manifest.File{{Rank: r, Name: "state", Size: n, Hash: h}},
		})
	}
	m, err := manifest.Merge(parts, manifest.Meta{
		Name: "step-100", ID: 1, Created: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		Ranks: 2, Scheme: "partner", N: 2, M: 1, Sets: [][]int{{0, 1}}, Level: manifest.LevelCache,
	})
	if err != nil {
		panic(err)
	}
	data, _ := manifest.Encode(m)
	fmt.Print(string(data))

	// Restart: decode, then verify each file while reading it.
	m, _ = manifest.Decode(data)
	f := m.Parts[1].Files[0]
	v := manifest.NewVerifyingReader(strings.NewReader("state of rank 1"), f.Name, f.Size, f.Hash)
	_, err = io.Copy(io.Discard, v)
	fmt.Println("intact:", err)
	v = manifest.NewVerifyingReader(strings.NewReader("state of rank X"), f.Name, f.Size, f.Hash)
	_, err = io.Copy(io.Discard, v)
	fmt.Println("damaged:", errors.Is(err, manifest.ErrCorrupt))
	// Output:
	// {
	//   "version": 1,
	//   "name": "step-100",
	//   "id": 1,
	//   "created": "2025-03-01T12:00:00Z",
	//   "ranks": 2,
	//   "scheme": "partner",
	//   "n": 2,
	//   "m": 1,
	//   "level": "cache",
	//   "sets": [
	//     [0,1]
	//   ],
	//   "parts": [
	//     {"rank":0,"node":"node0","set":0,"member":0,"files":[{"name":"state","size":15,"hash":"24037aa35ac087f9c51d626e36686781"}]},
	//     {"rank":1,"node":"node1","set":0,"member":1,"files":[{"name":"state","size":15,"hash":"9daaa1d7c55a313172c5c3a1908fcc7d"}]}
	//   ]
	// }
	// xxh3-128 ad1876d100bb72d765c6cef6ef41477c
	// intact: <nil>
	// damaged: true
}
