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
		h, n, _ := manifest.HashContent(strings.NewReader(c))
		parts = append(parts, manifest.Part{
			Rank: r, Node: fmt.Sprintf("node%d", r), Set: 0, Member: r,
			Files: []manifest.File{{Rank: r, Name: "state", Size: n, Hash: h}},
		})
	}
	m, err := manifest.Merge(parts, manifest.Meta{
		Name: "step-100", ID: 1, Created: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		Ranks: 2, Scheme: "partner", SetSize: 2, M: 1, Sets: [][]int{{0, 1}}, Level: manifest.LevelCache,
	})
	if err != nil {
		panic(err)
	}
	data, _ := manifest.Encode(m)
	fmt.Print(string(data))

	// Restart: decode, then verify each file while reading it.
	m, _ = manifest.Decode(data)
	f := m.Parts[1].Files[0]
	v := manifest.NewContentVerifyingReader(strings.NewReader("state of rank 1"), f.Name, f.Size, f.Hash)
	_, err = io.Copy(io.Discard, v)
	fmt.Println("intact:", err)
	v = manifest.NewContentVerifyingReader(strings.NewReader("state of rank X"), f.Name, f.Size, f.Hash)
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
	//     {"rank":0,"node":"node0","set":0,"member":0,"files":[{"name":"state","size":15,"hash":"1f0f946fd39ee536e7ea090ea58893ce"}]},
	//     {"rank":1,"node":"node1","set":0,"member":1,"files":[{"name":"state","size":15,"hash":"53566b262236a18881959a0d34c7bbaf"}]}
	//   ]
	// }
	// xxh3-128 6bd4ffa88c5c782112af534bf1312d0b
	// intact: <nil>
	// damaged: true
}
