package devfleet

import (
	"context"
	"errors"
	"testing"
)

func TestLastUnlessDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if got := lastUnlessDone(ctx, "RayService Ready=False", errors.New("connection refused")); got != "connection refused" {
		t.Errorf("while polling: %q, want the read's error", got)
	}
	cancel()
	if got := lastUnlessDone(ctx, "RayService Ready=False", context.Canceled); got != "RayService Ready=False" {
		t.Errorf("after the poll's end: %q, want what was seen before", got)
	}
}
