package coordnet

import (
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/testwait"
)

// A call the loop took runs to its end before Do returns, even when the
// server closes meanwhile: Value's caller reads what the call wrote, and
// a Do that returned early raced with it (seen under -race while the
// launcher's tracker read a coordinator that was stopping).
func TestDoWaitsForTheCallWhileClosing(t *testing.T) {
	c := startCoord(t, coord.Config{Size: 1})
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free() // a failure must not leave the loop, and Close, waiting
	wrote := false
	ret := make(chan bool, 1)
	go func() {
		ret <- c.Do(func() {
			close(started)
			<-release
			wrote = true
		})
	}()
	testwait.Recv(t, started, "the loop to run the call")
	closed := make(chan struct{})
	go func() {
		c.Close()
		close(closed)
	}()
	select {
	case <-ret:
		t.Fatal("Do returned while its call was still running")
	case <-time.After(200 * time.Millisecond):
	}
	free()
	if ok := testwait.Recv(t, ret, "Do to return"); !ok || !wrote {
		t.Errorf("Do returned %v, the call's write seen %v: want true, true", ok, wrote)
	}
	testwait.Recv(t, closed, "Close to return")
}
