package benchutil

import (
	"context"
	"fmt"
	"os"
	"time"
)

// settlePoll is how often WaitQuiet looks at the audit log.
const settlePoll = 250 * time.Millisecond

// quietLimit bounds WaitQuiet in case the log never settles.
const quietLimit = time.Minute

// WaitQuiet waits until the file at path (the audit log) has not grown for quiet, i.e. the
// audited client has stopped writing, bounded by a minute in case it never settles.
func WaitQuiet(ctx context.Context, path string, quiet time.Duration) error {
	deadline := time.Now().Add(quietLimit)
	lastSize, lastChange := int64(-1), time.Now()
	ticker := time.NewTicker(settlePoll)
	defer ticker.Stop()
	for {
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("watching audit log: %w", err)
		}
		if fi.Size() != lastSize {
			lastSize, lastChange = fi.Size(), time.Now()
		}
		if time.Since(lastChange) >= quiet || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}
