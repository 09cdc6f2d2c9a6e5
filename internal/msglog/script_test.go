package msglog

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/scripttest"
)

// TestScripts runs testdata/*.txt: one rank's receiver driven step by
// step, with its protector's log kept by the handler.
//
//	recv F:S ...        messages arrive (data "F:S"), in this order
//	persist [n=N]       the first N (default all) records given to
//	                    Persist become durable: appended, then Persisted
//	checkpoint          the rank checkpoints: its delivery point is saved
//	protected           the checkpoint is protected: Protected, truncate
//	crash               the rank fails: receiver and records in flight lost
//	restart             a new receiver from the checkpoint, BeginReplay
//	replay [n=N]        the next N (default all) log records to Replay
//	end-replay          EndReplay
//	corrupt index=I     a byte of log record I flips on the protector
//	log                 the protector's log
//	stats               the receiver's counters
func TestScripts(t *testing.T) {
	scripttest.Run(t, func(t *testing.T) func(*scripttest.Command) string {
		h := &scriptHandler{r: NewReceiver(Point{})}
		return h.handle
	})
}

type scriptHandler struct {
	r       *Receiver
	cp      Point
	log     []Record // the protector's log, from index base+1
	base    uint64
	pending []Record // given to Persist, not yet durable
	next    uint64   // the next log record a replay reads
	now     int64
}

func (h *scriptHandler) handle(c *scripttest.Command) string {
	var out strings.Builder
	arg := func(key string, def int) int {
		for _, a := range c.Args {
			if a.Key == key && len(a.Vals) == 1 {
				n, err := strconv.Atoi(a.Vals[0])
				if err != nil {
					panic(fmt.Sprintf("%s: %s=%s", c.Pos, key, a.Vals[0]))
				}
				return n
			}
		}
		return def
	}
	h.now++
	switch c.Name {
	case "recv":
		for _, a := range c.Args {
			var from int
			var seq uint64
			if _, err := fmt.Sscanf(a.Key, "%d:%d", &from, &seq); err != nil {
				return fmt.Sprintf("bad message %q", a.Key)
			}
			h.ready(&out, fmt.Sprintf("%s: ", a.Key), h.r.Receive(Msg{From: from, Seq: seq, Data: []byte(a.Key)}, h.dur()))
		}
	case "persist":
		n := min(arg("n", len(h.pending)), len(h.pending))
		if n == 0 {
			return "nothing to persist"
		}
		for _, rec := range h.pending[:n] {
			rec.Data = append([]byte(nil), rec.Data...)
			h.log = append(h.log, rec)
		}
		last := h.pending[n-1].Index
		h.pending = h.pending[n:]
		h.ready(&out, "", h.r.Persisted(last, h.dur()))
	case "checkpoint":
		h.cp = h.r.Point()
		fmt.Fprintf(&out, "point %s", pointString(h.cp))
	case "protected":
		h.ready(&out, "", h.r.Protected(h.cp))
	case "crash":
		fmt.Fprintf(&out, "lost %d records in flight", len(h.pending))
		h.r, h.pending = nil, nil
	case "restart":
		h.r = NewReceiver(h.cp.Clone())
		h.r.BeginReplay(h.dur())
		h.next = h.cp.Index + 1
		if h.next <= h.base {
			return fmt.Sprintf("log truncated to %d: records from %d are gone", h.base, h.next)
		}
		fmt.Fprintf(&out, "replaying from %d", h.next)
	case "replay":
		avail := int(h.base + uint64(len(h.log)) + 1 - h.next)
		for range min(arg("n", avail), avail) {
			rec := h.log[h.next-h.base-1]
			h.next++
			rd, err := h.r.Replay(rec, h.dur())
			if !rd.Empty() {
				h.ready(&out, "", rd)
			}
			if err != nil {
				fmt.Fprintf(&out, "error: %v\n", err)
				break
			}
		}
	case "end-replay":
		rd, err := h.r.EndReplay(h.dur())
		if !rd.Empty() || err == nil {
			h.ready(&out, "", rd)
		}
		if err != nil {
			fmt.Fprintf(&out, "error: %v\n", err)
		}
	case "corrupt":
		rec := &h.log[uint64(arg("index", 0))-h.base-1]
		rec.Data[0] ^= 0x20
	case "log":
		fmt.Fprintf(&out, "base %d: %s", h.base, ids(h.log))
	case "stats":
		st := h.r.Stats()
		fmt.Fprintf(&out, "logged %d (%d bytes), delivered %d, duplicates %d, replayed %d, truncated to %d, persist wait %d, replay time %d",
			st.RecordsLogged, st.BytesLogged, st.Delivered, st.Duplicates, st.Replayed, st.TruncatedTo, st.PersistWait, st.ReplayTime)
	default:
		return "unknown command " + c.Name
	}
	s := strings.TrimRight(out.String(), "\n")
	if s == "" {
		return "ok"
	}
	return s
}

// dur is the handler's logical clock: one unit per command.
func (h *scriptHandler) dur() time.Duration { return time.Duration(h.now) }

func (h *scriptHandler) ready(out *strings.Builder, prefix string, rd Ready) {
	h.pending = append(h.pending, rd.Persist...)
	var parts []string
	if len(rd.Persist) > 0 {
		parts = append(parts, "persist "+ids(rd.Persist))
	}
	if len(rd.Deliver) > 0 {
		parts = append(parts, "deliver "+ids(rd.Deliver))
	}
	if len(rd.Acks) > 0 {
		var a []string
		for _, ack := range rd.Acks {
			a = append(a, fmt.Sprintf("%d:%d", ack.To, ack.Seq))
		}
		parts = append(parts, "ack "+strings.Join(a, " "))
	}
	if rd.Truncate > 0 {
		h.log = h.log[rd.Truncate-h.base:]
		h.base = rd.Truncate
		parts = append(parts, fmt.Sprintf("truncate %d", rd.Truncate))
	}
	if len(parts) == 0 {
		parts = []string{"-"}
	}
	fmt.Fprintf(out, "%s%s\n", prefix, strings.Join(parts, "; "))
}

func pointString(p Point) string {
	var s []string
	for _, from := range sortedKeys(p.Seqs) {
		s = append(s, fmt.Sprintf("%d:%d", from, p.Seqs[from]))
	}
	return fmt.Sprintf("%d [%s]", p.Index, strings.Join(s, " "))
}
