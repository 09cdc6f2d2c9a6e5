package transparent

import (
	"errors"
	"slices"
	"testing"
)

func TestMetaRoundTrip(t *testing.T) {
	for _, m := range []Meta{
		{Step: 40, Stdout: Stream{Offset: 120, Pipe: 9}, Stderr: Stream{Offset: 3, Pipe: 10}, Images: []string{"core-1.img", "pages-1.img"}, Compressed: []string{"pages-1.img"},
			Files: []OpenFile{{Path: "/data/log.txt", Size: 151}}},
		{Step: 80, Exited: true, ExitCode: 0, Stdout: Stream{Offset: 400}},
	} {
		b, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		got, err := UnmarshalMeta(b)
		if err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		m.Version = metaVersion
		if got.Step != m.Step || got.Exited != m.Exited || got.Stdout != m.Stdout || got.Stderr != m.Stderr || !slices.Equal(got.Images, m.Images) || !slices.Equal(got.Compressed, m.Compressed) || !slices.Equal(got.Files, m.Files) {
			t.Errorf("round trip of %+v gave %+v", m, got)
		}
	}
}

func TestMetaRejects(t *testing.T) {
	for name, b := range map[string]string{
		"not json":                 `{"version":1,`,
		"other version":            `{"version":2,"step":1,"stdout":{"pipe":1},"stderr":{"pipe":2},"images":["a.img"]}`,
		"negative step":            `{"version":1,"step":-1,"stdout":{"pipe":1},"stderr":{"pipe":2},"images":["a.img"]}`,
		"negative offset":          `{"version":1,"step":1,"stdout":{"offset":-5,"pipe":1},"stderr":{"pipe":2},"images":["a.img"]}`,
		"running, no image":        `{"version":1,"step":1,"stdout":{"pipe":1},"stderr":{"pipe":2}}`,
		"ended, images":            `{"version":1,"step":1,"exited":true,"images":["a.img"]}`,
		"no pipes":                 `{"version":1,"step":1,"images":["a.img"]}`,
		"meta as an image":         `{"version":1,"step":1,"stdout":{"pipe":1},"stderr":{"pipe":2},"images":["transparent.json"]}`,
		"relative open file":       `{"version":1,"step":1,"stdout":{"pipe":1},"stderr":{"pipe":2},"images":["a.img"],"files":[{"path":"log.txt","size":3}]}`,
		"negative file size":       `{"version":1,"step":1,"stdout":{"pipe":1},"stderr":{"pipe":2},"images":["a.img"],"files":[{"path":"/log.txt","size":-1}]}`,
		"compressed, not an image": `{"version":1,"step":1,"stdout":{"pipe":1},"stderr":{"pipe":2},"images":["a.img"],"compressed":["b.img"]}`,
	} {
		if _, err := UnmarshalMeta([]byte(b)); !errors.Is(err, ErrBadMeta) {
			t.Errorf("%s: %v, want ErrBadMeta", name, err)
		}
	}
}
