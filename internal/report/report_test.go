package report

import (
	"encoding/json"
	"math"
	"testing"
)

func TestFloatRoundTrip(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{{1.5, "1.5"}, {0, "0"}, {1e21, "1e+21"}, {math.NaN(), "null"}, {math.Inf(1), "null"}, {math.Inf(-1), "null"}} {
		b, err := json.Marshal(struct{ X Float }{Float(c.in)})
		if err != nil || string(b) != `{"X":`+c.want+`}` {
			t.Errorf("%g: %s, %v; want %s", c.in, b, err, c.want)
		}
		if plain, _ := json.Marshal(c.in); !math.IsNaN(c.in) && !math.IsInf(c.in, 0) && string(plain) != c.want {
			t.Errorf("%g: a float64 writes %s, Float %s", c.in, plain, c.want)
		}
		var back struct{ X Float }
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if got := float64(back.X); got != c.in && !(math.IsNaN(got) && (math.IsNaN(c.in) || math.IsInf(c.in, 0))) {
			t.Errorf("%g: read back %g", c.in, got)
		}
	}
	var x Float
	if err := json.Unmarshal([]byte(`"x"`), &x); err == nil {
		t.Error("a string read as a number")
	}
}
