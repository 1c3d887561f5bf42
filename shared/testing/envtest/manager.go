package envtest

import (
	"context"
	"sync"
	"testing"
)

// Starter is what RunManager runs: a controller-runtime or multicluster-runtime manager.
type Starter interface {
	// Start runs until ctx ends.
	Start(ctx context.Context) error
}

// RunManager starts mgr in the background and stops it, waiting for it to return, when the
// test ends or when the returned function is called (for a test that restarts its manager).
// A manager that fails to start fails the test.
func RunManager(t testing.TB, mgr Starter) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}
